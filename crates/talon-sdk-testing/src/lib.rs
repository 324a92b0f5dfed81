//! [`FakeGateway`]: an in-process fake of the Talon gateway, for testing
//! apps and SDKs against the gateway's wire protocol without a model (the
//! Rust counterpart of the seed's `@talon/sdk-testing`).
//!
//! It serves the real method table (it implements
//! `talon_protocol::gateway::Handler`) over the real transports on
//! `127.0.0.1`: `POST /v1/<method>`, the SSE streams
//! (`/v1/runs/{runId}/events`, `/v1/events`), the WebSocket (`/v1/ws`,
//! calls and `events.subscribe`) and artifact bytes
//! (`/v1/artifacts/{id}/content`), with the gateway's error shape, status
//! codes, headers and event envelopes. State is in memory. Runs play
//! scripts ([`FakeRun`], queued with [`FakeGateway::script_run`]; an
//! unscripted run replies `ok`), and [`Fault`]s injected with
//! [`FakeGateway::inject`] exercise a client's retries and resumption.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use talon_sdk_testing::{FakeGateway, FakeRun, Fault};
//! let gateway = FakeGateway::start().await?;
//! gateway.script_run(FakeRun::reply("Hello.").approval("openclaw:core:write", serde_json::json!({})));
//! gateway.inject(Fault::DropStream { after_events: 2 });
//! // ... point the client at gateway.url() with gateway.token() ...
//! gateway.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Modules: `state` (the memory), `api` (the method table; `tokens.*` in
//! `api::tokens`, the artifact, approval and question lists in
//! `api::lists`), `tasks` (background tasks), `runs` and `play` and `end` (runs), `sessions` (fork, compact), `catalog` (answers, tools,
//! environments), `http`,
//! `stream`, `ws` and `content` (the transports), `script` (runs' scripts
//! and faults).
//!
//! Every method of the table is served by construction (it implements the `Handler` trait),
//! `tasks.*` from scripted background tasks ([`FakeTask`], started by a run's
//! [`FakeRun::spawn`] or [`FakeGateway::add_task`]); its transports mirror the real ones
//! (`POST /v1/<method>` in `serve_call`'s order, SSE with `Last-Event-ID` and heartbeats, the
//! WebSocket's frames and subscriptions, artifact content with `ETag` and ranges), and the pieces
//! both must render alike come from `talon-wire`. The checks of `runs.create`'s params, the
//! `RunResult` of a run's row and a run event's envelope are the protocol's
//! (`RunsCreateParams::check`, `RunResult::of`, `Event::of_run`), so the two servers cannot differ
//! there. State is in memory behind one mutex never held across an await; one event log with
//! gateway-wide ids feeds every stream. A scripted run (`FakeRun`: events, delays, approvals and
//! questions that wait for the app's answer, artifacts, a failure) also leaves its trajectory, as
//! the real gateway's runs do; faults (`Fault`) drop a stream after n events, expire a cursor,
//! answer `rate_limited` with `retryAfterMs` or `unavailable`, or answer slowly; `calls()` records
//! every call. The SDK's suite runs the same tests against this fake and a real gateway, which is
//! what keeps the two alike.
//!
//! # Shared with the gateway, and re-implemented on purpose
//!
//! One copy, used by both servers: the transports' rules in `talon-wire`
//! (the error response and its headers, `no_route` and the 405, the SSE
//! frames and the stream cursor, `Range`, the artifact content's headers and
//! MIME types, the event types a stream's `types` asks, the WebSocket's
//! frames and a connection's `Subscriptions`, the routed paths) and the
//! protocol's (`RunsCreateParams::check` with its limits, `RunsListParams`'
//! checks and filter, `RunResult::of`, `Event::of_run`,
//! `ArtifactsDownloadResult::of`, `decode_params`).
//!
//! Written again here, because the fake keeps its state in memory and plays
//! scripts instead of running models: each method's handler (over `State`
//! instead of the store), the follow loop of a stream (over the memory log),
//! authentication (its own admin token and the tokens it mints, with their
//! scopes), the router and the
//! WebSocket connection's loop around `talon_wire::ws`, idempotency
//! bookkeeping, session resolution, and a run's life (played from its
//! script instead of the agent loop). A pair that `duplicates` reports
//! between this crate and talon-gateway outside these is a rule to move into
//! `talon-wire` or `talon-protocol`.
//!
//! # Deliberately different
//!
//! Every case of the protocol's contract (`crates/talon-protocol/contract/cases.json`) holds
//! against this fake as against the gateway (talon-sdk's `suite/contract.rs`); what it answers
//! otherwise on purpose, or does not model, is listed once, in `docs/fake-differences.md`,
//! generated from the contract.

mod api;
mod catalog;
mod content;
mod deletes;
mod end;
mod http;
mod play;
mod runs;
mod script;
mod sessions;
mod state;
mod stream;
mod tasks;
mod ws;

use std::net::SocketAddr;
use std::sync::Arc;

use talon_protocol::gateway::ToolSummary;
use tokio::sync::watch;

pub use script::{FakeRun, Fault};
pub use tasks::FakeTask;

use state::{Shared, TOKEN};

/// A method call the fake gateway received (over HTTP or WebSocket), in
/// the order received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The method, e.g. `runs.create`.
    pub method: String,
    /// Its params as sent (`{}` for an empty body).
    pub params: serde_json::Value,
}

/// A fake Talon gateway serving on `127.0.0.1` until it is dropped or
/// shut down. Its token is `fake-token`; it has one agent, `main`, and one
/// model, `mock/mock-model`.
#[derive(Debug)]
pub struct FakeGateway {
    addr: SocketAddr,
    shared: Arc<Shared>,
    closing: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeGateway {
    /// Starts serving on `127.0.0.1:0`, on the system clock.
    pub async fn start() -> std::io::Result<FakeGateway> {
        Self::start_with_clock(talon_protocol::clock::Clock::system()).await
    }

    /// Starts serving on `127.0.0.1:0`, on `clock` (`Clock::adjustable()`
    /// lets a test move past a ticket's or a token's expiry instead of
    /// sleeping).
    pub async fn start_with_clock(
        clock: talon_protocol::clock::Clock,
    ) -> std::io::Result<FakeGateway> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (closing, closed) = watch::channel(false);
        let shared = Arc::new(Shared::new(closed.clone(), clock));
        let app = http::router(shared.clone(), addr);
        let mut stop = closed;
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|closing| *closing).await;
                })
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "the fake gateway stopped");
            }
        });
        tracing::debug!(%addr, "the fake gateway serves");
        Ok(FakeGateway {
            addr,
            shared,
            closing,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token it takes (`fake-token`).
    pub fn token(&self) -> &str {
        TOKEN
    }

    /// Queues the script of the next run created (`runs.create` or
    /// `sessions.send`); runs created when the queue is empty play
    /// `FakeRun::reply("ok")`.
    pub fn script_run(&self, run: FakeRun) {
        self.shared.write(|s| s.scripts.push_back(run));
    }

    /// Queues a fault; each is used up when it fires.
    pub fn inject(&self, fault: Fault) {
        self.shared.write(|s| s.faults.push(fault));
    }

    /// Every method call received so far (HTTP and WebSocket, faulted ones
    /// included), in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.shared.read(|s| s.calls.clone())
    }

    /// Records a background task not started by any run (`runId`
    /// absent), announced with `task.updated` (`queued`, then `running`),
    /// that ends as `task` says; returns it as it now is.
    pub fn add_task(&self, task: FakeTask) -> talon_protocol::gateway::tasks::Task {
        let stored = self.shared.write(|s| s.create_task(&task, None));
        tasks::play(self.shared.clone(), stored.id.clone(), &task);
        stored
    }

    /// Ends the task `id` (one that is [`FakeTask::held`], or any not yet
    /// ended) with `status`, and `result` as its result (a success) or
    /// error message (a failure); announced with `task.updated`. `None`
    /// when there is no such task or it has already ended.
    pub fn finish_task(
        &self,
        id: &str,
        status: talon_protocol::gateway::tasks::TaskStatus,
        result: Option<&str>,
    ) -> Option<talon_protocol::gateway::tasks::Task> {
        use talon_protocol::gateway::tasks::TaskStatus;
        self.shared.write(|s| {
            s.move_task(id, |t| {
                t.status = status;
                match (status, result) {
                    (TaskStatus::Succeeded, Some(text)) => t.result = Some(text.to_owned()),
                    (_, Some(text)) if status.is_terminal() => {
                        use talon_protocol::gateway::{ApiError, ErrorCode};
                        t.error = Some(ApiError::new(ErrorCode::Internal, text)); // the test's words
                    }
                    (_, Some(text)) => t.progress_summary = Some(text.to_owned()),
                    (_, None) => {}
                }
            })
        })
    }

    /// What `tools.list` answers (and the tools `run.started` names).
    pub fn set_tools(&self, tools: Vec<ToolSummary>) {
        self.shared.write(|s| s.tools = tools);
    }

    /// What `tools.invoke` answers for `tool` (by name or catalog id);
    /// other tools are `not_found`.
    pub fn set_invoke_result(&self, tool: &str, result: serde_json::Value) {
        self.shared.write(|s| {
            s.invoke_results.insert(tool.to_owned(), result);
        });
    }

    /// Stops serving: open streams and WebSocket connections end, waiting
    /// runs stop, and the listener closes.
    pub async fn shutdown(mut self) {
        let _ = self.closing.send(true);
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(std::time::Duration::from_secs(5), task)
                .await
                .is_err()
            {
                tracing::warn!("the fake gateway's connections did not close in 5 s");
                abort.abort();
            }
        }
    }
}

impl Drop for FakeGateway {
    fn drop(&mut self) {
        let _ = self.closing.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
