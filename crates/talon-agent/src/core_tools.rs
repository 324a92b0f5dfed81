//! The core tools: `read`, `write`, `edit` (exact replacement), `list`
//! (with an optional glob), `grep`, and the shell `exec`, all inside the
//! agent's workspace directory. Paths that leave the workspace (`..`,
//! absolute paths elsewhere, symlinks pointing out) are refused. `write`,
//! `edit` and `exec` require approval by default.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{BoxFuture, CatalogEntry, RunContext, ToolCall, ToolExecutor};

/// Largest file `read` returns whole (larger ones come back cut).
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// Output kept of a shell command (stdout and stderr each).
pub const MAX_EXEC_OUTPUT: usize = 64 * 1024;
/// Default and longest shell timeout.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// Most matches `grep` and entries `list` return.
pub const MAX_MATCHES: usize = 500;

fn tool(name: &str, description: &str, parameters: Value, effect: ToolEffect) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        label: None,
        description: description.into(),
        parameters,
        source: ToolSource::Openclaw,
        owner: "core".into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: effect != ToolEffect::ReadOnly,
        effect,
        replay_safe: effect == ToolEffect::ReadOnly,
    }
}

/// The core tool definitions.
pub fn definitions() -> Vec<ToolDefinition> {
    let path = json!({"type": "string", "description": "A path relative to the workspace"});
    vec![
        tool(
            "read",
            "Read a text file of the workspace.",
            json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "write",
            "Create or overwrite a file of the workspace with the given content.",
            json!({"type": "object", "properties": {"path": path, "content": {"type": "string", "description": "The whole new content"}},
                    "required": ["path", "content"]}),
            ToolEffect::Writes,
        ),
        tool(
            "edit",
            "Replace one exact occurrence of a text in a workspace file.",
            json!({"type": "object", "properties": {"path": path,
                    "old": {"type": "string", "description": "The exact text to replace (must occur once)"},
                    "new": {"type": "string", "description": "The replacement"}}, "required": ["path", "old", "new"]}),
            ToolEffect::Writes,
        ),
        tool(
            "list",
            "List files of the workspace, optionally matching a glob such as src/**/*.rs.",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "A directory (default: the workspace)"},
                    "glob": {"type": "string", "description": "Keep paths matching this glob"}}}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "grep",
            "Find lines containing a text in workspace files.",
            json!({"type": "object", "properties": {"pattern": {"type": "string", "description": "The text to find"},
                    "path": {"type": "string", "description": "A file or directory (default: the workspace)"},
                    "glob": {"type": "string", "description": "Only files matching this glob"}}, "required": ["pattern"]}),
            ToolEffect::ReadOnly,
        ),
        tool(
            "exec",
            "Run a shell command in the workspace directory.",
            json!({"type": "object", "properties": {"command": {"type": "string", "description": "The command line (sh -c)"},
                    "timeoutMs": {"type": "number", "description": "Time limit (default and most 60000)"}}, "required": ["command"]}),
            ToolEffect::Host,
        ),
    ]
}

/// Runs the core tools in one workspace.
#[derive(Debug, Clone)]
pub struct CoreTools {
    root: PathBuf,
}

impl CoreTools {
    /// Tools confined to `workspace` (created if missing).
    pub fn new(workspace: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(workspace)?;
        Ok(Self {
            root: workspace.canonicalize()?,
        })
    }

    /// The workspace.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` inside the workspace, or says why not. The deepest
    /// existing ancestor is canonicalized, so symlinks cannot lead out.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(format!("{path:?} leaves the workspace"));
                    }
                }
                Component::CurDir => {}
                other => normal.push(other),
            }
        }
        let mut existing = normal.clone();
        let mut rest = Vec::new();
        while !existing.exists() {
            let Some(name) = existing.file_name().map(|n| n.to_owned()) else {
                break;
            };
            rest.push(name);
            if !existing.pop() {
                break;
            }
        }
        let mut real = existing
            .canonicalize()
            .map_err(|e| format!("{path:?}: {e}"))?;
        for name in rest.into_iter().rev() {
            real.push(name);
        }
        if !real.starts_with(&self.root) {
            return Err(format!("{path:?} is outside the workspace"));
        }
        Ok(real)
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    async fn run(&self, name: &str, args: &Value) -> Result<Value, String> {
        let text = |key: &str| {
            args[key]
                .as_str()
                .ok_or_else(|| format!("{name} needs a string {key:?}"))
        };
        match name {
            "read" => {
                let path = self.resolve(text("path")?)?;
                let bytes = tokio::fs::read(&path)
                    .await
                    .map_err(|e| format!("{}: {e}", self.relative(&path)))?;
                let truncated = bytes.len() > MAX_READ_BYTES;
                let shown =
                    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_READ_BYTES)]).into_owned();
                Ok(
                    json!({"path": self.relative(&path), "content": shown, "bytes": bytes.len(), "truncated": truncated}),
                )
            }
            "write" => {
                let path = self.resolve(text("path")?)?;
                let content = text("content")?;
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                tokio::fs::write(&path, content)
                    .await
                    .map_err(|e| format!("{}: {e}", self.relative(&path)))?;
                Ok(json!({"path": self.relative(&path), "bytes": content.len()}))
            }
            "edit" => {
                let path = self.resolve(text("path")?)?;
                let (old, new) = (text("old")?, text("new")?);
                let content = tokio::fs::read_to_string(&path)
                    .await
                    .map_err(|e| format!("{}: {e}", self.relative(&path)))?;
                match content.matches(old).count() {
                    0 => Err(format!(
                        "{}: the text to replace was not found",
                        self.relative(&path)
                    )),
                    1 => {
                        tokio::fs::write(&path, content.replacen(old, new, 1))
                            .await
                            .map_err(|e| e.to_string())?;
                        Ok(json!({"path": self.relative(&path), "replaced": 1}))
                    }
                    n => Err(format!(
                        "{}: the text occurs {n} times; give more context so it occurs once",
                        self.relative(&path)
                    )),
                }
            }
            "list" => {
                let base = self.resolve(args["path"].as_str().unwrap_or("."))?;
                let glob = args["glob"].as_str();
                let mut out = Vec::new();
                self.walk(&base, &mut |path| {
                    let rel = self.relative(path);
                    if glob.is_none_or(|g| talon_tools::policy::glob_match(g, &rel)) {
                        out.push(Value::String(rel));
                    }
                    out.len() < MAX_MATCHES
                });
                Ok(json!({"paths": out, "truncated": out.len() >= MAX_MATCHES}))
            }
            "grep" => {
                let pattern = text("pattern")?;
                let base = self.resolve(args["path"].as_str().unwrap_or("."))?;
                let glob = args["glob"].as_str();
                let mut files = Vec::new();
                self.walk(&base, &mut |path| {
                    if glob.is_none_or(|g| talon_tools::policy::glob_match(g, &self.relative(path)))
                    {
                        files.push(path.to_path_buf());
                    }
                    files.len() < 10_000
                });
                let mut matches = Vec::new();
                'files: for file in files {
                    let Ok(content) = std::fs::read_to_string(&file) else {
                        continue;
                    };
                    for (i, line) in content.lines().enumerate() {
                        if line.contains(pattern) {
                            matches.push(json!({"path": self.relative(&file), "line": i + 1,
                                                "text": line.chars().take(400).collect::<String>()}));
                            if matches.len() >= MAX_MATCHES {
                                break 'files;
                            }
                        }
                    }
                }
                Ok(json!({"matches": matches, "truncated": matches.len() >= MAX_MATCHES}))
            }
            "exec" => {
                self.shell(text("command")?, args["timeoutMs"].as_u64())
                    .await
            }
            other => Err(format!("no core tool {other:?}")),
        }
    }

    /// Files under `dir` (not following symlinks), depth-first, sorted.
    fn walk(&self, dir: &Path, visit: &mut dyn FnMut(&Path) -> bool) {
        if dir.is_file() {
            visit(dir);
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if entry.file_name() == ".git" {
                    continue;
                }
                self.walk(&path, visit);
            } else if kind.is_file() && !visit(&path) {
                return;
            }
        }
    }

    async fn shell(&self, command: &str, timeout_ms: Option<u64>) -> Result<Value, String> {
        let timeout = timeout_ms
            .map_or(EXEC_TIMEOUT, Duration::from_millis)
            .min(EXEC_TIMEOUT);
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .env_clear()
            .kill_on_drop(true);
        for key in ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR"] {
            if let Ok(value) = std::env::var(key) {
                cmd.env(key, value);
            }
        }
        cmd.stdin(std::process::Stdio::null());
        let child = cmd.output();
        match tokio::time::timeout(timeout, child).await {
            Err(_) => Err(format!(
                "the command did not finish within {} ms and was killed",
                timeout.as_millis()
            )),
            Ok(Err(e)) => Err(format!("cannot run the shell: {e}")),
            Ok(Ok(output)) => {
                let cut = |bytes: &[u8]| {
                    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_EXEC_OUTPUT)])
                        .into_owned();
                    (text, bytes.len() > MAX_EXEC_OUTPUT)
                };
                let (stdout, out_cut) = cut(&output.stdout);
                let (stderr, err_cut) = cut(&output.stderr);
                Ok(
                    json!({"exitCode": output.status.code(), "stdout": stdout, "stderr": stderr,
                          "truncated": out_cut || err_cut}),
                )
            }
        }
    }
}

impl ToolExecutor for CoreTools {
    fn execute<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(self.run(&entry.tool.name, &call.args))
    }
}
