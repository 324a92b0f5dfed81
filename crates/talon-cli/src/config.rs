//! `talon config`: the whole-file check of a config, its JSON Schema, and
//! one value read (`get`) or edited in place (`set`, `unset`;
//! `talon_config::edit`): the edited file is written only when it passes
//! the same check, else the findings are printed and the file is left as
//! it was. Exit status: 0 done; 1 `get` or `unset` of a path that is not
//! set (or that goes through a value that holds no keys); 2 a bad path or
//! value, a file that cannot be read or edited, or an edit the check
//! refuses.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use talon_config::check::{Diagnostic, Severity};
use talon_config::edit::{Change, ConfigPath, EditError};
use talon_config::{Config, ConfigError};

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
    /// Print the value at PATH as JSON (exit 1 when it is not set).
    ///
    /// PATH is keys separated by dots; `[N]` (or `.N`) indexes an array
    /// and `["key"]` holds a key with dots in it:
    /// `tools.codeMode.timeoutMs`, `agents.list[0].id`,
    /// `models.providers["my.host"].apiKey`.
    Get {
        /// The dotted path.
        path: String,
        /// The config file (default: $TALON_CONFIG, else ~/.talon/talon.json5).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Set the value at PATH, editing the config file in place.
    ///
    /// Only that value's text changes (comments, layout and quoting
    /// elsewhere stay); a missing key is added to the innermost object
    /// there is, creating the objects between (an array takes a new item
    /// at its end only). The file is written only if `talon config check`
    /// would accept it (no error, no new unknown key); a missing file is
    /// created.
    Set {
        /// The dotted path (see `talon config get --help`).
        path: String,
        /// JSON5 (`true`, `12`, `"text"`, `{a: 1}`, `[1, 2]`); anything else
        /// is taken as a string (`local/mock`), unless it starts with `{`,
        /// `[` or a quote.
        #[arg(allow_hyphen_values = true)]
        value: String,
        /// Refuse a VALUE that is not JSON5 instead of taking it as a string.
        #[arg(long, alias = "json")]
        strict_json: bool,
        /// The config file (default: $TALON_CONFIG, else ~/.talon/talon.json5).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Remove the key at PATH, editing the config file in place.
    ///
    /// The member goes with its comma (and its line, when it had one to
    /// itself); the file is written only if `talon config check` would
    /// accept the result.
    Unset {
        /// The dotted path (see `talon config get --help`).
        path: String,
        /// The config file (default: $TALON_CONFIG, else ~/.talon/talon.json5).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
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
        ConfigCommand::Get { path, config } => get(&path, config),
        ConfigCommand::Set {
            path,
            value,
            strict_json,
            config,
        } => {
            let value = match talon_config::edit::parse_value(&value, strict_json) {
                Ok(value) => value,
                Err(e) => return failed("set", &e.to_string(), 2),
            };
            edit("set", &path, config, |path| Change::Set { path, value })
        }
        ConfigCommand::Unset { path, config } => {
            edit("unset", &path, config, |path| Change::Unset { path })
        }
    }
}

/// `talon config VERB: message` on stderr, and the exit status.
fn failed(verb: &str, message: &str, code: u8) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon config {verb}: {message}");
    ExitCode::from(code)
}

fn get(path: &str, file: Option<PathBuf>) -> ExitCode {
    let path = match ConfigPath::parse(path) {
        Ok(path) => path,
        Err(e) => return failed("get", &e.to_string(), 2),
    };
    let config = match Config::load(file.as_deref()) {
        Ok(config) => config,
        Err(e) => return failed("get", &e.to_string(), 2),
    };
    match talon_config::edit::get(&config.raw, &path) {
        Ok(value) => {
            let text = serde_json::to_string_pretty(value).unwrap_or_default();
            let _ = writeln!(std::io::stdout(), "{text}");
            ExitCode::SUCCESS
        }
        Err(e) => failed("get", &format!("{}: {e}", config.shown_path().display()), 1),
    }
}

/// `set` and `unset`: the change made, or why not.
fn edit(
    verb: &str,
    path: &str,
    file: Option<PathBuf>,
    change: impl FnOnce(ConfigPath) -> Change,
) -> ExitCode {
    let path = match ConfigPath::parse(path) {
        Ok(path) => path,
        Err(e) => return failed(verb, &e.to_string(), 2),
    };
    let shown = path.to_string();
    match talon_config::edit::edit_file(file.as_deref(), &change(path)) {
        Ok(edited) => {
            let mut out = std::io::stdout().lock();
            for d in &edited.introduced {
                let _ = writeln!(out, "{}", located(&edited.file, d));
            }
            let created = if edited.created { " (created)" } else { "" };
            let _ = writeln!(out, "{}: {verb} {shown}{created}", edited.file.display());
            ExitCode::SUCCESS
        }
        // The findings' lines are in a file that was not written: they are
        // shown by key alone.
        Err(ConfigError::Refused { path, errors }) => {
            let mut err = std::io::stderr().lock();
            for d in errors {
                let d = Diagnostic {
                    position: None,
                    ..d
                };
                let _ = writeln!(err, "{}", located(&path, &d));
            }
            drop(err);
            failed(
                verb,
                &format!("refused: {} is unchanged", path.display()),
                2,
            )
        }
        Err(
            e @ ConfigError::Edit {
                source: EditError::Absent { .. } | EditError::Unreachable { .. },
                ..
            },
        ) if verb == "unset" => failed(verb, &e.to_string(), 1),
        Err(e) => failed(verb, &e.to_string(), 2),
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
