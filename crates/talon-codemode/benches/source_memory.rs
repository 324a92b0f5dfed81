//! Host memory of one cell by source size: cells of 64 KiB up to the
//! default cap (`tools.codeMode.maxSourceBytes`, 1 MiB) and one byte over
//! it, JavaScript and TypeScript, realistic code and one long string
//! literal, each run through the whole `exec` path in a fresh child
//! process. Reports the child's peak RSS growth (VmHWM after the cell minus
//! VmHWM before it, with the runtime already warm) as a multiple of the
//! source size, and the guest's wasm linear memory is counted in RSS only
//! as far as it is touched (it is bounded by the sandbox's memory limit).
//!
//! `host` rows run only the host's input checks and TypeScript strip
//! (`ExecInput::parse_for` + `javascript()`); `exec` rows run the whole
//! `exec` path, whose RSS also holds the guest's wasm linear memory (the
//! cell copied in, QuickJS's parse and bytecode), bounded by the
//! sandbox's memory limit.
//!
//! `cargo bench -p talon-codemode --bench source_memory`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::process::Command;
use std::sync::Arc;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use serde_json::{Value, json};
use talon_codemode::config::DEFAULT_MAX_SOURCE_BYTES;
use talon_codemode::{
    CodeMode, CodeModeConfig, CodeModeOptions, MemoryStore, NamespaceRegistry, RunSetup,
    StoreLimits,
};
use talon_protocol::CodeModeResult;
use talon_tools::{
    BoxFuture, CatalogBuilder, CatalogEntry, NoUpdates, RunContext, RunScope, ToolCall,
    ToolExecutor, ToolPolicy, ToolRunner,
};

struct Nothing;

impl ToolExecutor for Nothing {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        _: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, talon_tools::ToolError>> {
        Box::pin(async { Ok(Value::Null) })
    }
}

/// `VmHWM` (peak RSS) in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Resets `VmHWM` to the current RSS (Linux 4.0+).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A realistic cell of about `size` bytes.
fn realistic(size: usize, typescript: bool) -> String {
    let mut code = String::from("const out = [];\n");
    let mut i = 0;
    while code.len() < size.saturating_sub(500) {
        if typescript {
            code.push_str(&format!(
                "interface Row{i} {{ id: number; name: string; tags?: string[] }}\n\
                 function pick{i}(rows: Row{i}[], min: number): Row{i}[] {{\n  \
                 return rows.filter((r: Row{i}) => r.id > min && r.name !== \"x{i}\").map((r) => ({{ ...r, tags: r.tags ?? [] }}));\n}}\n\
                 out.push(pick{i}([{{ id: {i}, name: \"row {i}\" }}], {i} - 1).length as number);\n"
            ));
        } else {
            code.push_str(&format!(
                "function pick{i}(rows, min) {{\n  \
                 return rows.filter((r) => r.id > min && r.name !== \"x{i}\").map((r) => ({{ ...r, tags: r.tags ?? [] }}));\n}}\n\
                 out.push(pick{i}([{{ id: {i}, name: \"row {i}\" }}], {i} - 1).length);\n"
            ));
        }
        i += 1;
    }
    let tail = "return out.length;\n";
    code.push_str(&" ".repeat(size.saturating_sub(code.len() + tail.len())));
    code.push_str(tail);
    code
}

/// One string literal making up almost all of `size` bytes.
fn long_string(size: usize, typescript: bool) -> String {
    let decl = if typescript {
        "const s: string = \""
    } else {
        "const s = \""
    };
    let tail = "\";\nreturn s.length;\n";
    let body = "x".repeat(size.saturating_sub(decl.len() + tail.len()));
    format!("{decl}{body}{tail}")
}

fn child(mode: &str, kind: &str, language: &str, size: usize) {
    let typescript = language == "typescript";
    let code = match kind {
        "realistic" => realistic(size, typescript),
        _ => long_string(size, typescript),
    };
    if mode == "host" {
        // The host's own checks and strip, without the sandbox.
        let args = json!({"code": code, "language": language});
        let source = code.len();
        drop(code);
        reset_peak();
        let before = peak_rss();
        let outcome = match talon_codemode::ExecInput::parse_for(&args, &CodeModeConfig::default())
        {
            Ok(input) => match input.javascript() {
                Ok(js) => format!("ok:{}", js.len()),
                Err(e) => format!("failed:{}", e.code.as_str()),
            },
            Err(e) => format!("failed:{}", e.code.as_str()),
        };
        let after = peak_rss();
        println!("{source} {} {outcome}", after.saturating_sub(before));
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let code_mode = CodeMode::new(CodeModeOptions {
        sandbox: Default::default(),
        store: Arc::new(MemoryStore::new(StoreLimits::default())),
        namespaces: Arc::new(NamespaceRegistry::new()),
    })
    .unwrap();
    let scope = RunScope {
        agent_id: AgentId::new("main"),
        session_id: SessionId::new("s"),
        run_id: RunId::new("r"),
    };
    let catalog = CatalogBuilder::new(scope.clone())
        .core(Vec::new())
        .build(&ToolPolicy::new())
        .unwrap();
    let ctx = RunContext {
        scope,
        session_key: "k".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    };
    let config = CodeModeConfig {
        timeout: std::time::Duration::from_secs(60),
        ..CodeModeConfig::default()
    };
    let run = code_mode.start_run(RunSetup {
        config,
        runner: Arc::new(ToolRunner::new(Arc::new(catalog), Arc::new(Nothing))),
        ctx,
        mcp: None,
        plugin_config: json!({}),
        exec_hooks: Vec::new(),
        resume: Vec::new(),
    });
    // Warm the runtime (engine, image, first VM) so only the cell counts.
    let warm = runtime.block_on(run.exec("warm", json!({"code": "return 1"})));
    assert!(matches!(warm, CodeModeResult::Completed { .. }), "{warm:?}");
    let args = json!({"code": code, "language": language});
    let source = code.len();
    drop(code);
    reset_peak();
    let before = peak_rss();
    let result = runtime.block_on(run.exec("cell", args));
    let after = peak_rss();
    let outcome = match &result {
        CodeModeResult::Completed { .. } => "completed".to_owned(),
        CodeModeResult::Failed { code, .. } => {
            format!("failed:{}", code.map_or("?", |c| c.as_str()))
        }
        _ => "other".to_owned(),
    };
    println!("{source} {} {outcome}", after.saturating_sub(before));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        child(&args[2], &args[3], &args[4], args[5].parse().unwrap());
        return;
    }
    println!(
        "{:<5} {:<10} {:<10} {:>9} {:>11} {:>8}  outcome",
        "part", "cell", "language", "source", "peak +RSS", "multiple"
    );
    for mode in ["host", "exec"] {
        let cap = DEFAULT_MAX_SOURCE_BYTES;
        for kind in ["realistic", "string"] {
            for language in ["javascript", "typescript"] {
                for size in [64 << 10, 256 << 10, 512 << 10, cap, cap + 1] {
                    let output = Command::new(std::env::current_exe().unwrap())
                        .args(["child", mode, kind, language, &size.to_string()])
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&output.stdout);
                    let Some(line) = stdout.lines().last() else {
                        println!("{mode:<5} {kind:<10} {language:<10} {size:>9} child failed");
                        continue;
                    };
                    let mut fields = line.split_whitespace();
                    let source: usize = fields.next().unwrap().parse().unwrap();
                    let growth: usize = fields.next().unwrap().parse().unwrap();
                    let outcome = fields.next().unwrap_or("");
                    println!(
                        "{mode:<5} {kind:<10} {language:<10} {source:>9} {:>8} KiB {:>7.1}x  {outcome}",
                        growth >> 10,
                        growth as f64 / source as f64
                    );
                }
            }
        }
    }
}
