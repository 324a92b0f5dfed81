//! `talon exec`: one cell in a fresh VM, its result as JSON on stdout.
//!
//! Exit status: 0 completed, 1 failed, 2 bad usage.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use talon_protocol::{CellResult, CodeModeErrorCode};
use talon_sandbox::{
    CellStatus, HostFunctions, Limits, Sandbox, SandboxConfig, SandboxError, VmOptions,
};

/// Arguments of `talon exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The cell: the body of an async function (`return` gives the value).
    #[arg(long, conflicts_with = "file")]
    code: Option<String>,
    /// Read the cell from this file (`-` for standard input).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Wall-clock limit, clamped to 100..=60000.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// QuickJS heap limit, clamped to 1 MiB..=1 GiB.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    memory_limit_bytes: usize,
    /// Output limit, clamped to 1 KiB..=10 MiB.
    #[arg(long, default_value_t = 64 * 1024)]
    max_output_bytes: usize,
}

pub fn run(args: ExecArgs) -> ExitCode {
    let code = match read_code(&args) {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "talon exec: {message}");
            return ExitCode::from(2);
        }
    };
    let limits = Limits {
        timeout: Duration::from_millis(args.timeout_ms),
        memory_limit_bytes: args.memory_limit_bytes,
        max_output_bytes: args.max_output_bytes,
        ..Limits::default()
    }
    .clamped();
    let result = execute(&code, limits);
    let ok = matches!(result, CellResult::Completed { .. });
    let line = serde_json::to_string(&result).unwrap_or_else(|e| {
        format!(
            r#"{{"status":"failed","error":"unserializable result: {e}","code":"internal_error"}}"#
        )
    });
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}").is_err() {
        return ExitCode::from(1);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn read_code(args: &ExecArgs) -> Result<String, String> {
    match (&args.code, &args.file) {
        (Some(code), _) => Ok(code.clone()),
        (None, Some(path)) if path.as_os_str() == "-" => read_stdin(),
        (None, Some(path)) => {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
        }
        (None, None) => read_stdin(),
    }
}

fn read_stdin() -> Result<String, String> {
    let mut code = String::new();
    std::io::stdin()
        .read_to_string(&mut code)
        .map_err(|e| format!("reading standard input: {e}"))?;
    Ok(code)
}

fn execute(code: &str, limits: Limits) -> CellResult {
    let sandbox = match Sandbox::new(SandboxConfig::default()) {
        Ok(sandbox) => sandbox,
        Err(e) => return failed(&e, Vec::new()),
    };
    let mut vm = match sandbox.create_vm(
        VmOptions {
            limits,
            ..VmOptions::default()
        },
        HostFunctions::new(),
    ) {
        Ok(vm) => vm,
        Err(e) => return failed(&e, Vec::new()),
    };
    let status = vm.run_cell(code);
    let output = vm.take_output();
    match status {
        Ok(CellStatus::Completed(value)) => CellResult::Completed { value, output },
        // No asynchronous host functions are registered, so nothing can wait.
        Ok(CellStatus::Waiting(_)) => failed(&SandboxError::Stalled, output),
        Err(e) => failed(&e, output),
    }
}

fn failed(error: &SandboxError, output: Vec<talon_protocol::CodeModeOutput>) -> CellResult {
    let (stack, code) = match error {
        SandboxError::Guest(e) => (e.stack.clone(), None),
        other => (
            None,
            other.code().filter(|c| *c != CodeModeErrorCode::Unknown),
        ),
    };
    CellResult::Failed {
        error: error.to_string(),
        code,
        stack,
        output,
    }
}
