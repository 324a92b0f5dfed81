//! The surface's event streams: a run's committed events
//! ([`crate::transport::stream::Follow`]) through a projection into OpenAI's frames,
//! as SSE without `id:` lines, a heartbeat comment after
//! `sse_heartbeat_interval` of quiet, ended by the run's terminal event,
//! by an error, by the token's revocation, or by the node stopping. The
//! non-streamed forms fold the same events ([`drain`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use talon_protocol::events::Event;
use talon_protocol::openai::OpenAiError;
use tokio::time::{Instant, Sleep};

use crate::auth::identity::Caller;
use crate::state::Shared;
use crate::transport::stream::Follow;

/// A heartbeat: an SSE comment.
const HEARTBEAT: &[u8] = b": keep-alive\n\n";

/// Turns a run's events into frames.
pub(super) trait Project: Send + 'static {
    /// The frames one committed event makes (`id` its place in the log).
    fn event(&mut self, id: u64, event: &Event) -> Vec<Bytes>;
    /// Whether the run's terminal event was projected.
    fn ended(&self) -> bool;
    /// The frames after the terminal event.
    fn close(&mut self) -> Vec<Bytes>;
    /// The frame of an error that ends the stream.
    fn error(&mut self, error: &OpenAiError) -> Bytes;
}

/// The event a delivery carries.
pub(super) fn decode(json: &str) -> Result<Event, OpenAiError> {
    serde_json::from_str(json).map_err(|e| {
        OpenAiError::from(talon_protocol::gateway::ApiError::new(
            talon_protocol::gateway::ErrorCode::Internal,
            format!("a stored event did not decode: {e}"),
        ))
    })
}

/// Cancels a run its client left before the end: a call that is not in
/// the background and whose connection closed. Nobody will read its
/// answer, and the official clients retry a timed-out request as a new
/// run.
pub(super) struct Abandon {
    shared: Arc<Shared>,
    run_id: String,
    armed: bool,
}

impl Abandon {
    /// Armed until [`Abandon::disarm`].
    pub(super) fn new(shared: Arc<Shared>, run_id: &str) -> Self {
        Self {
            shared,
            run_id: run_id.to_owned(),
            armed: true,
        }
    }

    /// The client saw the run's end: nothing to cancel.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let shared = self.shared.clone();
        let run_id = std::mem::take(&mut self.run_id);
        tracing::info!(run = %run_id, "openai: the client left before the run's end; cancelling it");
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let cancelled = shared
                    .engine
                    .cancel(&run_id, talon_store::CancelMode::Cancel, std::time::Duration::ZERO)
                    .await;
                if let Err(error) = cancelled {
                    tracing::warn!(run = %run_id, %error.message, "openai: could not cancel an abandoned run");
                }
            });
        }
    }
}

struct Live<P> {
    follow: Follow,
    /// Cancels the run if the client goes before its end.
    abandon: Option<Abandon>,
    project: P,
    queue: VecDeque<Bytes>,
    liveness: crate::auth::revocation::Liveness,
    heartbeat: Pin<Box<Sleep>>,
    every: std::time::Duration,
    last_sent: Instant,
    done: bool,
    _open: crate::observe::metrics::Open,
}

impl<P: Project> Live<P> {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.queue.pop_front() {
                self.last_sent = Instant::now();
                return Some(frame);
            }
            if self.done {
                return None;
            }
            tokio::select! {
                biased;
                ended = self.liveness.ended() => {
                    self.done = true;
                    let error = OpenAiError::from(ended.error());
                    self.queue.push_back(self.project.error(&error));
                }
                next = self.follow.next() => match next {
                    None => self.done = true,
                    Some(Err(error)) => {
                        self.done = true;
                        let error = OpenAiError::from(error);
                        self.queue.push_back(self.project.error(&error));
                    }
                    Some(Ok(delivery)) => match decode(delivery.json()) {
                        Ok(event) => {
                            self.queue.extend(self.project.event(delivery.id(), &event));
                            if self.project.ended() {
                                self.done = true;
                                if let Some(abandon) = &mut self.abandon {
                                    abandon.disarm();
                                }
                                self.queue.extend(self.project.close());
                            }
                        }
                        Err(error) => {
                            self.done = true;
                            self.queue.push_back(self.project.error(&error));
                        }
                    },
                },
                () = self.heartbeat.as_mut() => {
                    let due = self.last_sent + self.every;
                    if Instant::now() >= due {
                        self.heartbeat.as_mut().reset(Instant::now() + self.every);
                        self.queue.push_back(Bytes::from_static(HEARTBEAT));
                    } else {
                        self.heartbeat.as_mut().reset(due);
                    }
                }
            }
        }
    }
}

/// Streams `first`, then the projection of the events `follow` reads.
pub(super) fn respond<P: Project>(
    shared: &Shared,
    caller: &Caller,
    follow: Follow,
    project: P,
    first: Vec<Bytes>,
    abandon: Option<Abandon>,
) -> Response {
    let every = shared.limiter.limits().sse_heartbeat_interval;
    let live = Live {
        follow,
        abandon,
        project,
        queue: first.into(),
        liveness: shared.revocations.watch(caller),
        heartbeat: Box::pin(tokio::time::sleep(every)),
        every,
        last_sent: Instant::now(),
        done: false,
        _open: shared
            .metrics
            .open(crate::observe::metrics::Connection::Sse),
    };
    let frames = futures::stream::unfold(live, |mut live| async move {
        let frame = live.next().await?;
        Some((Ok::<_, Infallible>(frame), live))
    });
    talon_wire::sse_response(Body::from_stream(frames))
}

/// Reads every event `follow` gives into `fold`, to the run's end: `false`
/// when the stream ended first (the node is stopping).
pub(super) async fn drain(
    follow: &mut Follow,
    mut fold: impl FnMut(u64, &Event) -> bool,
) -> Result<bool, OpenAiError> {
    while let Some(next) = follow.next().await {
        let delivery = next.map_err(OpenAiError::from)?;
        let event = decode(delivery.json())?;
        if fold(delivery.id(), &event) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One `data:` frame.
pub(super) fn data(json: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// One `event:` + `data:` frame.
pub(super) fn event(kind: &str, json: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: {kind}\ndata: {json}\n\n"))
}
