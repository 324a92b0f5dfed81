//! `talon exec`: one Code Mode cell against the tools of a config file,
//! its `CodeModeResult` as JSON on stdout. `--wait RUN_ID` resumes a
//! suspended cell (from this process or an earlier one: cells live under
//! the state directory).
//!
//! Exit status: 0 completed, 1 failed, 2 bad usage or config, 3 waiting.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use clap::Args;
use serde_json::{Value, json};
use talon_codemode::config as code_mode;
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, NamespaceRegistry, RunSetup, RuntimeUnavailable,
    StoreLimits,
};
use talon_config::Config;
use talon_protocol::CodeModeResult;
use talon_tools::{NoUpdates, RunContext, RunScope, ToolRunner};

use talon_runtime::RunTools;

/// Arguments of `talon exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The cell: the body of an async function (`return` gives the value).
    #[arg(long, conflicts_with_all = ["file", "wait"])]
    code: Option<String>,
    /// Read the cell from this file (`-` for standard input).
    #[arg(long, conflicts_with = "wait")]
    file: Option<PathBuf>,
    /// `javascript` (default) or `typescript`.
    #[arg(long)]
    language: Option<String>,
    /// Resume the suspended cell with this runId instead of running one.
    #[arg(long, value_name = "RUN_ID")]
    wait: Option<String>,
    /// The config file (else `$TALON_CONFIG`, else `~/.talon/talon.json5`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The agent whose tools and Code Mode settings apply.
    #[arg(long, default_value = "main")]
    agent: String,
    /// Wall-clock limit of this step (overrides `timeoutMs`; 100..=60000).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// QuickJS heap limit (overrides `memoryLimitBytes`).
    #[arg(long)]
    memory_limit_bytes: Option<u64>,
    /// Output limit (overrides `maxOutputBytes`).
    #[arg(long)]
    max_output_bytes: Option<u64>,
}

/// The session and run `talon exec` cells belong to, so that `--wait` from
/// another process is in scope.
const CLI_SESSION: &str = "cli";

pub fn run(args: ExecArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return usage(&format!("starting the async runtime: {e}")),
    };
    runtime.block_on(run_async(args))
}

fn usage(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon exec: {message}");
    ExitCode::from(2)
}

async fn run_async(args: ExecArgs) -> ExitCode {
    let config = match Config::load(args.config.as_deref()) {
        Ok(config) => config,
        Err(e) => return usage(&e.to_string()),
    };
    if let Err(e) = config.check_at_start() {
        return usage(&e.to_string());
    }
    let code_mode_config = match code_mode_config(&config, &args) {
        Ok(c) => c,
        Err(message) => return usage(&message),
    };
    let request = match (&args.wait, read_code(&args)) {
        (Some(run_id), _) => Request::Wait(run_id.clone()),
        (None, Ok(code)) => Request::Exec(code),
        (None, Err(message)) => return usage(&message),
    };
    let store_dir = talon_config::state_dir().join("code-mode").join("cells");
    let store = match talon_codemode::open_file_store(
        &store_dir,
        StoreLimits {
            max_snapshot_bytes: code_mode_config.max_snapshot_bytes,
            ..StoreLimits::default()
        },
    ) {
        Ok(store) => Arc::new(store),
        Err(e) => return usage(&format!("state directory {}: {e}", store_dir.display())),
    };
    let scope = RunScope {
        agent_id: AgentId::new(args.agent.clone()),
        session_id: SessionId::new(CLI_SESSION),
        run_id: RunId::new(CLI_SESSION),
    };
    let tools = match RunTools::from_config(&config, &args.agent, &scope, None).await {
        Ok(tools) => tools,
        Err(e) => return usage(&e.to_string()),
    };
    let started = talon_runtime::engine::start().map_err(RuntimeUnavailable::Sandbox);
    let result = match started.and_then(|engine| {
        CodeMode::with_engine(
            engine,
            CodeModeOptions {
                sandbox: Default::default(),
                store,
                namespaces: NamespaceRegistry::global().clone(),
            },
        )
    }) {
        Err(e) => CodeModeResult::Failed {
            error: e.to_string(),
            code: Some(talon_protocol::CodeModeErrorCode::RuntimeUnavailable),
            stack: None,
            output: Vec::new(),
            telemetry: Default::default(),
        },
        Ok(code_mode) => {
            let ctx = RunContext {
                scope,
                session_key: format!("agent:{}:{CLI_SESSION}", args.agent),
                sender: None,
                channel: Some("cli".into()),
                cancel: Default::default(),
                updates: Arc::new(NoUpdates),
                clock: talon_protocol::clock::Clock::system(),
            };
            let runner = Arc::new(ToolRunner::new(
                tools.catalog.clone(),
                tools.executor.clone(),
            ));
            let run = code_mode.start_run(RunSetup {
                config: code_mode_config,
                runner,
                ctx,
                mcp: tools.mcp.clone(),
                plugin_config: Value::Null,
                exec_hooks: Vec::new(),
                resume: Vec::new(),
            });
            match request {
                Request::Exec(code) => {
                    let mut input = json!({"code": code});
                    if let Some(language) = &args.language {
                        input["language"] = json!(language);
                    }
                    run.exec("cli", input).await
                }
                Request::Wait(run_id) => run.wait("cli", json!({"runId": run_id})).await,
            }
        }
    };
    tools.shutdown().await;
    print(&result)
}

enum Request {
    Exec(String),
    Wait(String),
}

fn print(result: &CodeModeResult) -> ExitCode {
    let line = serde_json::to_string(result).unwrap_or_else(|e| {
        format!(
            r#"{{"status":"failed","error":"unserializable result: {e}","code":"internal_error"}}"#
        )
    });
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}").is_err() {
        return ExitCode::from(1);
    }
    match result {
        CodeModeResult::Completed { .. } => ExitCode::SUCCESS,
        CodeModeResult::Waiting { .. } => ExitCode::from(3),
        _ => ExitCode::from(1),
    }
}

/// The agent's Code Mode settings (its limits apply even when Code Mode is
/// not enabled for model runs: `talon exec` runs cells by request), with
/// the flags on top.
fn code_mode_config(config: &Config, args: &ExecArgs) -> Result<CodeModeConfig, String> {
    let document = config.document().map_err(|e| e.to_string())?;
    let (global, agent) = document.tool(&args.agent, |t| t.code_mode.as_ref());
    let mut merged = code_mode::merge(&code_mode::section(global), &code_mode::section(agent));
    if let Some(ms) = args.timeout_ms {
        merged.timeout_ms = Some(ms);
    }
    if let Some(bytes) = args.memory_limit_bytes {
        merged.memory_limit_bytes = Some(bytes);
    }
    if let Some(bytes) = args.max_output_bytes {
        merged.max_output_bytes = Some(bytes);
    }
    Ok(CodeModeConfig::from_section(&merged))
}

fn read_code(args: &ExecArgs) -> Result<String, String> {
    match (&args.code, &args.file) {
        (Some(code), _) => Ok(code.clone()),
        (None, Some(path)) if path.as_os_str() == "-" => read_stdin(),
        (None, Some(path)) => {
            talon_fs::read_capped_to_string(path, MAX_CODE_FILE_BYTES, talon_fs::Symlinks::Follow)
                .map_err(|e| e.to_string())
        }
        (None, None) => read_stdin(),
    }
}

/// The most a cell file or standard input may hold; the cell's own
/// `maxSourceBytes` check (smaller by default) gives the precise error.
const MAX_CODE_FILE_BYTES: u64 = 64 << 20;

fn read_stdin() -> Result<String, String> {
    let mut code = String::new();
    std::io::stdin()
        .take(MAX_CODE_FILE_BYTES + 1)
        .read_to_string(&mut code)
        .map_err(|e| format!("reading standard input: {e}"))?;
    if code.len() as u64 > MAX_CODE_FILE_BYTES {
        return Err(format!(
            "standard input: larger than {MAX_CODE_FILE_BYTES} bytes"
        ));
    }
    Ok(code)
}
