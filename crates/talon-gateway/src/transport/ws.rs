//! The WebSocket transport, `GET /v1/ws`: the same calls as frames, and
//! event subscriptions.
//!
//! - `{"type":"req","id":..,"method":..,"params":..}` is answered by
//!   `{"type":"res","id":..,"ok":true,"result":..}` or
//!   `{"type":"res","id":..,"ok":false,"error":{..}}`, through the same
//!   path as `POST /v1/<method>` (scope, strict params, dispatch). Calls
//!   run concurrently; answers may come in any order (match them by `id`).
//! - `events.subscribe` (`after`, `sessionKey`, `agentId`, `types`) answers
//!   `{subscriptionId}`, then sends
//!   `{"type":"event","subscriptionId":..,"event":{..}}` frames with the
//!   same envelopes and ids as SSE (the stored JSON, not re-encoded);
//!   `events.unsubscribe` ends one.
//!
//! The token comes with the upgrade request (`Authorization: Bearer`), or,
//! from a browser (which cannot set that header), as the first frame,
//! `{"type":"auth","token":..}`, within `header_read_timeout`, answered
//! `{"type":"authenticated"}`; a signed-in dashboard's frame may carry an
//! empty token, its cookie's standing in ([`crate::auth::browser`]) (a
//! missing or refused one closes the socket
//! with 4003, a token over its requests in flight with 4029). A
//! `tokens.ticket` ticket as `?ticket=` opens a socket that may only
//! subscribe with the filter its ticket names (`{"socket": {..}}`) and
//! unsubscribe. An upgrade from a foreign `Origin` is refused before this
//! ([`crate::auth::guard`]). When the
//! token is revoked or expires, the connection closes with code
//! [`crate::auth::revocation::CLOSE_REVOKED`] (4001) or
//! [`crate::auth::revocation::CLOSE_EXPIRED`] (4002). A
//! frame that is not a request (not JSON, binary, no `id`) gets an
//! `invalid_request` answer with a null id and the connection stays; a
//! frame over the size limit closes it. A slow reader only slows its own
//! subscriptions: each waits for room in the connection's bounded queue.
//! The gateway pings every `ws_ping_interval`; a connection from which
//! nothing arrives for two intervals (a vanished peer, or one that stopped
//! reading and so never answers) is closed, and the client resumes its
//! subscriptions by cursor.

use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::SessionKey;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use talon_protocol::gateway::params::EventsSubscribeParams;
use talon_protocol::gateway::{ApiError, Method, TicketStream};
use talon_store::EventFilter;
use tokio::sync::mpsc;

use talon_wire::ws::{Incoming, Started, Subscriptions, answer, event_frame, incoming};

use talon_wire::ErrorResponse;

use crate::auth::identity::Caller;
use crate::auth::stream_caller;
use crate::call::serve_call;
use crate::state::Shared;
use crate::transport::stream::{Follow, TicketQuery};

/// Frames waiting to be written, per connection.
const OUTBOX: usize = 256;

/// A frame waiting to be written, with the share of its token's stream
/// budget an event's frame holds until it is written.
struct Outgoing {
    text: String,
    _held: Option<crate::limits::Held>,
}

impl From<String> for Outgoing {
    fn from(text: String) -> Self {
        Self { text, _held: None }
    }
}

/// Upgrades an authenticated request.
pub(crate) async fn upgrade(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    cookie: Option<axum::Extension<crate::auth::browser::FromCookie>>,
    ws: WebSocketUpgrade,
) -> Response {
    // A signed-in dashboard's socket authenticates in its first frame too
    // (as every browser's does), its token empty: the cookie's stands in.
    let cookie = cookie.map(|axum::Extension(c)| c.0);
    let authenticated = async {
        let query: TicketQuery = crate::transport::stream::query(&uri)?;
        if query.ticket.is_none()
            && (cookie.is_some() || !headers.contains_key(axum::http::header::AUTHORIZATION))
        {
            // Credentials come in the first frame.
            return Ok(None);
        }
        let caller = stream_caller(&shared, &headers, query.ticket.as_deref()).await?;
        if let Some(stream) = &caller.ticket
            && !matches!(stream, TicketStream::Socket(_))
        {
            return Err(crate::auth::identity::ticket_refusal(
                "this ticket opens another stream",
            ));
        }
        // The socket is one of its token's requests while it is open.
        let in_flight = shared.limiter.request(caller.holder())?;
        Ok(Some((caller, in_flight)))
    };
    let authenticated = match authenticated.await {
        Ok(authenticated) => authenticated,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let limit = shared.limiter.limits().max_body_bytes;
    let request_id = crate::observe::request_id().unwrap_or_default();
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |mut socket| async move {
            let (caller, in_flight) = match authenticated {
                Some(authenticated) => authenticated,
                None => match first_frame(&shared, &mut socket, cookie).await {
                    Some(authenticated) => authenticated,
                    None => return,
                },
            };
            connection(shared, caller, socket, request_id).await;
            drop(in_flight);
        })
}

/// Reads a socket's `auth` frame and authenticates its token; closes the
/// socket, saying why, when it does not come in time or is refused.
async fn first_frame(
    shared: &Shared,
    socket: &mut WebSocket,
    cookie: Option<String>,
) -> Option<(Caller, crate::limits::RequestPermit)> {
    let deadline = shared.limiter.limits().header_read_timeout;
    let token = match tokio::time::timeout(deadline, socket.recv()).await {
        Ok(Some(Ok(Message::Text(text)))) => talon_wire::ws::auth_token(text.as_str()),
        _ => None,
    };
    let token = match (token, cookie) {
        (Some(token), Some(cookie)) if token.is_empty() => Some(cookie),
        (token, _) => token,
    };
    let authenticated = async {
        let Some(token) = token else {
            return Err((
                talon_wire::ws::CLOSE_UNAUTHENTICATED,
                "the first frame must be {\"type\":\"auth\",\"token\":..}".to_owned(),
            ));
        };
        let bearer = format!("Bearer {token}");
        let caller =
            crate::auth::tokens::authenticate(&shared.store, Some(&bearer), shared.store.now_ms())
                .await
                .map_err(|e| (talon_wire::ws::CLOSE_UNAUTHENTICATED, e.message))?;
        crate::observe::authenticated(&caller);
        let in_flight = shared
            .limiter
            .take(&caller.token_id)
            .and_then(|()| shared.limiter.request(caller.holder()))
            .map_err(|e| (talon_wire::ws::CLOSE_LIMITED, e.message))?;
        Ok((caller, in_flight))
    };
    match authenticated.await {
        Ok(authenticated) => {
            let sent = socket
                .send(Message::Text(talon_wire::ws::AUTHENTICATED.into()))
                .await;
            sent.is_ok().then_some(authenticated)
        }
        Err((code, reason)) => {
            // A close reason is at most 123 bytes.
            let reason: String = reason.chars().take(100).collect();
            let _ = socket
                .send(Message::Close(Some(CloseFrame {
                    code,
                    reason: reason.into(),
                })))
                .await;
            None
        }
    }
}

async fn connection(shared: Arc<Shared>, caller: Caller, socket: WebSocket, request_id: String) {
    use futures::{SinkExt as _, StreamExt as _};
    let _open = shared
        .metrics
        .open(crate::observe::metrics::Connection::WebSocket);
    let request_id: Arc<str> = request_id.into();
    let (mut sink, mut frames) = socket.split();
    let (outbox, mut queued) = mpsc::channel::<Outgoing>(OUTBOX);
    let (closer, mut close) = tokio::sync::oneshot::channel::<CloseFrame>();
    let ping_every = shared.limiter.limits().ws_ping_interval;
    let writer = tokio::spawn(async move {
        let mut ping =
            tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
        let mut closed = false;
        loop {
            let message = tokio::select! {
                biased;
                frame = &mut close, if !closed => {
                    closed = true;
                    match frame {
                        Ok(frame) => {
                            let _ = sink.send(Message::Close(Some(frame))).await;
                            break;
                        }
                        // No close to send: the frames queued go first.
                        Err(_) => continue,
                    }
                }
                // The frame's budget returns once it is written.
                outgoing = queued.recv() => match outgoing {
                    Some(outgoing) => {
                        let sent = sink.send(Message::Text(outgoing.text.into())).await;
                        drop(outgoing._held);
                        if sent.is_err() {
                            break;
                        }
                        continue;
                    }
                    None => break,
                },
                _ = ping.tick() => Message::Ping(Default::default()),
            };
            if sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut liveness = shared.revocations.watch(&caller);
    let mut closer = Some(closer);
    let caller = Arc::new(caller);
    let mut subscriptions = Subscriptions::default();
    let mut closing = shared.closing.clone();
    loop {
        let frame = tokio::select! {
            // Nothing, not even the pong to a ping, for two intervals:
            // the peer is gone or stopped reading.
            frame = tokio::time::timeout(2 * ping_every, frames.next()) => match frame {
                Ok(frame) => frame,
                Err(_) => {
                    tracing::debug!("a WebSocket peer stopped answering pings; closing it");
                    None
                }
            },
            // The gateway shuts down: the connection ends.
            _ = closing.wait_for(|closing| *closing) => None,
            // The token was revoked or expired: the connection closes,
            // saying which.
            ended = liveness.ended() => {
                let (code, reason) = ended.close();
                tracing::debug!(code, reason, "closing a WebSocket whose token ended");
                if let Some(closer) = closer.take() {
                    let _ = closer.send(CloseFrame { code, reason: reason.into() });
                }
                None
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let (id, method, params, len) = match incoming(frame) {
            Incoming::Request(request, len) => (request.id, request.method, request.params, len),
            Incoming::Refused(id, error) => {
                let _ = outbox.send(answer(&id, Err(error)).into()).await;
                continue;
            }
            Incoming::Control => continue,
            Incoming::End => break,
        };
        let metered = shared
            .limiter
            .take(&caller.token_id)
            .and_then(|()| shared.limiter.take_bytes(&caller.token_id, &method, len));
        if let Err(error) = metered {
            let _ = outbox.send(answer(&id, Err(error)).into()).await;
            continue;
        }
        match method.as_str() {
            "events.subscribe" => {
                let started = std::time::Instant::now();
                let subscribed =
                    subscribe(&shared, &caller, params, &outbox, &mut subscriptions).await;
                let code = subscribed.as_ref().err().map(|e| e.code);
                crate::observe::access::ws_called(
                    &shared,
                    &request_id,
                    &caller,
                    &id,
                    &method,
                    started,
                    code,
                );
                match subscribed {
                    Ok(started) => {
                        // The answer naming it goes out before its events.
                        let named = subscriptions.name(&id, started);
                        let _ = outbox.send(named.answer.clone().into()).await;
                        named.go();
                    }
                    Err(error) => {
                        let _ = outbox.send(answer(&id, Err(error)).into()).await;
                    }
                }
            }
            "events.unsubscribe" => {
                let started = std::time::Instant::now();
                let outcome = caller
                    .require(Method::EventsUnsubscribe.spec().scope)
                    .and_then(|()| subscriptions.unsubscribe(params));
                let code = outcome.as_ref().err().map(|e| e.code);
                crate::observe::access::ws_called(
                    &shared,
                    &request_id,
                    &caller,
                    &id,
                    &method,
                    started,
                    code,
                );
                let _ = outbox.send(answer(&id, outcome).into()).await;
            }
            _ => {
                let shared = shared.clone();
                let caller = caller.clone();
                let outbox = outbox.clone();
                let request_id = request_id.clone();
                tokio::spawn(async move {
                    let served = async {
                        match crate::auth::tokens::still_live(&shared.store, &caller).await {
                            Ok(()) => serve_call(&shared, &caller, &method, params).await,
                            Err(error) => Err(error),
                        }
                    };
                    let outcome = crate::observe::access::ws_call(
                        &shared,
                        &request_id,
                        &caller,
                        &id,
                        &method,
                        served,
                    )
                    .await;
                    let _ = outbox.send(answer(&id, outcome).into()).await;
                });
            }
        }
    }
    drop(subscriptions);
    drop(outbox);
    // A peer that stopped reading leaves the writer stuck on a full
    // socket: it gets a moment to flush, then goes.
    let abort = writer.abort_handle();
    if tokio::time::timeout(std::time::Duration::from_secs(1), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

/// Checks and starts a subscription; its frames go to `outbox`.
async fn subscribe(
    shared: &Shared,
    caller: &Caller,
    params: Value,
    outbox: &mpsc::Sender<Outgoing>,
    open: &mut Subscriptions,
) -> Result<Started, ApiError> {
    caller.require(Method::EventsSubscribe.spec().scope)?;
    let p: EventsSubscribeParams =
        talon_protocol::gateway::decode_params("events.subscribe", params)?;
    if let Some(stream) = &caller.ticket
        && !matches!(stream, TicketStream::Socket(named) if named.is_asked_by(&p))
    {
        return Err(crate::auth::identity::ticket_refusal(
            "this ticket subscribes with another filter",
        ));
    }
    open.room()?;
    let cursor = p.cursor()?;
    let filter = EventFilter {
        session_key: p.session_key.map(SessionKey::into_string),
        agent_id: p.agent_id.map(AgentId::into_string),
        types: p.types.unwrap_or_default(),
        raw: caller.is_admin(),
        owner: caller.owner(),
        ..EventFilter::default()
    };
    let mut follow = Follow::start(
        shared,
        caller,
        filter,
        cursor,
        crate::transport::stream::Ends::Never,
    )
    .await?;
    let (name, named) = tokio::sync::oneshot::channel::<String>();
    let outbox = outbox.clone();
    let task = tokio::spawn(async move {
        // The answer naming the subscription goes out before its events.
        let Ok(sid) = named.await else { return };
        while let Some(next) = follow.next().await {
            let frame = match next {
                Ok(sent) => {
                    let (event, held) = sent.into_held();
                    Outgoing {
                        text: event_frame(&sid, event.json()),
                        _held: held,
                    }
                }
                Err(error) => json!({"type": "event", "subscriptionId": sid, "error": error})
                    .to_string()
                    .into(),
            };
            if outbox.send(frame).await.is_err() {
                return;
            }
        }
    });
    Ok((name, task))
}
