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
    let count = |s: Severity| found.iter().filter(|d| d.severity == s).count();
    let (errors, warnings, notes) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Note),
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

/// `FILE:LINE:COLUMN: severity[code]: key: message`.
fn located(file: &std::path::Path, d: &Diagnostic) -> String {
    if d.position.is_some() {
        format!("{}:{d}", file.display())
    } else {
        format!("{}: {d}", file.display())
    }
}
