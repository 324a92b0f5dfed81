//! The one execution path every tool call takes: a direct model call, a
//! `tool_call`, or a nested call from a code cell.
//!
//! [`ToolRunner::call`] resolves the exact id in this run's catalog, runs
//! the `before_tool_call` hooks, asks the approver when the tool requires
//! approval, checks the abort signal, waits its turn if the tool is
//! sequential, runs the executor with the run
//! context, caps the result, and records the call (naming its caller) for
//! the trajectory. A tool that is unknown, denied by policy (and so absent
//! from the catalog) or gone is never executed, and all three answer
//! alike. A blocked call reports the block; nothing routes around it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use talon_protocol::{ExecutionMode, ToolSource};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, CatalogEntry, RunScope};
use crate::tool_error::{ToolError, ToolErrorCode};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who asked for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The model called the tool directly.
    Direct,
    /// A surface tool (a code cell, `tool_call`) called it on the model's
    /// behalf; the parent's call id.
    Parent(String),
}

/// Context every call carries to hooks, the approver and the executor.
#[derive(Clone)]
pub struct RunContext {
    /// The run's agent, session and run ids.
    pub scope: RunScope,
    /// The session key (channel-level identity of the session).
    pub session_key: String,
    /// Who sent the message that started the run, if known.
    pub sender: Option<String>,
    /// The channel the run serves, if any.
    pub channel: Option<String>,
    /// Cancelled when the run is aborted. Everything a run does in flight
    /// (nested calls, MCP requests, provider streams, VM steps, shell
    /// commands) waits on it or is dropped by something that does; nothing
    /// polls a flag.
    pub cancel: CancellationToken,
    /// Where executors stream partial updates.
    pub updates: Arc<dyn UpdateSink>,
    /// The wall clock the run's events, records and deadlines read (the
    /// gateway's store's).
    pub clock: talon_protocol::clock::Clock,
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("scope", &self.scope)
            .field("session_key", &self.session_key)
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Receives streamed partial results of running calls.
pub trait UpdateSink: Send + Sync {
    /// A partial update of call `call_id`.
    fn update(&self, call_id: &str, update: Value);

    /// A partial update of call `call_id`, nested in the model's call
    /// `parent_id` (the runner routes a nested call's updates here).
    fn nested_update(&self, call_id: &str, parent_id: &str, update: Value) {
        let _ = parent_id;
        self.update(call_id, update);
    }
}

/// The updates of the calls a surface tool makes on the model's behalf,
/// told their parent.
struct NestedUpdates {
    inner: Arc<dyn UpdateSink>,
    parent: String,
}

impl UpdateSink for NestedUpdates {
    fn update(&self, call_id: &str, update: Value) {
        self.inner.nested_update(call_id, &self.parent, update);
    }

    fn nested_update(&self, call_id: &str, parent_id: &str, update: Value) {
        self.inner.nested_update(call_id, parent_id, update);
    }
}

/// An update sink that drops everything.
#[derive(Debug, Default)]
pub struct NoUpdates;

impl UpdateSink for NoUpdates {
    fn update(&self, _call_id: &str, _update: Value) {}
}

/// One call request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Unique id of this call.
    pub call_id: String,
    /// Catalog id (or, for direct calls, the resolved id).
    pub id: String,
    /// Arguments.
    pub args: Value,
    /// Who asked.
    pub caller: Caller,
}

/// What a hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// Go on, possibly with rewritten arguments.
    Continue(Value),
    /// Stop the call, with a reason the model sees.
    Block(String),
}

/// A `before_tool_call` hook (plugins register these).
pub trait BeforeToolCall: Send + Sync {
    /// Called before every call, in registration order.
    fn before<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        args: Value,
    ) -> BoxFuture<'a, HookDecision>;
}

/// What an approver decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// The call may run.
    Approved,
    /// The call may not run.
    Denied(String),
}

/// Decides calls to tools that require approval (the gateway's approval
/// flow, the CLI's prompt, a policy).
pub trait Approver: Send + Sync {
    /// Asks for a decision on one call.
    /// Whether a call of `entry` needs a decision: by default, when the
    /// tool says it requires approval; a policy may ask for more.
    fn needs(&self, entry: &CatalogEntry) -> bool {
        entry.tool.requires_approval
    }

    /// `call` carries the arguments as the hooks left them.
    fn decide<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision>;
}

/// Approves nothing: the fail-closed default.
#[derive(Debug, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        let reason = format!(
            "{} requires approval and no approver is configured",
            entry.id
        );
        Box::pin(async move { ApprovalDecision::Denied(reason) })
    }
}

/// Runs tools (core implementations, plugins, MCP clients, client
/// round-trips). Gets the call only after every check passed.
pub trait ToolExecutor: Send + Sync {
    /// Executes one call. The runner drops the future when the run is
    /// cancelled, so an executor stops its work on drop (kills its
    /// processes, cancels its requests).
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// Watches calls as they start and end (the agent loop turns these into
/// `tool.call.*` events; nested calls carry their parent).
pub trait CallObserver: Send + Sync {
    /// A call passed the catalog lookup (or failed it) and starts.
    fn started(&self, ctx: &RunContext, call: &ToolCall, entry: Option<&CatalogEntry>);
    /// Resolves once every call start observed so far is on durable
    /// record (and the model's own call that led to it). The runner waits
    /// for it before it runs a tool that is not `replaySafe`, so that a
    /// run resumed after its process died knows every such call that may
    /// have had an effect; `false` when it could not be recorded (the
    /// call then fails `unavailable` without running). Default: `true`
    /// at once.
    fn recorded(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(true))
    }

    /// A call ended.
    fn finished(
        &self,
        ctx: &RunContext,
        call: &ToolCall,
        outcome: &CallOutcome,
        duration: Duration,
    );

    /// A call was stopped before it ended because its caller stopped
    /// waiting for it (a Code Mode cell stopped at its limit, say) while
    /// its run goes on: its record says `cancelled`. Default: nothing.
    fn dropped(&self, ctx: &RunContext, call: &ToolCall, duration: Duration) {
        let _ = (ctx, call, duration);
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The tool ran and returned this (JSON, capped).
    Ok(Value),
    /// The tool ran and failed.
    Failed(ToolError),
    /// No such tool in this run (unknown, denied or gone: indistinguishable).
    NotFound,
    /// A hook or the approval gate blocked it.
    Blocked(String),
    /// The run was aborted before the tool ran.
    Aborted,
}

impl CallOutcome {
    /// The stable status name used in records and results.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Ok(_) => "ok",
            Self::Failed(_) => "failed",
            Self::NotFound => "not_found",
            Self::Blocked(_) => "blocked",
            Self::Aborted => "aborted",
        }
    }

    /// The outcome as the JSON a model or a guest sees.
    pub fn to_json(&self, id: &str) -> Value {
        match self {
            Self::Ok(value) => value.clone(),
            Self::Failed(error) => error.to_json(),
            Self::NotFound => {
                let id = clip(id, MAX_ID_BYTES);
                serde_json::json!({"error": format!("unknown tool id {id:?}"), "status": "not_found"})
            }
            Self::Blocked(reason) => serde_json::json!({"error": reason, "status": "blocked"}),
            Self::Aborted => {
                serde_json::json!({"error": "the run was aborted", "status": "aborted"})
            }
        }
    }
}

/// One finished call, for the trajectory and telemetry.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The call's id.
    pub call_id: String,
    /// The requested id.
    pub id: String,
    /// Source of the resolved tool (none when not found).
    pub source: Option<ToolSource>,
    /// Who asked.
    pub caller: Caller,
    /// `ok`, `failed`, `not_found`, `blocked`, `aborted`, or `cancelled`
    /// (the caller stopped waiting).
    pub status: &'static str,
    /// Wall time from request to outcome.
    pub duration: Duration,
    /// Size of the result as JSON.
    pub result_bytes: usize,
}

/// Ids longer than this are unknown (and are never echoed whole).
pub const MAX_ID_BYTES: usize = 256;
/// Error and block messages are cut at this many bytes.
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// `text` cut to at most `max` bytes at a character boundary.
fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Writes a call's record when the call ends or is dropped.
struct RecordGuard<'a> {
    runner: &'a ToolRunner,
    ctx: &'a RunContext,
    call: &'a ToolCall,
    record: Option<CallRecord>,
    started: Instant,
    /// Whether the observer was told how the call ended.
    reported: bool,
}

impl Drop for RecordGuard<'_> {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.duration = self.started.elapsed();
            if !self.reported {
                let observer = self.runner.observer.as_ref();
                if self.ctx.is_cancelled() {
                    // Dropped because its run was cancelled (its run
                    // stopping what it still ran): aborted, and reported
                    // as such.
                    record.status = "aborted";
                    if let Some(observer) = observer {
                        observer.finished(
                            self.ctx,
                            self.call,
                            &CallOutcome::Aborted,
                            record.duration,
                        );
                    }
                } else if let Some(observer) = observer {
                    // Its caller stopped waiting while the run goes on.
                    observer.dropped(self.ctx, self.call, record.duration);
                }
            }
            tracing::debug!(call_id = %record.call_id, id = %record.id, status = record.status, "tool call");
            if let Ok(mut records) = self.runner.records.lock() {
                records.push(record);
            }
        }
    }
}

/// Results larger than this (as JSON) are replaced by a truncated preview.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 256 * 1024;

/// The single execution path of one run.
pub struct ToolRunner {
    catalog: Arc<Catalog>,
    hooks: Vec<Arc<dyn BeforeToolCall>>,
    approver: Arc<dyn Approver>,
    executor: Arc<dyn ToolExecutor>,
    observer: Option<Arc<dyn CallObserver>>,
    max_result_bytes: usize,
    records: Mutex<Vec<CallRecord>>,
    /// One lock per sequential tool: its calls never overlap.
    sequential: Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner")
            .field("catalog", &self.catalog.len())
            .finish_non_exhaustive()
    }
}

impl ToolRunner {
    /// A runner over `catalog` with `executor`, no hooks, and [`DenyAll`].
    pub fn new(catalog: Arc<Catalog>, executor: Arc<dyn ToolExecutor>) -> Self {
        Self {
            catalog,
            hooks: Vec::new(),
            approver: Arc::new(DenyAll),
            executor,
            observer: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            records: Mutex::new(Vec::new()),
            sequential: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Adds a `before_tool_call` hook.
    pub fn with_hook(mut self, hook: Arc<dyn BeforeToolCall>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Sets the approver.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Sets the call observer.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Sets the result cap.
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes.max(256);
        self
    }

    /// The run's catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The calls made so far, in completion order.
    pub fn records(&self) -> Vec<CallRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Runs one call through every check; see the module documentation.
    /// A call whose future is dropped before it finishes (a cancelled
    /// nested call) is still recorded, as `cancelled` (`aborted` when its
    /// run was cancelled).
    pub async fn call(&self, ctx: &RunContext, call: ToolCall) -> CallOutcome {
        let mut guard = RecordGuard {
            runner: self,
            ctx,
            call: &call,
            reported: false,
            record: Some(CallRecord {
                call_id: clip(&call.call_id, MAX_ID_BYTES),
                id: clip(&call.id, MAX_ID_BYTES),
                source: None,
                caller: call.caller.clone(),
                status: "cancelled",
                duration: Duration::ZERO,
                result_bytes: 0,
            }),
            started: Instant::now(),
        };
        // Another run's context, an oversized id, or (for calls made on the
        // model's behalf by a bridge) a direct-only tool: all "not found".
        let entry = if ctx.scope != *self.catalog.scope() || call.id.len() > MAX_ID_BYTES {
            None
        } else if matches!(call.caller, Caller::Parent(_)) {
            self.catalog.get_cataloged(&call.id)
        } else {
            self.catalog.get(&call.id)
        };
        if let Some(record) = guard.record.as_mut() {
            record.source = entry.map(|e| e.tool.source);
        }
        if let Some(observer) = &self.observer {
            observer.started(ctx, &call, entry);
        }
        // A call made on the model's behalf (by a cell or a bridge) is a
        // span of its own, inside its parent call's; the model's own calls
        // get theirs from the agent loop.
        let span = match &call.caller {
            Caller::Parent(parent) => tracing::info_span!(
                target: "talon::trace",
                "tool",
                otel.name = %format_args!("execute_tool {}", clip(&call.id, 128)),
                otel.status_code = tracing::field::Empty,
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = %clip(&call.id, MAX_ID_BYTES),
                gen_ai.tool.call.id = %clip(&call.call_id, MAX_ID_BYTES),
                talon.tool.parent_call_id = %clip(parent, MAX_ID_BYTES),
                talon.tool.status = tracing::field::Empty,
            ),
            _ => tracing::Span::none(),
        };
        let outcome = match entry {
            None => CallOutcome::NotFound,
            // Cancelling the run drops whatever the call was waiting on
            // (a hook, an approval, its turn, the executor), at once.
            Some(entry) => {
                let checked = tracing::Instrument::instrument(
                    self.run_checked(ctx, entry, &call),
                    span.clone(),
                );
                tokio::select! {
                    biased;
                    () = ctx.cancel.cancelled() => CallOutcome::Aborted,
                    outcome = checked => outcome,
                }
            }
        };
        span.record("talon.tool.status", outcome.status());
        if !matches!(outcome, CallOutcome::Ok(_)) {
            span.record("otel.status_code", "error");
        }
        drop(span);
        let outcome = match outcome {
            CallOutcome::Ok(value) => CallOutcome::Ok(cap(value, self.max_result_bytes)),
            CallOutcome::Failed(mut error) => {
                error.message = clip(&error.message, MAX_MESSAGE_BYTES);
                CallOutcome::Failed(error)
            }
            CallOutcome::Blocked(reason) => CallOutcome::Blocked(clip(&reason, MAX_MESSAGE_BYTES)),
            other => other,
        };
        if let Some(record) = guard.record.as_mut() {
            record.status = outcome.status();
            record.result_bytes = match &outcome {
                CallOutcome::Ok(value) => serde_json::to_vec(value).map_or(0, |v| v.len()),
                _ => 0,
            };
        }
        if let Some(observer) = &self.observer {
            observer.finished(ctx, &call, &outcome, guard.started.elapsed());
        }
        guard.reported = true;
        drop(guard);
        outcome
    }

    async fn run_checked(
        &self,
        ctx: &RunContext,
        entry: &CatalogEntry,
        call: &ToolCall,
    ) -> CallOutcome {
        let mut args = call.args.clone();
        for hook in &self.hooks {
            match hook.before(ctx, entry, args).await {
                HookDecision::Continue(next) => args = next,
                HookDecision::Block(reason) => return CallOutcome::Blocked(reason),
            }
        }
        let call = ToolCall {
            args,
            ..call.clone()
        };
        if self.approver.needs(entry)
            && let ApprovalDecision::Denied(reason) = self.approver.decide(ctx, entry, &call).await
        {
            return CallOutcome::Blocked(reason);
        }
        if ctx.is_cancelled() {
            return CallOutcome::Aborted;
        }
        let lock = (entry.tool.execution_mode == ExecutionMode::Sequential)
            .then(|| self.lock_for(&entry.id));
        let _turn = match &lock {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        if !entry.tool.replay_safe
            && let Some(observer) = &self.observer
        {
            let since = Instant::now();
            let recorded = observer.recorded().await;
            tracing::debug!(
                target: "talon::calls",
                tool = %entry.id,
                recorded,
                waited_us = since.elapsed().as_micros() as u64,
                "the call's start is on record"
            );
            if !recorded {
                return CallOutcome::Failed(ToolError::new(
                    ToolErrorCode::Unavailable,
                    format!(
                        "{} was not run: its start could not be recorded, so a restart could not tell whether it ran",
                        entry.id
                    ),
                ));
            }
        }
        if ctx.is_cancelled() {
            return CallOutcome::Aborted;
        }
        let nested;
        let ctx = match &call.caller {
            Caller::Parent(parent) => {
                nested = RunContext {
                    updates: Arc::new(NestedUpdates {
                        inner: ctx.updates.clone(),
                        parent: parent.clone(),
                    }),
                    ..ctx.clone()
                };
                &nested
            }
            Caller::Direct => ctx,
        };
        match self.executor.execute(ctx, entry, &call).await {
            Ok(value) => CallOutcome::Ok(value),
            Err(error) => CallOutcome::Failed(error),
        }
    }
}

impl ToolRunner {
    fn lock_for(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        match self.sequential.lock() {
            Ok(mut locks) => locks.entry(id.to_owned()).or_default().clone(),
            // A poisoned map only means another call panicked; serialise on
            // a fresh lock rather than not at all.
            Err(poisoned) => poisoned
                .into_inner()
                .entry(id.to_owned())
                .or_default()
                .clone(),
        }
    }
}

/// Replaces a value larger than `max` bytes (as JSON) with
/// `{"truncated": true, "bytes": <full size>, "preview": <first max/2 bytes>}`.
pub fn cap(value: Value, max: usize) -> Value {
    let Ok(text) = serde_json::to_string(&value) else {
        return value;
    };
    if text.len() <= max {
        return value;
    }
    let mut end = max / 2;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({"truncated": true, "bytes": text.len(), "preview": &text[..end]})
}
