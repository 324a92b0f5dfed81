//! `talon config`: the whole-file check of a config, and its JSON Schema.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use talon_config::Config;
use talon_config::check::{Diagnostic, Severity};

/// `talon config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file against its schema: unknown keys (with a
    /// did-you-mean), wrong types and values, and providers, models and
    /// agents cross-referenced. Exit 0 when it has no errors, 2 when it has.
    Check {
        /// The file (default: $TALON_CONFIG, else ~/.talon/talon.json5).
        file: Option<PathBuf>,
    },
    /// Print the config's JSON Schema (for editors).
    Schema,
}

/// Runs a `talon config` command.
pub fn run(command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Check { file } => check(file),
        ConfigCommand::Schema => {
            let text =
                serde_json::to_string_pretty(&talon_config::json_schema()).unwrap_or_default();
            let _ = writeln!(std::io::stdout(), "{text}");
            ExitCode::SUCCESS
        }
    }
}

fn check(file: Option<PathBuf>) -> ExitCode {
    let config = match Config::load(file.as_deref()) {
        Ok(config) => config,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "talon config check: {e}");
            return ExitCode::from(2);
        }
    };
    let shown = config.shown_path();
    let found = talon_config::check::check(&config);
    let mut out = std::io::stdout().lock();
    for d in &found {
        let _ = writeln!(out, "{}", located(&shown, d));
    }
    let (mut sandbox_warnings, mut sandbox_notes) = (0, 0);
    if !found.iter().any(|d| d.severity == Severity::Error) {
        (sandbox_warnings, sandbox_notes) = sandbox_report(&config, &shown, &mut out);
    }
    let count = |s: Severity| found.iter().filter(|d| d.severity == s).count();
    let (errors, warnings, notes) = (
        count(Severity::Error),
        count(Severity::Warning) + sandbox_warnings,
        count(Severity::Note) + sandbox_notes,
    );
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "{}: {}, {}, {}",
        shown.display(),
        plural(errors, "error"),
        plural(warnings, "warning"),
        plural(notes, "note")
    );
    if errors > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Says which sandbox mode is in force for commands (the default
/// agents'), probing this host as the gateway would; returns the number of
/// warnings (unsandboxed, or a sandbox this host cannot make) and notes
/// it printed.
fn sandbox_report(
    config: &Config,
    shown: &std::path::Path,
    out: &mut impl Write,
) -> (usize, usize) {
    let jails = match talon_runtime::Jails::from_config(config) {
        Ok(jails) => jails,
        Err(e) => {
            let _ = writeln!(
                out,
                "{}: warning: agents.defaults.sandbox: {e}",
                shown.display()
            );
            return (1, 0);
        }
    };
    let status = jails.defaults().status();
    let (mut warnings, mut notes) = (0, 0);
    let line = match status.mode {
        "bubblewrap" => {
            notes += 1;
            format!(
                "note[sandbox]: agents.defaults.sandbox: commands run sandboxed (bubblewrap, network {})",
                serde_json::to_value(status.network)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )
        }
        "off" => {
            warnings += 1;
            "warning[unsandboxed]: agents.defaults.sandbox.mode: \"off\": commands run unsandboxed, as the gateway's user".to_owned()
        }
        _ => {
            warnings += 1;
            format!(
                "warning[sandbox_unavailable]: agents.defaults.sandbox: this host cannot sandbox commands, so they are refused ({})",
                status.reason.unwrap_or_default()
            )
        }
    };
    let _ = writeln!(out, "{}: {line}", shown.display());
    if status.mode == "bubblewrap" && status.processes == Some("none") {
        warnings += 1;
        let _ = writeln!(
            out,
            "{}: warning[no_process_limit]: agents.defaults.sandbox.limits.processes: the gateway runs as root, which the kernel exempts from the process limit, and cannot make a pids cgroup: nothing holds a command's process count",
            shown.display()
        );
    }
    for note in jails.defaults().policy().ignored_keys() {
        notes += 1;
        let _ = writeln!(
            out,
            "{}: note: agents.defaults.sandbox.{note}",
            shown.display()
        );
    }
    (warnings, notes)
}

/// `FILE:LINE:COLUMN: severity[code]: key: message`.
fn located(file: &std::path::Path, d: &Diagnostic) -> String {
    if d.position.is_some() {
        format!("{}:{d}", file.display())
    } else {
        format!("{}: {d}", file.display())
    }
}
