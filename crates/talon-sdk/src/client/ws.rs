//! The WebSocket transport: one connection (`GET /v1/ws`, the token on the
//! upgrade request) carries every call as `{"type":"req",id,method,params}`
//! and its answer as `{"type":"res",id,ok,result|error}`, matched by id
//! (answers may come in any order). `events.subscribe` routes the
//! `{"type":"event",subscriptionId,event}` frames that follow to a
//! [`Subscription`]. A connection that drops fails its calls in flight
//! and ends its subscriptions with [`Error::Transport`]; the next call
//! opens a new one.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{SinkExt as _, Stream, StreamExt as _};
use serde_json::{Value, json};
use talon_protocol::Event;
use talon_protocol::gateway::ApiError;
use talon_protocol::gateway::params::{EventsSubscribeParams, EventsSubscribeResult};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::ClientConfig;
use crate::error::{Error, Result};

type EventSender = mpsc::UnboundedSender<Result<Event>>;

/// Calls over one WebSocket, reopened when it drops.
#[derive(Debug)]
pub(super) struct WsTransport {
    url: String,
    token: String,
    connect_timeout: Duration,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
}

#[derive(Debug)]
struct Conn {
    out: mpsc::UnboundedSender<Message>,
    routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    closed: Arc<AtomicBool>,
}

#[derive(Debug, Default)]
struct Routes {
    pending: HashMap<u64, Pending>,
    subscriptions: HashMap<String, EventSender>,
}

#[derive(Debug)]
struct Pending {
    reply: oneshot::Sender<Result<Value>>,
    /// For `events.subscribe`: where its events go, routed before the
    /// answer is delivered so that none is missed.
    subscription: Option<EventSender>,
}

impl WsTransport {
    pub(super) fn new(config: &ClientConfig, base: &url::Url) -> Result<Self> {
        let mut url = base
            .join("v1/ws")
            .map_err(|e| Error::invalid_because("WebSocket URL", e))?;
        let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
        url.set_scheme(scheme)
            .map_err(|()| Error::invalid("WebSocket URL scheme"))?;
        Ok(Self {
            url: url.to_string(),
            token: config.token.clone(),
            connect_timeout: config.connect_timeout,
            conn: tokio::sync::Mutex::new(None),
        })
    }

    async fn connection(&self) -> Result<Arc<Conn>> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.closed.load(Ordering::Acquire)
        {
            return Ok(conn.clone());
        }
        let conn = Arc::new(self.open().await?);
        *slot = Some(conn.clone());
        Ok(conn)
    }

    async fn open(&self) -> Result<Conn> {
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| Error::invalid_because("WebSocket URL", e))?;
        let bearer = format!("Bearer {}", self.token)
            .parse()
            .map_err(|_| Error::invalid("the token is not a valid header value"))?;
        request.headers_mut().insert("authorization", bearer);
        let connected = tokio::time::timeout(
            self.connect_timeout,
            tokio_tungstenite::connect_async(request),
        )
        .await
        .map_err(|_| {
            Error::transport(format!(
                "the WebSocket at {} did not open in time (is the gateway running there?)",
                self.url
            ))
        })?;
        let (socket, _) = connected.map_err(|e| handshake_error(&self.url, e))?;
        let (mut sink, mut frames) = socket.split();
        let (out, mut queued) = mpsc::unbounded_channel::<Message>();
        let routes = Arc::new(Mutex::new(Routes::default()));
        let closed = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Some(message) = queued.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let reader_routes = routes.clone();
        let reader_closed = closed.clone();
        tokio::spawn(async move {
            while let Some(frame) = frames.next().await {
                match frame {
                    Ok(Message::Text(text)) => route(&reader_routes, text.as_str()),
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            reader_closed.store(true, Ordering::Release);
            let routes = std::mem::take(&mut *lock(&reader_routes));
            for (_, pending) in routes.pending {
                let _ = pending
                    .reply
                    .send(Err(Error::transport("the WebSocket closed")));
            }
            for (_, events) in routes.subscriptions {
                let _ = events.send(Err(Error::transport(
                    "the WebSocket closed (resume after the last event id)",
                )));
            }
        });
        Ok(Conn {
            out,
            routes,
            next_id: AtomicU64::new(1),
            closed,
        })
    }

    pub(super) async fn call(&self, method: &str, params: Value) -> Result<Value> {
        let conn = self.connection().await?;
        conn.request(method, params, None).await
    }

    pub(super) async fn subscribe(&self, params: EventsSubscribeParams) -> Result<Subscription> {
        let conn = self.connection().await?;
        let (events, receiver) = mpsc::unbounded_channel();
        let params = serde_json::to_value(&params).map_err(|e| Error::decode("params", e))?;
        let result = conn
            .request("events.subscribe", params, Some(events))
            .await?;
        let result: EventsSubscribeResult = serde_json::from_value(result)
            .map_err(|e| Error::decode("the answer to events.subscribe", e))?;
        Ok(Subscription {
            id: result.subscription_id.into_string(),
            receiver,
            conn,
        })
    }
}

fn handshake_error(url: &str, error: tokio_tungstenite::tungstenite::Error) -> Error {
    use tokio_tungstenite::tungstenite::Error as WsError;
    match error {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let body = response.body().clone().unwrap_or_default();
            Error::Api(super::http::api_error(status, None, &body))
        }
        WsError::Io(e) => Error::Transport {
            message: format!(
                "could not connect to the gateway at {url}: {e} (is the gateway running there? \
                 `talon gateway` starts one)"
            ),
            source: Some(Box::new(e)),
        },
        other => Error::Transport {
            message: format!("the WebSocket at {url}: {other}"),
            source: Some(Box::new(other)),
        },
    }
}

fn lock(routes: &Mutex<Routes>) -> std::sync::MutexGuard<'_, Routes> {
    routes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Delivers one frame from the gateway.
fn route(routes: &Mutex<Routes>, text: &str) {
    let Ok(frame) = serde_json::from_str::<Value>(text) else {
        tracing::warn!("a WebSocket frame that is not JSON");
        return;
    };
    match frame.get("type").and_then(Value::as_str) {
        Some("res") => {
            let Some(id) = frame.get("id").and_then(Value::as_u64) else {
                if let Some(error) = frame.get("error") {
                    tracing::warn!(%error, "the gateway refused a frame");
                }
                return;
            };
            let mut routes = lock(routes);
            let Some(pending) = routes.pending.remove(&id) else {
                return;
            };
            let outcome = if frame.get("ok").and_then(Value::as_bool) == Some(true) {
                let result = frame.get("result").cloned().unwrap_or(Value::Null);
                if let Some(events) = pending.subscription
                    && let Some(sid) = result.get("subscriptionId").and_then(Value::as_str)
                {
                    routes.subscriptions.insert(sid.to_owned(), events);
                }
                Ok(result)
            } else {
                match frame
                    .get("error")
                    .cloned()
                    .map(serde_json::from_value::<ApiError>)
                {
                    Some(Ok(error)) => Err(Error::Api(error)),
                    _ => Err(Error::malformed("a WebSocket answer", "no error")),
                }
            };
            drop(routes);
            let _ = pending.reply.send(outcome);
        }
        Some("event") => {
            let Some(sid) = frame.get("subscriptionId").and_then(Value::as_str) else {
                return;
            };
            let event = frame
                .get("event")
                .cloned()
                .map(serde_json::from_value::<Event>);
            let mut routes = lock(routes);
            let Some(events) = routes.subscriptions.get(sid) else {
                return;
            };
            let item = match event {
                Some(Ok(event)) => Ok(event),
                Some(Err(e)) => Err(Error::decode("an event", e)),
                None => Err(Error::malformed("an event frame", "no event")),
            };
            if events.send(item).is_err() {
                routes.subscriptions.remove(sid);
            }
        }
        _ => {}
    }
}

impl Conn {
    async fn request(
        &self,
        method: &str,
        params: Value,
        subscription: Option<EventSender>,
    ) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        lock(&self.routes).pending.insert(
            id,
            Pending {
                reply,
                subscription,
            },
        );
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        if self.out.send(Message::text(frame.to_string())).is_err() {
            lock(&self.routes).pending.remove(&id);
            return Err(Error::transport("the WebSocket closed"));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(Error::transport("the WebSocket closed")))
    }
}

/// Live events of one `events.subscribe`, in order. Dropping it sends
/// `events.unsubscribe`. A dropped connection ends it with
/// [`Error::Transport`]: subscribe again with `after` set to the last id
/// seen.
#[derive(Debug)]
pub struct Subscription {
    id: String,
    receiver: mpsc::UnboundedReceiver<Result<Event>>,
    conn: Arc<Conn>,
}

impl Subscription {
    /// The gateway's id for it.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Stream for Subscription {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.conn.routes).subscriptions.remove(&self.id);
        let id = self.conn.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = json!({"type": "req", "id": id, "method": "events.unsubscribe",
            "params": {"subscriptionId": self.id}});
        let _ = self.conn.out.send(Message::text(frame.to_string()));
    }
}
