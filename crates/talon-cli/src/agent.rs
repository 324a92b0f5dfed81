//! `talon agent -m "..."`: one turn of the configured agent against its
//! provider. Streams the answer to stdout, shows each tool call on stderr
//! (nested calls indented under their cell), and ends with a summary line
//! (turns, tool calls, tokens, time). `--mock-script FILE` serves the
//! model from a scripted mock on 127.0.0.1 instead (demos, tests).
//!
//! Exit status: 0 completed, 1 failed / cancelled / timed out, 2 usage.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use serde_json::Value;
use talon_agent::{
    AgentRun, ApprovalEvents, EventSink, NestedCallEvents, RunEvents, RunOptions, RunStatus,
    UpdateEvents,
};
use talon_codemode::{FileStore, SnapshotStore};
use talon_config::Config;
use talon_core_tools::{CoreTools, PolicyApprover};
use talon_protocol::{Event, EventData};
use talon_provider::openai::OpenAiCompatible;
use talon_provider::{ModelRef, ProviderConfig, parse_providers};
use talon_runtime::{RunTools, SurfaceParts, SurfacePlan};
#[cfg(feature = "mock-model")]
use talon_testing::{MockModel, Script};
use talon_tools::{Approver, NoUpdates, RunContext, RunScope, ToolRunner};

/// Arguments of `talon agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The user's message.
    #[arg(short, long)]
    message: String,
    /// The config file (else `$TALON_CONFIG`, else `~/.talon/talon.json5`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The agent.
    #[arg(long, default_value = "main")]
    agent: String,
    /// Serve the model from this mock script instead of the provider
    /// (builds with the `mock-model` feature).
    #[cfg(feature = "mock-model")]
    #[arg(long, value_name = "FILE")]
    mock_script: Option<PathBuf>,
    /// The workspace the core tools work in (else the agent's `workspace`,
    /// else `<state dir>/workspace`).
    #[arg(long)]
    workspace: Option<PathBuf>,
}

fn usage(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon agent: {message}");
    ExitCode::from(2)
}

pub fn run(args: AgentArgs) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run_async(args)),
        Err(e) => usage(&format!("starting the async runtime: {e}")),
    }
}

/// A scripted mock model serving this process (`--mock-script`).
#[cfg(feature = "mock-model")]
type Mock = MockModel;
/// Without the `mock-model` feature there is no mock.
#[cfg(not(feature = "mock-model"))]
type Mock = std::convert::Infallible;

/// Starts the mock model of `--mock-script`, if one was given.
#[cfg(feature = "mock-model")]
async fn mock(args: &AgentArgs) -> Result<Option<Mock>, String> {
    let Some(path) = &args.mock_script else {
        return Ok(None);
    };
    let text = talon_fs::read_capped_to_string(
        path,
        talon_config::MAX_CONFIG_BYTES,
        talon_fs::Symlinks::Follow,
    )
    .map_err(|e| e.to_string())?;
    let value: Value =
        talon_config::parse_json5(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let script = Script::from_json(&value).map_err(|e| e.to_string())?;
    Ok(Some(
        MockModel::start(script).await.map_err(|e| e.to_string())?,
    ))
}

/// Built without the `mock-model` feature: never a mock.
#[cfg(not(feature = "mock-model"))]
async fn mock(_: &AgentArgs) -> Result<Option<Mock>, String> {
    Ok(None)
}

/// The mock's address.
#[cfg(feature = "mock-model")]
fn mock_url(mock: &Mock) -> String {
    mock.base_url()
}

/// Without the feature there is no mock to address.
#[cfg(not(feature = "mock-model"))]
fn mock_url(mock: &Mock) -> String {
    match *mock {}
}

/// The model: the agent's `model.primary` at its provider, or the mock.
async fn provider(
    config: &Config,
    args: &AgentArgs,
) -> Result<(OpenAiCompatible, String, Option<Mock>), String> {
    let lookup = |name: &str| std::env::var(name).ok();
    let providers =
        parse_providers(config.get("models.providers"), &lookup).map_err(|e| e.to_string())?;
    let primary = config
        .agent(&args.agent)
        .and_then(|a| a.get("model"))
        .or_else(|| config.get("agents.defaults.model"))
        .and_then(|m| m.get("primary").or(Some(m)))
        .and_then(Value::as_str)
        .map(|s| ModelRef::parse(s, "agents.defaults.model.primary"))
        .transpose()
        .map_err(|e| e.to_string())?;
    let mock = mock(args).await?;
    let (mut provider, model) = match (primary, &mock) {
        (Some(reference), _) => {
            let provider = providers
                .into_iter()
                .find(|p| p.id == reference.provider)
                .ok_or_else(|| format!("agents.defaults.model.primary names provider {:?}, which models.providers does not define", reference.provider))?;
            (provider, reference.model)
        }
        (None, Some(_)) => (
            ProviderConfig {
                id: "mock".into(),
                base_url: String::new(),
                api_key: None,
                api: "openai-completions".into(),
                models: Vec::new(),
                timeout: std::time::Duration::from_secs(120),
                max_retries: 3,
            },
            "mock-model".to_owned(),
        ),
        (None, None) => return Err("no model: set agents.defaults.model.primary (\"provider/model\") or pass --mock-script".into()),
    };
    if let Some(mock) = &mock {
        provider.base_url = mock_url(mock);
    }
    let client = OpenAiCompatible::new(provider).map_err(|e| e.to_string())?;
    Ok((client, model, mock))
}

/// Asks on the terminal.
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a talon_tools::CatalogEntry,
        args: &'a Value,
    ) -> talon_tools::BoxFuture<'a, talon_tools::ApprovalDecision> {
        let prompt = format!(
            "approve {} {}? [y/N] ",
            entry.id,
            args.to_string().chars().take(300).collect::<String>()
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
                talon_tools::ApprovalDecision::Denied("the user declined".into())
            }
        })
    }
}

/// Prints the stream as it happens.
struct Printer {
    started: Instant,
}

impl EventSink for Printer {
    fn emit(&self, event: Event) {
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
                    self.started.elapsed().as_secs_f64()
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
    config.warn_unknown();
    let (client, model, _mock) = match provider(&config, &args).await {
        Ok(p) => p,
        Err(message) => return usage(&message),
    };
    let workspace = args
        .workspace
        .clone()
        .or_else(|| {
            config
                .agent(&args.agent)
                .and_then(|a| a["workspace"].as_str())
                .map(PathBuf::from)
        })
        .or_else(|| {
            config
                .get("agents.defaults.workspace")
                .and_then(Value::as_str)
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| talon_config::state_dir().join("workspace"));
    let core = match CoreTools::new(&workspace) {
        Ok(core) => core,
        Err(e) => return usage(&format!("workspace {}: {e}", workspace.display())),
    };
    let run_id = format!("run_{}", std::process::id());
    let scope = RunScope {
        agent_id: args.agent.clone(),
        session_id: "cli".into(),
        run_id,
    };
    let plan = match SurfacePlan::from_config(&config, &args.agent) {
        Ok(plan) => plan,
        Err(e) => return usage(&e.to_string()),
    };
    // The one sandbox of the process, if a surface may need it. Starting
    // it and the MCP servers are independent: overlap them.
    let engine = plan
        .needs_sandbox()
        .then(|| tokio::task::spawn_blocking(talon_runtime::engine::start));
    let tools = match RunTools::from_config(&config, &args.agent, &scope, Some(core)).await {
        Ok(tools) => tools,
        Err(e) => return usage(&e.to_string()),
    };
    // The model's first turn takes seconds: load the embedding table and
    // embed the catalog meanwhile, so that the first search does not.
    if plan.searches() {
        let catalog = tools.catalog.clone();
        drop(tokio::task::spawn_blocking(move || catalog.warm_search()));
    }
    let mut ctx = RunContext {
        scope,
        session_key: format!("agent:{}:cli", args.agent),
        sender: None,
        channel: Some("cli".into()),
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
    };
    let events = Arc::new(RunEvents::new(Arc::new(Printer { started }), &ctx));
    ctx.updates = Arc::new(UpdateEvents(events.clone()));
    let policy: Arc<dyn Approver> = match config.get("tools.approvals").and_then(Value::as_str) {
        Some("allow") => Arc::new(PolicyApprover::AllowAll),
        Some("deny") => Arc::new(PolicyApprover::DenyAll),
        _ if std::io::stdin().is_terminal() => Arc::new(TerminalApprover),
        _ => Arc::new(PolicyApprover::DenyAll),
    };
    let runner = Arc::new(
        ToolRunner::new(tools.catalog.clone(), tools.executor.clone())
            .with_approver(Arc::new(ApprovalEvents::new(policy, events.clone())))
            .with_observer(Arc::new(NestedCallEvents(events.clone()))),
    );
    let engine = match engine {
        Some(task) => Some(match task.await {
            Ok(started) => started.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }),
        None => None,
    };
    let parts = SurfaceParts {
        runner: runner.clone(),
        ctx: ctx.clone(),
        mcp: tools.mcp.clone(),
        engine,
        cells: Box::new(|limits| {
            let dir = talon_config::state_dir().join("code-mode").join("cells");
            FileStore::open(&dir, limits)
                .map(|store| Arc::new(store) as Arc<dyn SnapshotStore>)
                .map_err(|e| format!("state directory {}: {e}", dir.display()))
        }),
    };
    let surface = match talon_runtime::surface::build(plan, parts) {
        Ok(surface) => surface,
        Err(e) => return usage(&e.to_string()),
    };
    let agent_run = AgentRun {
        provider: &client,
        surface,
        ctx,
        events,
        options: RunOptions {
            model,
            ..RunOptions::default()
        },
    };
    let result = agent_run.run(Vec::new(), &args.message).await;
    tools.shutdown().await;
    if result.status == RunStatus::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
