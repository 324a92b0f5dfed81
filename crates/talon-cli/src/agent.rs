//! `talon agent -m "..."`: one turn of the configured agent against its
//! provider. Streams the answer to stdout, shows each tool call on stderr
//! (nested calls indented under their cell), and ends with a summary line
//! (turns, tool calls, tokens, time). `--mock-script FILE` serves the
//! model from a scripted mock on 127.0.0.1 instead (demos, tests).
//! `--gateway URL` runs the same turn on a gateway through the App SDK,
//! with the same display ([`crate::agent_remote`]).
//!
//! Exit status: 0 completed, 1 failed / cancelled / timed out, 2 usage.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::bounded::SessionKey;

use clap::Args;
use serde_json::Value;
use talon_config::Config;
use talon_protocol::gateway::RunStatus;
use talon_protocol::{Event, EventData};
use talon_runtime::cells::{SnapshotStore, open_file_store};
use talon_runtime::{
    Conversation, Host, ModelRoute, RunEmitter, RunHooks, RunIds, RunSink, RunSpec, Start,
};
use talon_tools::{Approver, RunContext};

/// Arguments of `talon agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The user's message.
    #[arg(short, long)]
    pub(crate) message: String,
    /// The config file (else `$TALON_CONFIG`, else `~/.talon/talon.json5`).
    #[arg(long, conflicts_with = "gateway")]
    config: Option<PathBuf>,
    /// The agent.
    #[arg(long, default_value = "main")]
    pub(crate) agent: String,
    /// Serve the model from this mock script instead of the provider
    /// (builds with the `mock-model` feature).
    #[cfg(feature = "mock-model")]
    #[arg(long, value_name = "FILE", conflicts_with = "gateway")]
    mock_script: Option<PathBuf>,
    /// The workspace the core tools work in (else the agent's `workspace`,
    /// else `<state dir>/workspace`).
    #[arg(long, conflicts_with = "gateway")]
    workspace: Option<PathBuf>,
    /// Run the turn on this gateway, through the App SDK, instead of in
    /// this process (the gateway's config, models and policy apply).
    #[arg(long, value_name = "URL")]
    pub(crate) gateway: Option<String>,
    /// The gateway's token (else `$TALON_TOKEN`, else the admin token in
    /// the state directory).
    #[arg(long, requires = "gateway")]
    pub(crate) token: Option<String>,
}

pub(crate) fn usage(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon agent: {message}");
    ExitCode::from(2)
}

pub fn run(args: AgentArgs) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) if args.gateway.is_some() => {
            runtime.block_on(crate::agent_remote::run_remote(args))
        }
        Ok(runtime) => runtime.block_on(run_async(args)),
        Err(e) => usage(&format!("starting the async runtime: {e}")),
    }
}

/// Why a call the policy asks about is refused without a terminal; the
/// same words whether the run is in this process or on a gateway.
pub(crate) const NO_TERMINAL: &str = "no terminal to ask on (stdin is not a terminal)";

/// A refusal as the model reads it, as the gateway words it.
fn denied(entry: &talon_tools::CatalogEntry, reason: &str) -> talon_tools::ApprovalDecision {
    talon_tools::ApprovalDecision::Denied(format!(
        "the call of {} was denied: {reason}",
        entry.tool.name
    ))
}

/// Refuses what the policy would ask a person about: there is no one.
struct NoTerminal;

impl Approver for NoTerminal {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a talon_tools::CatalogEntry,
        _: &'a talon_tools::ToolCall,
    ) -> talon_tools::BoxFuture<'a, talon_tools::ApprovalDecision> {
        let decision = denied(entry, NO_TERMINAL);
        Box::pin(async move { decision })
    }
}

/// Asks on the terminal.
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a talon_tools::CatalogEntry,
        call: &'a talon_tools::ToolCall,
    ) -> talon_tools::BoxFuture<'a, talon_tools::ApprovalDecision> {
        let prompt = format!(
            "approve {} ({}) {}? [y/N] ",
            entry.tool.name,
            entry.id,
            call.args.to_string().chars().take(300).collect::<String>()
        );
        Box::pin(async move {
            let answer = tokio::task::spawn_blocking(move || {
                let mut stderr = std::io::stderr();
                let _ = write!(stderr, "{prompt}");
                let _ = stderr.flush();
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .map(|_| line)
                    .unwrap_or_default()
            })
            .await
            .unwrap_or_default();
            if matches!(answer.trim(), "y" | "Y" | "yes") {
                talon_tools::ApprovalDecision::Approved
            } else {
                denied(entry, "the user declined")
            }
        })
    }
}

/// Prints the stream as it happens.
struct Printer {
    started: Instant,
}

impl RunSink for Printer {
    fn emit(&self, event: Event) {
        print_event(&event, self.started);
    }
}

/// Asks on the terminal, or refuses without one; only what is asked is an
/// approval (`approval.requested`, then `approval.resolved`): what the
/// policy decides by itself is not.
struct Terminal;

impl RunHooks for Terminal {
    fn asker(&self, events: &RunEmitter) -> Arc<dyn Approver> {
        let ask: Arc<dyn Approver> = if std::io::stdin().is_terminal() {
            Arc::new(TerminalApprover)
        } else {
            Arc::new(NoTerminal)
        };
        events.reporting(ask)
    }
}

/// The terminal display of one event, the same for a run in this process
/// and one on a gateway: the answer's text to stdout, tool calls and the
/// summary line to stderr.
pub(crate) fn print_event(event: &Event, started: Instant) {
    {
        let mut stdout = std::io::stdout();
        let mut stderr = std::io::stderr();
        let indent = |parent: &Option<String>| if parent.is_some() { "    " } else { "" };
        let clip =
            |value: &Value, max: usize| value.to_string().chars().take(max).collect::<String>();
        let _ = match event.typed() {
            Some(EventData::AssistantDelta(delta)) => {
                write!(stdout, "{}", delta.text).and_then(|()| stdout.flush())
            }
            Some(EventData::ToolCallStarted(call)) => writeln!(
                stderr,
                "{}→ {} {}",
                indent(&call.parent_id),
                call.name,
                call.arguments.map(|a| clip(&a, 160)).unwrap_or_default()
            ),
            Some(EventData::ToolCallCompleted(call)) => writeln!(
                stderr,
                "{}  ✓ {} ({} ms)",
                indent(&call.parent_id),
                call.name,
                call.duration_ms
            ),
            Some(EventData::ToolCallFailed(call)) => writeln!(
                stderr,
                "{}  ✗ {}: {}",
                indent(&call.parent_id),
                call.name,
                clip(&call.error, 300)
            ),
            Some(EventData::ApprovalResolved(resolved)) => writeln!(
                stderr,
                "  approval {}",
                serde_json::to_value(resolved.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
            Some(
                EventData::RunCompleted(end)
                | EventData::RunFailed(end)
                | EventData::RunCancelled(end)
                | EventData::RunTimedOut(end),
            ) => {
                let _ = writeln!(stdout);
                if let Some(error) = &end.error {
                    let _ = writeln!(stderr, "error: {error}");
                }
                let tokens = |n: Option<u64>| n.unwrap_or(0);
                writeln!(
                    stderr,
                    "[{}] turns {} · tool calls {} · tokens {} in / {} out · {:.2} s",
                    event.kind.as_str(),
                    end.turns,
                    end.tool_calls,
                    tokens(end.usage.input_tokens),
                    tokens(end.usage.output_tokens),
                    started.elapsed().as_secs_f64()
                )
            }
            _ => Ok(()),
        };
    }
}

async fn run_async(args: AgentArgs) -> ExitCode {
    let started = Instant::now();
    let config = match Config::load(args.config.as_deref()) {
        Ok(config) => config,
        Err(e) => return usage(&e.to_string()),
    };
    if let Err(e) = config.check_at_start() {
        return usage(&e.to_string());
    }
    // The same agents the gateway serves: the config's list, and `main`.
    let known_agent = config
        .document()
        .is_ok_and(|d| d.agent(&args.agent).is_some());
    if args.agent != "main" && !known_agent {
        let declared = crate::gateway::config_agents(&config);
        let mut known: Vec<&str> = declared.iter().map(|a| a.id.as_str()).collect();
        if !known.contains(&"main") {
            known.insert(0, "main");
        }
        return usage(&format!(
            "agent {:?} not found: {} declares {} (agents.list)",
            args.agent,
            config.shown_path().display(),
            known.join(", ")
        ));
    }
    #[cfg(feature = "mock-model")]
    let script = args.mock_script.as_deref();
    #[cfg(not(feature = "mock-model"))]
    let script = None;
    let mock = match crate::mock::start(script).await {
        Ok(mock) => mock,
        Err(message) => return usage(&message),
    };
    let route = ModelRoute {
        base_url: mock.as_ref().map(crate::mock::url),
    };
    // `tools.approvals`, as the gateway reads it: what the policy sends
    // to a person is asked on the terminal, or denied without one.
    let host = match Host::new(Arc::new(config), route) {
        Ok(host) => host,
        Err(e) => return usage(&e.to_string()),
    };
    let approvals = host.approvals();
    let spec = RunSpec {
        clock: talon_protocol::clock::Clock::system(),
        ids: RunIds {
            agent: AgentId::new(args.agent.clone()),
            session: SessionId::new("cli"),
            run: RunId::new(format!("run_{}", std::process::id())),
            session_key: SessionKey::new(format!("agent:{}:cli", args.agent)),
            channel: Some("cli".into()),
        },
        cancel: Default::default(),
        sink: Arc::new(Printer { started }),
        approvals,
        hooks: Arc::new(Terminal),
        cells: Box::new(|limits| {
            let dir = talon_config::state_dir().join("code-mode").join("cells");
            open_file_store(&dir, limits)
                .map(|store| Arc::new(store) as Arc<dyn SnapshotStore>)
                .map_err(|e| format!("state directory {}: {e}", dir.display()).into())
        }),
        workspace: args.workspace.clone().map_or(
            talon_runtime::Workspace::Agent,
            talon_runtime::Workspace::At,
        ),
        timeout: None,
        client_tools: Vec::new(),
        shell: Default::default(),
        redact: Vec::new(),
        history: Conversation::default(),
        // A one-shot run has no session: no earlier run left calls.
        settled: Vec::new(),
        start: Start::Message(args.message.clone()),
    };
    let run = match host.start(spec).await {
        Ok(run) => run,
        Err(e) => return usage(&e.to_string()),
    };
    let result = run.finish().await;
    host.shutdown().await;
    if result.status == RunStatus::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
