//! MCP progress as the calling tool's deltas: each `tools/call` carries a
//! `progressToken` of its own (rmcp gives every request one), and the
//! server's `notifications/progress` for it reach the run's update sink as
//! `tool.call.delta` (`{progress, total?, message?}`), at most one per
//! [`MIN_INTERVAL`] per call (a server that floods is thinned, not
//! queued), and never once the call has returned (its token is
//! forgotten; one the server sends just after its answer may still land
//! before that). A notification that comes before its call is watched
//! (rmcp names a request's token as it sends it) is kept a moment and
//! delivered when it is. [`call_tool`] sends the request itself to learn
//! the token, and tells the server when the caller gives up, as rmcp's
//! own `call_tool` does.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, NumberOrString, ProgressNotificationParam, ProgressToken, RequestId,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use talon_tools::UpdateSink;

/// The shortest time between two progress deltas of one call.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Longest progress message kept.
const MAX_MESSAGE: usize = 1024;

/// Where a call's progress goes.
#[derive(Clone)]
pub struct ProgressTo {
    /// The run's update sink.
    pub sink: Arc<dyn UpdateSink>,
    /// The call it belongs to.
    pub call_id: String,
}

struct Watch {
    to: ProgressTo,
    last: Option<Instant>,
}

/// The calls of one server that want progress, by token, and what came
/// for a token before its call was watched.
#[derive(Default)]
pub(crate) struct Progress {
    calls: Mutex<HashMap<i64, Watch>>,
    early: Mutex<VecDeque<(i64, Instant, Value)>>,
}

/// Most notifications kept for tokens not watched yet...
const EARLY_KEPT: usize = 32;
/// ...and for how long.
const EARLY_FOR: Duration = Duration::from_secs(1);

/// Forgets a call's token when the call ends.
pub(crate) struct Watching {
    progress: Arc<Progress>,
    token: i64,
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.progress.calls.lock() {
            calls.remove(&self.token);
        }
    }
}

impl Progress {
    /// Sends `to` the progress of the call with `token` until the guard
    /// is dropped (a token that is not a number is rmcp's to make: none).
    pub fn watch(self: &Arc<Self>, token: &ProgressToken, to: ProgressTo) -> Option<Watching> {
        let NumberOrString::Number(token) = token.0 else {
            return None;
        };
        let early = self.early.lock().ok().and_then(|mut early| {
            let now = Instant::now();
            early.retain(|(_, at, _)| now < *at + EARLY_FOR);
            let first = early.iter().position(|(t, _, _)| *t == token)?;
            let update = early.remove(first).map(|(_, _, update)| update);
            early.retain(|(t, _, _)| *t != token);
            update
        });
        let last = early.as_ref().map(|update| {
            to.sink.update(&to.call_id, update.clone());
            Instant::now()
        });
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(token, Watch { to, last });
        }
        Some(Watching {
            progress: self.clone(),
            token,
        })
    }

    /// A server's progress notification: passed on when its token is a
    /// running call's and that call's last delta is old enough.
    pub fn notify(&self, params: &ProgressNotificationParam) {
        let NumberOrString::Number(token) = params.progress_token.0 else {
            return;
        };
        let mut update = json!({"progress": params.progress});
        if let Some(total) = params.total {
            update["total"] = json!(total);
        }
        if let Some(message) = &params.message {
            update["message"] = json!(message.chars().take(MAX_MESSAGE).collect::<String>());
        }
        let to = {
            let Ok(mut calls) = self.calls.lock() else {
                return;
            };
            let Some(watch) = calls.get_mut(&token) else {
                drop(calls);
                // Its call may not be watched yet: kept a moment.
                if let Ok(mut early) = self.early.lock() {
                    if early.len() >= EARLY_KEPT {
                        early.pop_front();
                    }
                    early.push_back((token, Instant::now(), update));
                }
                return;
            };
            let now = Instant::now();
            if watch.last.is_some_and(|last| now < last + MIN_INTERVAL) {
                return;
            }
            watch.last = Some(now);
            watch.to.clone()
        };
        to.sink.update(&to.call_id, update);
    }
}

/// Tells the server a request was given up, unless it was answered.
struct Abandon {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let reason = "request abandoned by the caller".to_owned();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        }
    }
}

/// `tools/call` on `peer`, its progress going to `to` while it runs.
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    progress: &Arc<Progress>,
    params: CallToolRequestParams,
    to: Option<ProgressTo>,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    // A notification the server sends before this line is not passed on.
    let _watching = to.and_then(|to| progress.watch(&handle.progress_token, to));
    let mut abandon = Abandon {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answered = handle.await_response().await;
    abandon.id = None;
    match answered? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}
