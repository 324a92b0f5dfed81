mod agent_gateway;
mod config;
mod exec;
mod gateway;
mod hostile_files;
mod hostile_sandbox;
mod hostile_state;
mod hostile_store;
mod logs;
mod seed_e2e;
mod soak;
mod tokens;
mod tools;
mod traces;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Starts `talon` with a private home and state directory, no config from
/// the environment, and `env` set on top.
pub fn spawn_talon(home: &Path, args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_talon"));
    command
        .args(args)
        .env("HOME", home)
        .env("TALON_STATE_DIR", home.join("state"))
        .env_remove("TALON_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A developer's OpenTelemetry settings would turn traces on.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(key);
        }
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// Waits for `child` to exit (reading its output meanwhile) with a hard
/// deadline: a hang fails the test instead of stalling it.
pub fn finish(child: Child) -> Output {
    let pid = child.id().to_string();
    let (exit, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit.send(child.wait_with_output());
    });
    match exited.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            // The waiting thread reaps it.
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("talon hung: no exit within 60 s");
        }
    }
}

/// `value` with every trajectory's varying size as `<bytes>`.
pub use talon_testing::redact::trajectory_sizes as sized;

/// A run's events as one whole value (see `talon_testing::redact`), each
/// event's id as `"<id>"`: the store numbers the events of every run in
/// one sequence, so runs that ran at once interleave their ids.
pub fn events(
    redactor: &mut talon_testing::redact::Redactor,
    events: &[serde_json::Value],
) -> serde_json::Value {
    let mut whole = sized(redactor.transcript(events));
    for event in whole.as_array_mut().unwrap() {
        event["id"] = "<id>".into();
    }
    whole
}

/// A private home for `talon`, with an empty workspace `ws` in it.
pub fn home_with_workspace() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let workspace = home.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    (home, workspace)
}

/// A mock model's script and a config, written in a test's home: what
/// `talon agent` and `talon gateway` read with `--mock-script` and
/// `--config`.
pub struct MockFiles {
    pub config: PathBuf,
    pub script: PathBuf,
}

impl MockFiles {
    /// Writes `script` as `home`/script.json and `config` as
    /// `home`/talon.json5.
    pub fn write(home: &Path, script: &str, config: &str) -> Self {
        let files = Self {
            config: home.join("talon.json5"),
            script: home.join("script.json"),
        };
        std::fs::write(&files.script, script).unwrap();
        std::fs::write(&files.config, config).unwrap();
        files
    }

    /// `--config <config> --mock-script <script>`.
    pub fn args(&self) -> [&str; 4] {
        [
            "--config",
            self.config.to_str().unwrap(),
            "--mock-script",
            self.script.to_str().unwrap(),
        ]
    }

    /// The arguments of `talon agent` with these files, working in
    /// `workspace`, sending `message`.
    pub fn agent<'a>(&'a self, workspace: &'a Path, message: &'a str) -> [&'a str; 9] {
        let [config, config_path, script, script_path] = self.args();
        [
            "agent",
            config,
            config_path,
            script,
            script_path,
            "--workspace",
            workspace.to_str().unwrap(),
            "-m",
            message,
        ]
    }
}

/// A mock model's script: a turn calling `exec` for each of `commands`,
/// then "Finished.".
pub fn exec_script(commands: &[&str]) -> String {
    let mut turns: Vec<serde_json::Value> = commands
        .iter()
        .map(|command| {
            serde_json::json!({"toolCalls": [{"name": "exec", "arguments": {"command": command}}]})
        })
        .collect();
    turns.push(serde_json::json!({"text": "Finished."}));
    serde_json::json!({ "turns": turns }).to_string()
}
