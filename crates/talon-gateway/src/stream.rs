//! Event streams as Server-Sent Events:
//!
//! - `GET /v1/runs/{runId}/events?after=<id>`: one run's events, ending
//!   after its terminal event;
//! - `GET /v1/events?after=<id>&sessionKey=&agentId=&types=a,b`: every
//!   event, filtered.
//!
//! `id:` is the event id, `event:` its type, `data:` the envelope, exactly
//! as stored (the JSON is never re-encoded). `Last-Event-ID` resumes right
//! after that event. Streams read the store (through the node's live tail,
//! [`crate::tail`], when their cursor is inside it), never a run's memory: every
//! event a subscriber sees is committed, a subscriber joining mid-run gets
//! the backlog then the live tail with no gap and no duplicate, and a slow
//! subscriber only slows itself (the body is pulled a page at a time as
//! the socket drains). Idle streams get a heartbeat comment every 15 s. A
//! cursor older than what the store keeps is `cursor_expired`: an HTTP
//! error before the stream starts, an `error` event if it happens during
//! one.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use talon_protocol::EventType;
use talon_protocol::gateway::{ApiError, ErrorCode, Method};
use talon_store::{EventFilter, RawEvent, Store};

use crate::error::api_error;
use crate::http::{ErrorResponse, Shared, caller};

/// Events read from the store per page.
const PAGE: u32 = 500;
/// How often a live stream looks for events other nodes committed.
const POLL: Duration = Duration::from_secs(1);
/// Heartbeat comments on idle streams.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// The query of a stream.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StreamQuery {
    after: Option<String>,
    session_key: Option<String>,
    agent_id: Option<String>,
    types: Option<String>,
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

/// The cursor: `Last-Event-ID` when sent, else `after`.
fn cursor(headers: &HeaderMap, query: &StreamQuery) -> Result<Option<u64>, ApiError> {
    let text = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query.after.clone());
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse::<u64>()
            .map(Some)
            .map_err(|_| invalid(format!("{text:?} is not an event id"))),
    }
}

/// One run's events.
pub(crate) async fn run_events(
    State(shared): State<Arc<Shared>>,
    Path(run_id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    let opened = async {
        let caller = caller(&shared, &headers).await?;
        caller.require(Method::RunsEvents.spec().scope)?;
        if shared
            .store
            .run(&run_id)
            .await
            .map_err(api_error)?
            .is_none()
        {
            return Err(ApiError::new(
                ErrorCode::NotFound,
                format!("run {run_id:?} not found"),
            ));
        }
        let filter = EventFilter {
            run_id: Some(run_id.clone()),
            raw: caller.is_admin(),
            ..EventFilter::default()
        };
        Ok((filter, cursor(&headers, &query)?))
    };
    match opened.await {
        Ok((filter, cursor)) => open(&shared, filter, cursor, true).await,
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// Every event the token may see, filtered.
pub(crate) async fn all_events(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    let opened = async {
        let caller = caller(&shared, &headers).await?;
        caller.require(Method::EventsSubscribe.spec().scope)?;
        let mut types = Vec::new();
        for name in query.types.iter().flat_map(|t| t.split(',')) {
            let name = name.trim();
            let kind: EventType = serde_json::from_value(serde_json::Value::String(name.into()))
                .map_err(|_| invalid(format!("unknown event type {name:?}")))?;
            if kind == EventType::Unknown {
                return Err(invalid(format!("unknown event type {name:?}")));
            }
            types.push(kind);
        }
        let filter = EventFilter {
            session_key: query.session_key.clone(),
            agent_id: query.agent_id.clone(),
            types,
            raw: caller.is_admin(),
            ..EventFilter::default()
        };
        Ok((filter, cursor(&headers, &query)?))
    };
    match opened.await {
        Ok((filter, cursor)) => open(&shared, filter, cursor, false).await,
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// A live reader of the store: the backlog after a cursor, then each
/// event as it commits, a page at a time. Shared by SSE and WebSocket
/// subscriptions.
pub(crate) struct Follow {
    store: Store,
    filter: EventFilter,
    cursor: Option<u64>,
    page: VecDeque<RawEvent>,
    committed: tokio::sync::watch::Receiver<u64>,
    tail: crate::tail::Follower,
    latest: tokio::sync::watch::Receiver<u64>,
    closing: tokio::sync::watch::Receiver<bool>,
    end_after_terminal: bool,
    done: bool,
    /// Its place among the gateway's open streams.
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Follow {
    /// Starts after `cursor`, reading the first page now, so that a bad
    /// cursor is an error before anything is sent.
    pub(crate) async fn start(
        shared: &Shared,
        filter: EventFilter,
        cursor: Option<u64>,
        end_after_terminal: bool,
    ) -> Result<Self, ApiError> {
        let permit = shared.limiter.stream()?;
        let store = &shared.store;
        let committed = store.committed();
        let first = store
            .after_json(cursor, &filter, PAGE)
            .await
            .map_err(api_error)?;
        Ok(Self {
            store: store.clone(),
            filter,
            cursor,
            page: first.into(),
            committed,
            latest: shared.tail.latest(),
            tail: shared.tail.follow(),
            closing: shared.closing.clone(),
            end_after_terminal,
            done: false,
            _permit: permit,
        })
    }

    /// The next event, waiting for one if need be; `None` when the stream
    /// is over (after a run's terminal event, or after an error).
    pub(crate) async fn next(&mut self) -> Option<Result<RawEvent, ApiError>> {
        loop {
            if self.done || *self.closing.borrow() {
                return None;
            }
            if let Some(event) = self.page.pop_front() {
                self.cursor = Some(event.id);
                if self.end_after_terminal && is_terminal(&event.kind) {
                    self.done = true;
                }
                return Some(Ok(event));
            }
            // Mark what has been seen before reading, so a commit between
            // the read and the wait still wakes the wait.
            self.committed.borrow_and_update();
            self.latest.borrow_and_update();
            // The live tail first: one read of the store serves every
            // subscriber it covers.
            if let Some((page, through)) = self.tail.after(self.cursor, &self.filter, PAGE as usize)
            {
                if page.is_empty() {
                    // Looked through: nothing of this stream's until `through`.
                    if through > self.cursor.unwrap_or(0) {
                        self.cursor = Some(through);
                    }
                    tokio::select! {
                        _ = tokio::time::timeout(POLL, self.latest.changed()) => {}
                        _ = self.closing.changed() => {}
                    }
                } else {
                    self.page = page.into();
                }
                continue;
            }
            match self.store.after_json(self.cursor, &self.filter, PAGE).await {
                Ok(page) if !page.is_empty() => self.page = page.into(),
                Ok(_) => {
                    tokio::select! {
                        _ = tokio::time::timeout(POLL, self.committed.changed()) => {}
                        _ = self.closing.changed() => {}
                    }
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(api_error(error)));
                }
            }
        }
    }
}

fn is_terminal(kind: &str) -> bool {
    serde_json::from_value::<EventType>(serde_json::Value::String(kind.to_owned()))
        .is_ok_and(EventType::is_terminal)
}

/// Reads the first page (so that a bad cursor is an HTTP error), then
/// streams.
async fn open(shared: &Shared, filter: EventFilter, cursor: Option<u64>, end: bool) -> Response {
    let follow = match Follow::start(shared, filter, cursor, end).await {
        Ok(follow) => follow,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let events = futures::stream::unfold(follow, |mut follow| async move {
        let event = match follow.next().await? {
            Ok(event) => SseEvent::default()
                .id(event.id.to_string())
                .event(event.kind)
                .data(event.json),
            Err(error) => SseEvent::default()
                .event("error")
                .data(serde_json::json!({"error": error}).to_string()),
        };
        Some((Ok::<_, Infallible>(event), follow))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(HEARTBEAT))
        .into_response()
}
