//! The WebSocket transport, `GET /v1/ws` (the token on the upgrade
//! request), as the gateway serves it:
//!
//! - `{"type":"req","id":..,"method":..,"params":..}` is answered by
//!   `{"type":"res","id":..,"ok":true,"result":..}` or
//!   `{"type":"res","id":..,"ok":false,"error":{..}}`, through the same
//!   path as HTTP; calls run concurrently.
//! - `events.subscribe` answers `{subscriptionId}`, then sends
//!   `{"type":"event","subscriptionId":..,"event":{..}}` frames (the same
//!   envelopes and ids as SSE); `events.unsubscribe` ends one.
//!
//! A frame that is not a request gets an `invalid_request` answer with a
//! null id and the connection stays. A subscription cut by `DropStream`
//! drops the whole connection, with no close frame.

use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use talon_protocol::gateway::params::EventsSubscribeParams;
use talon_protocol::gateway::{ApiError, Method, Scope, TicketStream};
use tokio::sync::mpsc;

use talon_wire::ws::{Incoming, Started, Subscriptions, event_frame, incoming};

use super::http::{ErrorResponse, arrive, authenticate_stream, require, serve_call};
use super::state::Shared;
use super::stream::{Filter, Follow, Next};

/// Frames waiting to be written, per connection.
const OUTBOX: usize = 256;

/// What the writer is given.
enum Out {
    /// A text frame.
    Text(String),
    /// Drop the connection now.
    Cut,
}

/// Upgrades an authenticated request.
pub(crate) async fn upgrade(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let query: super::stream::TicketQuery = match super::stream::query(&uri) {
        Ok(query) => query,
        Err(error) => return ErrorResponse(error).into_response(),
    };
    let (granted, ticket) =
        match authenticate_stream(&shared, &headers, query.ticket.as_deref(), &|t| {
            matches!(t, TicketStream::Socket(_))
        }) {
            Ok(access) => access,
            Err(error) => return ErrorResponse(error).into_response(),
        };
    ws.on_upgrade(move |socket| connection(shared, socket, granted, ticket))
}

/// What a ticket's socket may not do: anything but the one subscription.
fn ticket_refusal(what: &str) -> ApiError {
    talon_protocol::gateway::refuse::ticket_calls(what)
}

/// Whether a ticket's socket may make this call.
fn ticket_allows(
    ticket: Option<&TicketStream>,
    method: &str,
    params: &Value,
) -> Result<(), ApiError> {
    let Some(ticket) = ticket else {
        return Ok(());
    };
    match method {
        "events.unsubscribe" => Ok(()),
        "events.subscribe" => {
            let asked: Option<EventsSubscribeParams> = serde_json::from_value(params.clone()).ok();
            match (ticket, asked) {
                (TicketStream::Socket(named), Some(p)) if named.is_asked_by(&p) => Ok(()),
                _ => Err(ticket_refusal("this ticket subscribes with another filter")),
            }
        }
        other => Err(ticket_refusal(&format!(
            "`{}`",
            other.chars().take(64).collect::<String>()
        ))),
    }
}

fn answer(id: &Value, outcome: Result<Value, ApiError>) -> Out {
    Out::Text(talon_wire::ws::answer(id, outcome))
}

async fn connection(
    shared: Arc<Shared>,
    socket: WebSocket,
    granted: Vec<Scope>,
    ticket: Option<TicketStream>,
) {
    use futures::{SinkExt as _, StreamExt as _};
    let (mut sink, mut frames) = socket.split();
    let (outbox, mut queued) = mpsc::channel::<Out>(OUTBOX);
    let (cut_tx, mut cut) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        while let Some(out) = queued.recv().await {
            match out {
                Out::Text(text) => {
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                Out::Cut => {
                    let _ = cut_tx.send(());
                    return;
                }
            }
        }
        let _ = sink.close().await;
    });
    let mut subscriptions = Subscriptions::default();
    let mut closing = shared.closing.clone();
    let mut dropped = false;
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame,
            _ = closing.wait_for(|closing| *closing) => None,
            _ = &mut cut => {
                dropped = true;
                None
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let (id, method, params) = match incoming(frame) {
            Incoming::Request(request, _) => (request.id, request.method, request.params),
            Incoming::Refused(id, error) => {
                let _ = outbox.send(answer(&id, Err(error))).await;
                continue;
            }
            Incoming::Control => continue,
            Incoming::End => break,
        };
        if let Err(error) = ticket_allows(ticket.as_ref(), &method, &params) {
            let _ = outbox.send(answer(&id, Err(error))).await;
            continue;
        }
        match method.as_str() {
            "events.subscribe" => {
                let started = match arrive(&shared, &method, &params)
                    .await
                    .and_then(|()| require(&granted, Method::EventsSubscribe.spec().scope))
                {
                    Ok(()) => subscribe(&shared, params, &outbox, &mut subscriptions),
                    Err(error) => Err(error),
                };
                match started {
                    Ok(started) => {
                        // The answer naming it goes out before its events.
                        let named = subscriptions.name(&id, started);
                        let _ = outbox.send(Out::Text(named.answer.clone())).await;
                        named.go();
                    }
                    Err(error) => {
                        let _ = outbox.send(answer(&id, Err(error))).await;
                    }
                }
            }
            "events.unsubscribe" => {
                let outcome = match arrive(&shared, &method, &params)
                    .await
                    .and_then(|()| require(&granted, Method::EventsUnsubscribe.spec().scope))
                {
                    Ok(()) => subscriptions.unsubscribe(params),
                    Err(error) => Err(error),
                };
                let _ = outbox.send(answer(&id, outcome)).await;
            }
            _ => {
                let shared = shared.clone();
                let outbox = outbox.clone();
                let granted = granted.clone();
                tokio::spawn(async move {
                    let outcome = serve_call(&shared, &granted, &method, params).await;
                    let _ = outbox.send(answer(&id, outcome)).await;
                });
            }
        }
    }
    drop(subscriptions);
    drop(outbox);
    if dropped {
        // Cut: the socket goes with no close frame.
        writer.abort();
        return;
    }
    let abort = writer.abort_handle();
    if tokio::time::timeout(std::time::Duration::from_secs(1), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

/// Checks and starts a subscription; its frames go to `outbox`.
fn subscribe(
    shared: &Arc<Shared>,
    params: Value,
    outbox: &mpsc::Sender<Out>,
    open: &mut Subscriptions,
) -> Result<Started, ApiError> {
    let p: EventsSubscribeParams =
        talon_protocol::gateway::decode_params("events.subscribe", params)?;
    open.room()?;
    let cursor = p.cursor()?;
    let filter = Filter {
        run_id: None,
        session_key: p.session_key,
        agent_id: p.agent_id,
        types: p.types.unwrap_or_default(),
    };
    let mut follow = Follow::start(shared, filter, cursor, false)?;
    let (name, named) = tokio::sync::oneshot::channel::<String>();
    let outbox = outbox.clone();
    let task = tokio::spawn(async move {
        let Ok(sid) = named.await else { return };
        while let Some(next) = follow.next().await {
            let out = match next {
                Next::Event(_, _, json) => Out::Text(event_frame(&sid, &json)),
                Next::Cut => Out::Cut,
            };
            if outbox.send(out).await.is_err() {
                return;
            }
        }
    });
    Ok((name, task))
}
