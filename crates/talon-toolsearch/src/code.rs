//! `tool_search_code`: a JavaScript body with `openclaw.tools.search/
//! describe/call` and `console`, run by the shared cell driver
//! ([`talon_sandbox::CellEngine::drive`]) in the process's shared sandbox.
//! Bridge calls run concurrently as tasks; when the body returns, calls it
//! did not await are cancelled; one deadline covers guest code and tool
//! calls; cancelling the run stops the body and its calls at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_protocol::ConsoleOutput;
use talon_sandbox::{
    Answer, CallResult, Calls, CellEngine, CellHost, DriveLimits, Halt, HostCallError,
    HostFunctions, Limits, Machine, PendingCall, Prelude, SandboxConfig, SandboxError, VmOptions,
};
use talon_tools::{CallOutcome, RunContext};

use crate::runtime::Handlers;

/// The name of the `openclaw.tools` prelude, and of its image in the shared
/// sandbox (the image `tool_search_code` bodies run in).
pub const PRELUDE_NAME: &str = "openclaw-tools";

pub(crate) const SEARCH_FN: &str = "__openclaw_tools_search";
pub(crate) const DESCRIBE_FN: &str = "__openclaw_tools_describe";
pub(crate) const CALL_FN: &str = "__openclaw_tools_call";

/// Host functions `js/openclaw_tools.js` captures.
pub const PRELUDE_FUNCTIONS: &[&str] = &[SEARCH_FN, DESCRIBE_FN, CALL_FN];

/// The host functions of a `tool_search_code` VM: every one of
/// [`PRELUDE_FUNCTIONS`], each asynchronous (the body awaits it).
pub fn host_functions() -> HostFunctions {
    HostFunctions::new()
        .asynchronous(SEARCH_FN)
        .asynchronous(DESCRIBE_FN)
        .asynchronous(CALL_FN)
}

/// The `openclaw.tools` guest API, to bake into the process's shared
/// sandbox ([`CellEngine`]) beside the other surfaces' preludes.
pub fn prelude() -> Prelude {
    Prelude {
        name: PRELUDE_NAME.into(),
        source: include_str!("js/openclaw_tools.js").into(),
        host_functions: PRELUDE_FUNCTIONS.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Largest cell value returned whole (as JSON); larger ones become a
/// preview.
const MAX_VALUE_BYTES: usize = 256 * 1024;

/// Bridge calls of one body that may run at once (the rest queue).
const MAX_CONCURRENT_CALLS: usize = 64;

/// Largest `tool_search_code` body: search code is short, and the same
/// default as Code Mode's `tools.codeMode.maxSourceBytes` (1 MiB).
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// The sandbox `tool_search_code` runs in: the process's shared sandbox and
/// pool, whose base image includes [`prelude`].
#[derive(Debug, Clone)]
pub struct CodeSandbox {
    engine: CellEngine,
}

impl CodeSandbox {
    /// Starts a sandbox of its own with the `openclaw.tools` prelude. Fails
    /// (and the run must fail closed) when the sandbox cannot start.
    pub fn new(mut config: SandboxConfig) -> Result<Self, SandboxError> {
        config.preludes.push(prelude());
        Self::with_engine(CellEngine::new(config)?)
    }

    /// Runs bodies in the process's shared sandbox, whose base image must
    /// include [`prelude`].
    pub fn with_engine(engine: CellEngine) -> Result<Self, SandboxError> {
        if !engine.sandbox().has_prelude(PRELUDE_NAME) {
            return Err(SandboxError::RuntimeUnavailable(
                "the shared sandbox was built without the openclaw.tools prelude".into(),
            ));
        }
        engine.sandbox().prepare(PRELUDE_NAME)?;
        Ok(Self { engine })
    }
}

/// Tool Search's side of one body's drive.
struct BodyHost {
    handlers: Arc<Handlers>,
    ctx: RunContext,
    parent: String,
    nested: u64,
}

impl CellHost for BodyHost {
    type Tag = ();

    fn functions(&self) -> HostFunctions {
        host_functions()
    }

    fn vm_options(&self, remaining: Duration) -> VmOptions {
        VmOptions {
            limits: Limits {
                timeout: remaining,
                ..Limits::default()
            },
            prelude: Some(PRELUDE_NAME.to_owned()),
            ..VmOptions::default()
        }
    }

    fn accept(&mut self, call: PendingCall) -> Answer<()> {
        // Every request gets a number, so a bridged call's id says where
        // it came in the body.
        self.nested += 1;
        let text = |i: usize| {
            call.args
                .get(i)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match call.name.as_str() {
            SEARCH_FN => {
                let limit = call.args.get(1).and_then(|o| o["limit"].as_u64());
                Answer::Now(Ok(self.handlers.search(&text(0), limit)))
            }
            DESCRIBE_FN => Answer::Now(
                self.handlers
                    .describe(&text(0))
                    .map_err(|e| HostCallError::new(e.message).with_code("not_found")),
            ),
            CALL_FN => {
                let handlers = self.handlers.clone();
                let ctx = self.ctx.clone();
                let parent = self.parent.clone();
                let child = format!("{}/{}", self.parent, self.nested);
                let id = text(0);
                let args = call.args.get(1).cloned().unwrap_or_else(|| json!({}));
                Answer::Start {
                    tag: (),
                    call: Box::pin(async move {
                        let outcome = handlers.call(&ctx, &parent, child, &id, args).await;
                        guest_result(&id, outcome)
                    }),
                }
            }
            other => Answer::Now(Err(HostCallError::new(format!(
                "unknown bridge function {other}"
            )))),
        }
    }
}

/// The one place a bridged call's outcome becomes what the body sees: the
/// value, or an `Error` whose `code` is the outcome's status (`failed`,
/// `not_found`, `blocked`, `aborted`).
fn guest_result(id: &str, outcome: CallOutcome) -> CallResult {
    match outcome {
        CallOutcome::Ok(value) => Ok(value),
        other => {
            let detail = other.to_json(id);
            let message = detail["error"]
                .as_str()
                .unwrap_or("tool call failed")
                .to_owned();
            Err(HostCallError::new(message).with_code(other.status()))
        }
    }
}

/// Runs a `tool_search_code` body: `{value, console}` or `{error, code,
/// console}`.
pub(crate) async fn run_code(
    sandbox: &CodeSandbox,
    handlers: &Arc<Handlers>,
    ctx: &RunContext,
    call_id: &str,
    code: &str,
    timeout: Duration,
) -> Value {
    let limits = DriveLimits {
        deadline: Instant::now() + timeout,
        cancel: ctx.cancel.clone(),
    };
    let mut host = BodyHost {
        handlers: handlers.clone(),
        ctx: ctx.clone(),
        parent: call_id.to_owned(),
        nested: 0,
    };
    let mut calls = Calls::new(MAX_CONCURRENT_CALLS);
    let driven = sandbox
        .engine
        .drive(
            &mut host,
            &mut calls,
            Machine::Fresh(code.to_owned()),
            &limits,
        )
        .await;
    // Calls the body started but did not await end with it.
    drop(calls);
    let console = driven.output;
    match driven.halt {
        Halt::Completed(value) => {
            json!({"value": talon_tools::runner::cap(value, MAX_VALUE_BYTES), "console": console})
        }
        // A body that runs out of time, waiting or computing.
        Halt::Suspended { .. } | Halt::Failed(SandboxError::Timeout(_)) => json!({
            "error": format!("tool_search_code exceeded its time limit of {} ms", timeout.as_millis()),
            "code": "timeout",
            "console": console,
        }),
        Halt::Failed(SandboxError::Aborted) => {
            json!({"error": "the run was aborted", "code": "aborted", "console": console})
        }
        Halt::Failed(error) => failure(&error, console),
    }
}

fn failure(error: &SandboxError, console: Vec<ConsoleOutput>) -> Value {
    let code = error.code().map(|c| c.as_str());
    json!({"error": error.to_string(), "code": code, "console": console})
}
