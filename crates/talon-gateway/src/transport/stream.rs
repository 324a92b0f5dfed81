//! Event streams as Server-Sent Events:
//!
//! - `GET /v1/runs/{runId}/events?after=<id>`: one run's events, ending
//!   after its terminal event;
//! - `GET /v1/events?after=<id>&sessionKey=&agentId=&types=a,b`: every
//!   event, filtered.
//!
//! `id:` is the event id, `event:` its type, `data:` the envelope, exactly
//! as stored (the JSON is never re-encoded; events from the live tail are
//! rendered once for all their subscribers, [`crate::frame`]). `Last-Event-ID` resumes right
//! after that event. Streams read the store (through the node's live tail,
//! [`crate::tail`], when their cursor is inside it), never a run's memory: every
//! event a subscriber sees is committed, a subscriber joining mid-run gets
//! the backlog then the live tail with no gap and no duplicate, and a slow
//! subscriber only slows itself (the body is pulled a page at a time as
//! the socket drains, [`PAGE_BYTES`] at a time). What a token's streams
//! hold read but unwritten is bounded by its byte budget
//! ([`crate::limits::Budget`]): a stream that waits on it past
//! `slow_reader_timeout` ends with `unavailable` (`slow_reader`) and its
//! reader resumes from its cursor. A stream idle for `sse_heartbeat_interval` (15 s)
//! gets a heartbeat comment; sending events resets no timer. A
//! cursor older than what the store keeps is `cursor_expired`: an HTTP
//! error before the stream starts, an `error` event if it happens during
//! one. A browser authenticates with `?ticket=` (from `tokens.ticket`)
//! instead of the header. Revoking the token, or its expiry, ends its
//! streams with an `error` event `unauthenticated`
//! ([`crate::auth::revocation`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionKey, Text};
use talon_protocol::gateway::{ApiError, Method, TicketRun, TicketStream};
use talon_store::{EventFilter, Store};
use tokio::time::{Instant, Sleep};

use crate::error::api_error;
use crate::frame::{self, Delivery};
use talon_wire::ErrorResponse;

use crate::auth::identity::Caller;
use crate::auth::stream_caller;
use crate::limits::{Budget, Held, StreamPermit};
use crate::state::Shared;

/// Events read from the store per page, at most.
const PAGE: u32 = 500;
/// Bytes of events read per page: past the first event, a page ends once
/// it holds this many.
pub(crate) const PAGE_BYTES: usize = 64 << 10;
/// How often a live stream looks for events other nodes committed, on a
/// store that does not announce every commit (PostgreSQL).
const POLL: Duration = Duration::from_secs(1);

/// The fallback poll: its deadline passes, and it moves [`POLL`] on;
/// never, on a store that announces every commit.
async fn polled(poll: &mut Option<Pin<Box<Sleep>>>) {
    match poll {
        Some(sleep) => {
            sleep.as_mut().await;
            sleep.as_mut().reset(Instant::now() + POLL);
        }
        None => std::future::pending().await,
    }
}

pub(crate) use talon_wire::query::{StreamQuery, TicketQuery, query};

/// One run's events.
pub(crate) async fn run_events(
    State(shared): State<Arc<Shared>>,
    Path(run_id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let opened = async {
        let query: StreamQuery = query(&uri)?;
        RunId::check(&run_id)
            .map_err(|e| talon_protocol::gateway::refuse::bad_run_id(&e.to_string()))?;
        let caller = stream_caller(&shared, &headers, query.ticket.as_deref()).await?;
        caller.may_open(&TicketStream::Run(TicketRun {
            run_id: RunId::new(run_id.as_str()),
        }))?;
        caller.require(Method::RunsEvents.spec().scope)?;
        crate::auth::owned::run_for(&shared.store, &caller, &run_id).await?;
        let filter = EventFilter {
            run_id: Some(run_id.clone()),
            raw: caller.is_admin(),
            ..EventFilter::default()
        };
        Ok((
            filter,
            talon_wire::stream_cursor(&headers, query.after.as_ref().map(|c| c.as_str()))?,
            caller,
        ))
    };
    match opened.await {
        Ok((filter, cursor, caller)) => {
            open(&shared, filter, cursor, Ends::AfterTerminal, &caller).await
        }
        Err(error) => ErrorResponse(error).into_response(),
    }
}

/// Every event the token may see, filtered.
pub(crate) async fn all_events(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let opened = async {
        let query: StreamQuery = query(&uri)?;
        let caller = stream_caller(&shared, &headers, query.ticket.as_deref()).await?;
        caller.require(Method::EventsSubscribe.spec().scope)?;
        let filter = match &caller.ticket {
            // A ticket's stream is the one it names, whatever the query says.
            Some(TicketStream::Events(named)) => EventFilter {
                session_key: named.session_key.clone().map(SessionKey::into_string),
                agent_id: named.agent_id.clone().map(AgentId::into_string),
                types: named.types.clone().unwrap_or_default(),
                raw: false,
                owner: caller.owner(),
                ..EventFilter::default()
            },
            Some(_) => {
                return Err(crate::auth::identity::ticket_refusal(
                    "this ticket opens another stream",
                ));
            }
            None => EventFilter {
                session_key: query.session_key.clone().map(SessionKey::into_string),
                agent_id: query.agent_id.clone().map(AgentId::into_string),
                types: talon_wire::event_types(query.types.iter().map(Text::as_str))?,
                raw: caller.is_admin(),
                owner: caller.owner(),
                ..EventFilter::default()
            },
        };
        Ok((
            filter,
            talon_wire::stream_cursor(&headers, query.after.as_ref().map(|c| c.as_str()))?,
            caller,
        ))
    };
    match opened.await {
        Ok((filter, cursor, caller)) => open(&shared, filter, cursor, Ends::Never, &caller).await,
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
    page: VecDeque<Sent>,
    committed: tokio::sync::watch::Receiver<u64>,
    tail: crate::tail::Follower,
    latest: tokio::sync::watch::Receiver<u64>,
    closing: tokio::sync::watch::Receiver<bool>,
    /// The fallback poll's deadline, moved only when it passes: a wait
    /// for the next commit registers no new timer.
    poll: Option<Pin<Box<Sleep>>>,
    ends: Ends,
    done: bool,
    /// What its token's events may hold unsent (none for the node's own
    /// followers).
    budget: Option<Budget>,
    /// Its place among the gateway's and its token's open streams (none
    /// for the node's own followers).
    _permit: Option<StreamPermit>,
}

/// An event read for a stream, holding its share of the token's byte
/// budget until the socket writer drops it.
pub(crate) struct Sent {
    pub(crate) event: Delivery,
    held: Option<Held>,
}

impl Sent {
    /// The SSE frame; the budget returns when the frame is dropped, once
    /// written.
    pub(crate) fn sse(self) -> Bytes {
        match self.held {
            Some(held) => Bytes::from_owner(Framed {
                frame: self.event.sse(),
                _held: held,
            }),
            None => self.event.sse(),
        }
    }

    /// The share of the budget, for a transport that writes the event
    /// in another form (the WebSocket's frame).
    pub(crate) fn into_held(self) -> (Delivery, Option<Held>) {
        (self.event, self.held)
    }
}

impl std::ops::Deref for Sent {
    type Target = Delivery;
    fn deref(&self) -> &Delivery {
        &self.event
    }
}

/// A frame and the budget it holds.
struct Framed {
    frame: Bytes,
    _held: Held,
}

impl AsRef<[u8]> for Framed {
    fn as_ref(&self) -> &[u8] {
        &self.frame
    }
}

impl Follow {
    /// Starts after `cursor`, reading the first page now, so that a bad
    /// cursor is an error before anything is sent.
    pub(crate) async fn start(
        shared: &Shared,
        caller: &Caller,
        filter: EventFilter,
        cursor: Option<u64>,
        ends: Ends,
    ) -> Result<Self, ApiError> {
        let permit = shared.limiter.stream(caller.holder())?;
        Self::start_with(shared, filter, cursor, ends, Some(permit)).await
    }

    /// [`Follow::start`] with a place among the open streams taken
    /// already, or none: the node's own followers (the OpenAI surface's
    /// approval watcher) are not clients' streams.
    pub(crate) async fn start_with(
        shared: &Shared,
        filter: EventFilter,
        cursor: Option<u64>,
        ends: Ends,
        permit: Option<StreamPermit>,
    ) -> Result<Self, ApiError> {
        let store = &shared.store;
        let committed = store.committed();
        let budget = permit.as_ref().map(|p| p.budget.clone());
        // The first page now if the budget has room; else the stream
        // opens (its cursor checked) and waits for room in `next`.
        let reserved = match &budget {
            Some(budget) => budget.try_take(budget.kib(PAGE_BYTES)).map(Some),
            None => Some(None),
        };
        let page = match reserved {
            Some(reserved) => {
                let first = store
                    .after_json_within(cursor, &filter, PAGE, PAGE_BYTES as u64)
                    .await
                    .map_err(api_error)?;
                hold(
                    budget.as_ref(),
                    reserved,
                    first.into_iter().map(Delivery::from).collect(),
                )
                .await?
            }
            None => {
                store.check_cursor(cursor).await.map_err(api_error)?;
                VecDeque::new()
            }
        };
        Ok(Self {
            store: store.clone(),
            filter,
            cursor,
            page,
            committed,
            latest: shared.tail.latest(),
            tail: shared.tail.follow(),
            closing: shared.closing.clone(),
            poll: (!store.announces_every_commit()).then(|| Box::pin(tokio::time::sleep(POLL))),
            ends,
            done: false,
            budget,
            _permit: permit,
        })
    }

    /// The next page from the store, its budget held.
    async fn read(&self) -> Result<VecDeque<Sent>, ApiError> {
        let reserved = reserve(self.budget.as_ref()).await?;
        let page = self
            .store
            .after_json_within(self.cursor, &self.filter, PAGE, PAGE_BYTES as u64)
            .await
            .map_err(api_error)?;
        hold(
            self.budget.as_ref(),
            reserved,
            page.into_iter().map(Delivery::from).collect(),
        )
        .await
    }

    /// The next event, waiting for one if need be; `None` when the stream
    /// is over (after a run's terminal event, or after an error).
    pub(crate) async fn next(&mut self) -> Option<Result<Sent, ApiError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(sent) = self.page.pop_front() {
                self.cursor = Some(sent.event.id());
                if self.ends == Ends::AfterTerminal && sent.event.is_terminal() {
                    self.done = true;
                }
                return Some(Ok(sent));
            }
            if *self.closing.borrow() {
                // The node is stopping, every run's last event committed:
                // send what is committed, then end.
                match self.read().await {
                    Ok(page) if !page.is_empty() => {
                        self.page = page;
                        continue;
                    }
                    Ok(_) => self.done = true,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
                continue;
            }
            // Mark what has been seen before reading, so a commit between
            // the read and the wait still wakes the wait.
            self.committed.borrow_and_update();
            self.latest.borrow_and_update();
            // The live tail first: one read of the store serves every
            // subscriber it covers.
            let reserved = match reserve(self.budget.as_ref()).await {
                Ok(reserved) => reserved,
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            };
            if let Some((page, through)) =
                self.tail
                    .after(self.cursor, &self.filter, PAGE as usize, PAGE_BYTES)
            {
                if page.is_empty() {
                    // Looked through: nothing of this stream's until
                    // `through`. An idle stream holds none of its token's
                    // budget while it waits.
                    drop(reserved);
                    if through > self.cursor.unwrap_or(0) {
                        self.cursor = Some(through);
                    }
                    tokio::select! {
                        _ = self.latest.changed() => {}
                        () = polled(&mut self.poll) => {}
                        _ = self.closing.changed() => {}
                    }
                } else {
                    match hold(self.budget.as_ref(), reserved, page).await {
                        Ok(page) => self.page = page,
                        Err(error) => {
                            self.done = true;
                            return Some(Err(error));
                        }
                    }
                }
                continue;
            }
            drop(reserved);
            // Where the tail begins, seen before the read: the read sees
            // every event up to it.
            let base = self.tail.base();
            match self.read().await {
                Ok(page) if !page.is_empty() => {
                    self.page = page;
                }
                Ok(_) => {
                    // Nothing of this stream's up to the tail's start: go on
                    // from there, from the tail, instead of reading the
                    // store again every poll (a stream whose events are
                    // rare, behind a busy log, would do so for ever).
                    if let Some(base) = base
                        && base > self.cursor.unwrap_or(0)
                    {
                        self.cursor = Some(base);
                        continue;
                    }
                    tokio::select! {
                        _ = self.committed.changed() => {}
                        () = polled(&mut self.poll) => {}
                        _ = self.closing.changed() => {}
                    }
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// Takes a page's worth of `budget` before the page is read, so that a
/// token whose frames wait unwritten reads nothing more.
async fn reserve(budget: Option<&Budget>) -> Result<Option<Held>, ApiError> {
    match budget {
        Some(budget) => budget.take(budget.kib(PAGE_BYTES)).await.map(Some),
        None => Ok(None),
    }
}

/// Gives each event of `page` its share of the budget: what `reserved`
/// holds, topped up (or given back) to what the page holds. A page over
/// the whole budget is cut to what fits (its first event always).
async fn hold(
    budget: Option<&Budget>,
    reserved: Option<Held>,
    mut page: Vec<Delivery>,
) -> Result<VecDeque<Sent>, ApiError> {
    let (Some(budget), Some(mut held)) = (budget, reserved) else {
        return Ok(page
            .into_iter()
            .map(|event| Sent { event, held: None })
            .collect());
    };
    if page.is_empty() {
        return Ok(VecDeque::new());
    }
    let capacity = budget.kib(usize::MAX);
    let mut shares = Vec::with_capacity(page.len());
    let mut need: u32 = 0;
    for event in &page {
        let share = budget.kib(event.size());
        if !shares.is_empty() && need + share > capacity {
            break;
        }
        need += share;
        shares.push(share);
    }
    page.truncate(shares.len());
    let have = u32::try_from(held.num_permits()).unwrap_or(u32::MAX);
    if need > have {
        held.merge(budget.take(need - have).await?);
    } else if let Some(surplus) = held.split((have - need) as usize) {
        drop(surplus);
    }
    // Each event splits its share off; the last keeps what remains.
    let last = shares.len() - 1;
    let mut rest = Some(held);
    let mut sent = VecDeque::with_capacity(page.len());
    for (i, (event, share)) in page.into_iter().zip(shares).enumerate() {
        let mine = if i == last {
            rest.take()
        } else {
            rest.as_mut().and_then(|held| held.split(share as usize))
        };
        sent.push_back(Sent { event, held: mine });
    }
    Ok(sent)
}

/// A stream's state: the reader, its heartbeat, and its token's
/// liveness.
struct Streaming {
    follow: Follow,
    liveness: crate::auth::revocation::Liveness,
    ended: bool,
    /// Fires `every` after the last frame sent; moved only when it fires.
    heartbeat: Pin<Box<Sleep>>,
    every: Duration,
    last_sent: Instant,
    /// Counted as an open stream while it lives.
    _open: crate::observe::metrics::Open,
}

impl Streaming {
    /// The next frame: an event, the error that ends the stream, or a
    /// heartbeat once the stream has been idle for `every`.
    async fn next(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        loop {
            tokio::select! {
                biased;
                ended = self.liveness.ended() => {
                    self.ended = true;
                    return Some(talon_wire::sse_error_frame(&ended.error()));
                }
                next = self.follow.next() => {
                    self.last_sent = Instant::now();
                    return Some(match next? {
                        Ok(sent) => sent.sse(),
                        Err(error) => talon_wire::sse_error_frame(&error),
                    });
                }
                () = self.heartbeat.as_mut() => {
                    let due = self.last_sent + self.every;
                    if Instant::now() >= due {
                        self.last_sent = Instant::now();
                        self.heartbeat.as_mut().reset(self.last_sent + self.every);
                        return Some(Bytes::from_static(frame::HEARTBEAT));
                    }
                    self.heartbeat.as_mut().reset(due);
                }
            }
        }
    }
}

/// When a stream ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// After its run's terminal event (a run's stream).
    AfterTerminal,
    /// Never: the caller closes it (the whole log, a session's).
    Never,
}

/// Reads the first page (so that a bad cursor is an HTTP error), then
/// streams.
async fn open(
    shared: &Shared,
    filter: EventFilter,
    cursor: Option<u64>,
    ends: Ends,
    caller: &Caller,
) -> Response {
    let follow = match Follow::start(shared, caller, filter, cursor, ends).await {
        Ok(follow) => follow,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let every = shared.limiter.limits().sse_heartbeat_interval;
    let streaming = Streaming {
        follow,
        liveness: shared.revocations.watch(caller),
        ended: false,
        heartbeat: Box::pin(tokio::time::sleep(every)),
        every,
        last_sent: Instant::now(),
        _open: shared
            .metrics
            .open(crate::observe::metrics::Connection::Sse),
    };
    let frames = futures::stream::unfold(streaming, |mut streaming| async move {
        let frame = streaming.next().await?;
        Some((Ok::<_, Infallible>(frame), streaming))
    });
    talon_wire::sse_response(Body::from_stream(frames))
}
