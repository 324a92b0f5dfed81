//! Server-Sent Events: [`EventStream`], the events of one HTTP event
//! stream, read with the shared decoder ([`Decoder`], re-exported from
//! `talon_protocol::sse`) capped at 64 MiB a frame. Frames are `id:`,
//! `event:`, `data:` lines ended by a blank line; comments (`:` lines, the
//! gateway's heartbeat) and frames with neither data nor id are skipped;
//! `event: error` carries the protocol's error and ends the stream. A
//! stream cut before its end yields one [`Error::Transport`].

use std::pin::Pin;
use std::task::{Context, Poll};
use talon_protocol::gateway::bounded::EventId;

use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use talon_protocol::gateway::ApiError;
pub use talon_protocol::sse::{Decoder, Frame};
use talon_protocol::{Event, EventType};

use crate::error::{Error, Result};

/// The largest frame accepted; a longer one ends the stream.
const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Filters of [`crate::Client::stream_events`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamQuery {
    /// Only this session's events.
    pub session_key: Option<String>,
    /// Only this agent's events.
    pub agent_id: Option<String>,
    /// Only these types (all when empty).
    pub types: Vec<EventType>,
}

/// The events of one stream, in order. See [`crate::Client::stream_run_events`].
pub struct EventStream {
    inner: BoxStream<'static, Result<Event>>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

struct State {
    bytes: BoxStream<'static, Result<Bytes>>,
    decoder: Decoder,
    ends_with_run: bool,
    terminal_seen: bool,
    done: bool,
}

impl EventStream {
    pub(crate) fn new(bytes: BoxStream<'static, Result<Bytes>>, ends_with_run: bool) -> Self {
        let state = State {
            bytes,
            decoder: Decoder::new(MAX_FRAME),
            ends_with_run,
            terminal_seen: false,
            done: false,
        };
        let inner = futures::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        });
        Self {
            inner: Box::pin(inner),
        }
    }
}

impl State {
    async fn next(&mut self) -> Option<Result<Event>> {
        use futures::StreamExt as _;
        loop {
            if self.done {
                return None;
            }
            if let Some(frame) = self.decoder.next_frame() {
                if frame.data.is_none() && frame.id.is_none() {
                    continue;
                }
                let item = self.decode(frame);
                if item.is_err() {
                    self.done = true;
                }
                return Some(item);
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => {
                    if let Err(error) = self.decoder.push(&chunk) {
                        self.done = true;
                        return Some(Err(Error::malformed(
                            "an event stream",
                            format!("a frame exceeds {} bytes", error.max),
                        )));
                    }
                }
                Some(Err(error)) => {
                    self.done = true;
                    return Some(Err(error));
                }
                None => {
                    self.done = true;
                    if self.ends_with_run && self.terminal_seen {
                        return None;
                    }
                    return Some(Err(Error::transport(
                        "the event stream was cut off (resume after the last event id)",
                    )));
                }
            }
        }
    }

    fn decode(&mut self, frame: Frame) -> Result<Event> {
        if frame.event.as_deref() == Some("error") {
            #[derive(serde::Deserialize)]
            struct Envelope {
                error: ApiError,
            }
            return match serde_json::from_str::<Envelope>(frame.data.as_deref().unwrap_or("")) {
                Ok(envelope) => Err(Error::Api(envelope.error)),
                Err(e) => Err(Error::decode("an error event", e)),
            };
        }
        let data = frame.data.as_deref().unwrap_or("");
        let mut event: Event =
            serde_json::from_str(data).map_err(|e| Error::decode("an event", e))?;
        if let Some(id) = frame.id
            && !id.is_empty()
        {
            event.id = EventId::new(id);
        }
        if event.kind.is_terminal() {
            self.terminal_seen = true;
        }
        Ok(event)
    }
}

impl Stream for EventStream {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

    fn stream_of(chunks: &[&'static str], ends_with_run: bool) -> EventStream {
        let chunks: Vec<Result<Bytes>> = chunks
            .iter()
            .map(|c| Ok(Bytes::from_static(c.as_bytes())))
            .collect();
        EventStream::new(futures::stream::iter(chunks).boxed(), ends_with_run)
    }

    const STARTED: &str = "id: 1\nevent: run.started\ndata: {\"version\":1,\"id\":\"1\",\"ts\":5,\"type\":\"run.started\",\"data\":{}}\n\n";

    #[tokio::test]
    async fn frames_split_anywhere_and_heartbeats_are_skipped() {
        let (a, b) = STARTED.split_at(17);
        let done = "id: 2\r\nevent: run.completed\r\ndata: {\"version\":1,\"id\":\"2\",\"ts\":6,\"type\":\"run.completed\",\"data\":{}}\r\n\r\n";
        let events: Vec<_> = stream_of(&[":\n\n", a, b, done], true).collect().await;
        let kinds: Vec<_> = events
            .into_iter()
            .map(|e| e.map(|e| (e.id, e.kind)).map_err(|e| e.to_string()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                Ok((EventId::new("1"), EventType::RunStarted)),
                Ok((EventId::new("2"), EventType::RunCompleted))
            ]
        );
    }

    fn frames_of(chunks: &[&[u8]]) -> Vec<Frame> {
        let mut decoder = Decoder::new(MAX_FRAME);
        let mut frames = Vec::new();
        for chunk in chunks {
            decoder.push(chunk).unwrap();
            while let Some(frame) = decoder.next_frame() {
                frames.push(frame);
            }
        }
        frames
    }

    #[test]
    fn any_split_of_the_bytes_gives_the_same_frames() {
        let text = format!(":hb\n\n{STARTED}id: 9\ndata: a\ndata: b\n\n\n\nevent: x\n\n");
        let bytes = text.as_bytes();
        let whole = frames_of(&[bytes]);
        // A frame without data or id (the last) is not an event: the
        // stream skips it.
        assert_eq!(whole.len(), 3);
        assert_eq!(
            whole[1],
            Frame {
                id: Some("9".into()),
                data: Some("a\nb".into()),
                ..Frame::default()
            }
        );
        assert_eq!((whole[2].data.as_ref(), whole[2].id.as_ref()), (None, None));
        for i in 0..bytes.len() {
            for j in i..bytes.len() {
                let split = frames_of(&[&bytes[..i], &bytes[i..j], &bytes[j..]]);
                assert_eq!(split, whole, "split at {i} and {j}");
            }
        }
    }

    #[tokio::test]
    async fn a_frame_that_never_ends_is_refused_past_the_cap() {
        let chunk = Bytes::from(vec![b'x'; 1 << 20]);
        let chunks = (0..80).map(move |_| Ok(chunk.clone()));
        let stream = EventStream::new(futures::stream::iter(chunks).boxed(), true);
        let items: Vec<_> = stream.collect().await;
        assert_eq!(items.len(), 1);
        let error = items.into_iter().next().unwrap().unwrap_err();
        assert!(matches!(error, Error::Decode { .. }), "{error:?}");
        assert!(error.to_string().contains("a frame exceeds 67108864 bytes"));
    }

    #[tokio::test]
    async fn a_cut_and_an_error_event_end_the_stream_with_an_error() {
        let cut: Vec<_> = stream_of(&[STARTED], true).collect().await;
        assert_eq!(cut.len(), 2);
        assert!(matches!(cut[1], Err(Error::Transport { .. })));
        let expired = "event: error\ndata: {\"error\":{\"code\":\"cursor_expired\",\"message\":\"gone\",\"retryable\":false}}\n\n";
        let errored: Vec<_> = stream_of(&[expired, STARTED], true).collect().await;
        assert_eq!(errored.len(), 1);
        assert_eq!(
            errored[0].as_ref().err().and_then(Error::code),
            Some(talon_protocol::gateway::ErrorCode::CursorExpired)
        );
        let garbage: Vec<_> = stream_of(&["data: {not json\n\n", STARTED], true)
            .collect()
            .await;
        assert!(matches!(garbage.as_slice(), [Err(Error::Decode { .. })]));
    }
}
