//! Event streams over the one event log, as the gateway serves them:
//!
//! - `GET /v1/runs/{runId}/events?after=<id>`: one run's events, ending
//!   after its terminal event (an unknown run is `not_found` first);
//! - `GET /v1/events?after=&sessionKey=&agentId=&types=a,b`: every event,
//!   filtered.
//!
//! Frames are `id: <id>\nevent: <type>\ndata: <envelope>\n\n`;
//! `Last-Event-ID` overrides `after`. A stream gives the backlog after its
//! cursor, then each event as it is logged (no gap, no duplicate), with a
//! heartbeat comment after 15 s of silence. [`Follow`] is the reader the
//! WebSocket subscriptions share. The queued `DropStream` and
//! `ExpireCursor` faults apply here.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionKey};
use talon_protocol::gateway::{ApiError, Scope, TicketRun, TicketStream};
use talon_protocol::{Event, EventType};
use tokio::sync::watch;

use super::http::{ErrorResponse, authenticate_stream, require};
use super::script::{cursor_expired, take_drop, take_expire};
use super::state::Shared;

/// An idle stream's heartbeat interval.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// How long a cut stream waits for its last frames to be written.
const CUT_GRACE: Duration = Duration::from_millis(50);

/// Which events a reader wants.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub run_id: Option<RunId>,
    pub session_key: Option<SessionKey>,
    pub agent_id: Option<AgentId>,
    pub types: Vec<EventType>,
}

impl Filter {
    fn matches(&self, event: &Event) -> bool {
        (self.run_id.is_none() || event.run_id == self.run_id)
            && (self.session_key.is_none() || event.session_key == self.session_key)
            && (self.agent_id.is_none() || event.agent_id == self.agent_id)
            && (self.types.is_empty() || self.types.contains(&event.kind))
    }
}

/// What a reader gives next.
pub(crate) enum Next {
    /// An event: its id, type and envelope JSON.
    Event(u64, &'static str, String),
    /// The `DropStream` fault: the connection is to be cut now.
    Cut,
}

/// A live reader of the log: the backlog after a cursor, then each event
/// as it is logged.
pub(crate) struct Follow {
    shared: Arc<Shared>,
    filter: Filter,
    cursor: u64,
    end_after_terminal: bool,
    /// Events it may still send before it is cut (`DropStream`).
    budget: Option<usize>,
    done: bool,
    changed: watch::Receiver<u64>,
    closing: watch::Receiver<bool>,
}

impl Follow {
    /// Starts after `cursor`; the queued faults for a new stream apply
    /// (`ExpireCursor` when it has a cursor, then `DropStream`).
    pub(crate) fn start(
        shared: &Arc<Shared>,
        filter: Filter,
        cursor: Option<u64>,
        end_after_terminal: bool,
    ) -> Result<Self, ApiError> {
        let budget = shared.write(|s| {
            if let Some(cursor) = cursor
                && take_expire(&mut s.faults)
            {
                return Err(cursor_expired(cursor));
            }
            Ok(take_drop(&mut s.faults))
        })?;
        Ok(Self {
            shared: shared.clone(),
            filter,
            cursor: cursor.unwrap_or(0),
            end_after_terminal,
            budget,
            done: false,
            changed: shared.watch(),
            closing: shared.closing.clone(),
        })
    }

    /// The next event, waiting for one; `None` when the stream is over
    /// (after a run's terminal event, or when the gateway shuts down).
    pub(crate) async fn next(&mut self) -> Option<Next> {
        loop {
            if self.done {
                return None;
            }
            if self.budget == Some(0) {
                self.done = true;
                return Some(Next::Cut);
            }
            self.changed.borrow_and_update();
            let found = self.shared.read(|s| {
                let from = usize::try_from(self.cursor).unwrap_or(usize::MAX);
                s.log
                    .iter()
                    .skip(from)
                    .find(|e| self.filter.matches(e))
                    .map(|e| {
                        let id = e.id.as_str().parse::<u64>().unwrap_or_default();
                        (
                            id,
                            e.kind.as_str(),
                            e.kind.is_terminal(),
                            serde_json::to_string(e).unwrap_or_default(),
                        )
                    })
            });
            if let Some((id, kind, terminal, json)) = found {
                self.cursor = id;
                if self.end_after_terminal && terminal {
                    self.done = true;
                }
                if let Some(budget) = &mut self.budget {
                    *budget -= 1;
                }
                return Some(Next::Event(id, kind, json));
            }
            if *self.closing.borrow() {
                self.done = true;
                return None;
            }
            tokio::select! {
                changed = self.changed.changed() => if changed.is_err() { self.done = true },
                closed = self.closing.changed() => if closed.is_err() { self.done = true },
            }
        }
    }
}

pub(crate) use talon_wire::query::{StreamQuery, TicketQuery, query};

/// One run's events.
pub(crate) async fn run_events(
    State(shared): State<Arc<Shared>>,
    Path(run_id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let opened = (|| {
        let query: StreamQuery = query(&uri)?;
        let this = TicketStream::Run(TicketRun {
            run_id: RunId::new(run_id.as_str()),
        });
        let (granted, _) =
            authenticate_stream(&shared, &headers, query.ticket.as_deref(), &|t| *t == this)?;
        require(&granted, Scope::SessionRead)?;
        shared.read(|s| s.run(&run_id).map(|_| ()))?;
        let filter = Filter {
            run_id: Some(RunId::new(run_id.clone())),
            ..Filter::default()
        };
        Follow::start(
            &shared,
            filter,
            talon_wire::stream_cursor(&headers, query.after.as_ref().map(|c| c.as_str()))?,
            true,
        )
    })();
    match opened {
        Ok(follow) => sse(follow),
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// Every event, filtered.
pub(crate) async fn all_events(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let opened = (|| {
        let query: StreamQuery = query(&uri)?;
        let (granted, ticket) =
            authenticate_stream(&shared, &headers, query.ticket.as_deref(), &|t| {
                matches!(t, TicketStream::Events(_))
            })?;
        require(&granted, Scope::SessionRead)?;
        let filter = match ticket {
            // A ticket's stream is the one it names, whatever the query says.
            Some(TicketStream::Events(named)) => Filter {
                run_id: None,
                session_key: named.session_key,
                agent_id: named.agent_id,
                types: named.types.unwrap_or_default(),
            },
            _ => Filter {
                run_id: None,
                session_key: query.session_key.clone(),
                agent_id: query.agent_id.clone(),
                types: talon_wire::event_types(query.types.iter().map(|t| t.as_str()))?,
            },
        };
        Follow::start(
            &shared,
            filter,
            talon_wire::stream_cursor(&headers, query.after.as_ref().map(|c| c.as_str()))?,
            false,
        )
    })();
    match opened {
        Ok(follow) => sse(follow),
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// What the body stream yields: a frame, or the cut.
type Chunk = Result<Bytes, std::io::Error>;

/// The SSE response of a reader.
fn sse(follow: Follow) -> Response {
    let frames = futures::stream::unfold(follow, |mut follow| async move {
        let next = tokio::select! {
            next = follow.next() => next,
            () = tokio::time::sleep(HEARTBEAT) => {
                return Some((Ok::<_, std::io::Error>(Bytes::from_static(b":\n\n")), follow));
            }
        };
        let chunk: Chunk = match next? {
            Next::Event(id, kind, json) => Ok(talon_wire::sse_event_frame(id, kind, &json)),
            Next::Cut => {
                // What was sent before reaches the socket first (hyper
                // flushes while the body is pending).
                tokio::time::sleep(CUT_GRACE).await;
                tracing::debug!("the fake gateway cuts a stream (DropStream)");
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "DropStream: the fake gateway cut the stream",
                ))
            }
        };
        Some((chunk, follow))
    });
    talon_wire::sse_response(Body::from_stream(frames))
}
