//! `mcp.servers.<name>` in OpenClaw's shape: stdio servers (`command`,
//! `args`, `env`, `cwd`) and remote ones (`url`, `headers`, streamable
//! HTTP), each with `enabled`, `connectionTimeoutMs` and
//! `requestTimeoutMs` (and `connectOnStart` to connect when the manager
//! starts rather than when a run first needs the server).
//!
//! Values in `env` and `headers` may reference the environment
//! (`"${GITHUB_TOKEN}"`, or `{ "env": "GITHUB_TOKEN" }`); they are resolved
//! when the server starts and are [`Secret`]s from then on: never shown in
//! logs, telemetry or errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use talon_config::model::{EnvRef, McpServer, SecretValue};

use crate::error::{McpError, Result};

/// A configured value that may come from the environment.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// Written in the config.
    Literal(String),
    /// The named environment variable (`${NAME}` or `{env: NAME}`).
    Env(String),
    /// Text with `${NAME}` references inside.
    Template(String),
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Literal(_) | Self::Template(_) => f.write_str("<redacted>"),
            Self::Env(name) => write!(f, "${{{name}}}"),
        }
    }
}

/// A resolved value that must never be shown.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one place that needs it (the child's
    /// environment, a request header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl SecretSource {
    /// A value as the config declares it ([`SecretValue`]).
    fn from_config(value: &SecretValue, field: &str) -> Result<Self> {
        match value {
            SecretValue::Text(text) => {
                if let Some(name) = text
                    .strip_prefix("${")
                    .and_then(|t| t.strip_suffix('}'))
                    .filter(|n| is_env_name(n))
                {
                    Ok(Self::Env(name.to_owned()))
                } else if text.contains("${") {
                    Ok(Self::Template(text.clone()))
                } else {
                    Ok(Self::Literal(text.clone()))
                }
            }
            SecretValue::Number(n) => Ok(Self::Literal(n.to_string())),
            SecretValue::Flag(b) => Ok(Self::Literal(b.to_string())),
            SecretValue::Env(EnvRef { env }) if is_env_name(env) => Ok(Self::Env(env.clone())),
            SecretValue::Env(_) => Err(McpError::config(
                field,
                "expected a string or {env: \"NAME\"}",
            )),
        }
    }

    /// The value now, from `lookup` (the process environment in
    /// production). A missing variable is an error naming the variable,
    /// never the value.
    pub fn resolve(&self, field: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Secret> {
        let missing =
            |name: &str| McpError::config(field, format!("environment variable {name} is not set"));
        match self {
            Self::Literal(text) => Ok(Secret(text.clone())),
            Self::Env(name) => lookup(name).map(Secret).ok_or_else(|| missing(name)),
            Self::Template(text) => {
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(start) = rest.find("${") {
                    out.push_str(&rest[..start]);
                    let after = &rest[start + 2..];
                    let Some(end) = after.find('}') else {
                        out.push_str(&rest[start..]);
                        rest = "";
                        break;
                    };
                    let name = &after[..end];
                    if is_env_name(name) {
                        out.push_str(&lookup(name).ok_or_else(|| missing(name))?);
                    } else {
                        out.push_str(&rest[start..start + 3 + end]);
                    }
                    rest = &after[end + 1..];
                }
                out.push_str(rest);
                Ok(Secret(out))
            }
        }
    }
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment (after the hook filter).
        env: BTreeMap<String, SecretSource>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, SecretSource>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name: the owner in catalog ids (`mcp:<name>:<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `false` leaves it out entirely.
    pub enabled: bool,
    /// Connect when the manager starts instead of on first need.
    pub connect_on_start: bool,
    /// Budget of spawning/connecting and `initialize`.
    pub connection_timeout: Duration,
    /// Budget of one request.
    pub request_timeout: Duration,
}

/// Default `connectionTimeoutMs`.
pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `requestTimeoutMs`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads `mcp.servers` as the config declares it
/// ([`talon_config::model::McpServer`]: types and bounds checked when the
/// config was loaded), adding what one server's keys cannot say alone
/// (names, `command` or `url`, the URL's scheme).
pub fn parse_servers(servers: &BTreeMap<String, McpServer>) -> Result<Vec<ServerConfig>> {
    servers
        .iter()
        .map(|(name, server)| parse_server(name, server))
        .collect()
}

/// `mcp.servers` given as JSON (tests, benchmarks, embedders): read
/// through the config's declaration, as a config file's would be.
pub fn servers_from_json(servers: &Value) -> Result<Vec<ServerConfig>> {
    let text = serde_json::json!({ "mcp": { "servers": servers } }).to_string();
    let config = talon_config::Config::parse(&text, None)
        .map_err(|e| McpError::config("mcp.servers", e.to_string()))?;
    let document = config.document().map_err(|e| match e {
        talon_config::ConfigError::Invalid { key, message } => McpError::config(&key, message),
        other => McpError::config("mcp.servers", other.to_string()),
    })?;
    parse_servers(&document.mcp.servers)
}

fn parse_server(name: &str, server: &McpServer) -> Result<ServerConfig> {
    let root = format!("mcp.servers.{name}");
    if name.is_empty()
        || name.len() > 128
        || name.contains(':')
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        return Err(McpError::config(
            &root,
            "server names are 1 to 128 characters without ':', '/', spaces or control characters",
        ));
    }
    let field = |key: &str| format!("{root}.{key}");
    let secrets = |key: &str, map: &BTreeMap<String, SecretValue>| {
        map.iter()
            .map(|(k, v)| {
                let source = SecretSource::from_config(v, &format!("{}.{k}", field(key)))?;
                Ok((k.clone(), source))
            })
            .collect::<Result<BTreeMap<_, _>>>()
    };
    let transport = match (&server.command, &server.url) {
        (Some(_), Some(_)) => {
            return Err(McpError::config(
                &root,
                "give either command (stdio) or url (HTTP), not both",
            ));
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(McpError::config(&field("command"), "must not be empty"));
            }
            Transport::Stdio {
                command: command.clone(),
                args: server.args.clone(),
                env: secrets("env", &server.env)?,
                cwd: server.cwd.as_ref().map(PathBuf::from),
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(McpError::config(
                    &field("url"),
                    "expected an http:// or https:// URL",
                ));
            }
            Transport::Http {
                url: url.clone(),
                headers: secrets("headers", &server.headers)?,
            }
        }
        (None, None) => {
            return Err(McpError::config(
                &root,
                "needs command (stdio) or url (streamable HTTP)",
            ));
        }
    };
    let millis = |ms: Option<u64>, default| ms.map_or(default, Duration::from_millis);
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        enabled: server.enabled.unwrap_or(true),
        connect_on_start: server.connect_on_start.unwrap_or(false),
        connection_timeout: millis(server.connection_timeout_ms, DEFAULT_CONNECTION_TIMEOUT),
        request_timeout: millis(server.request_timeout_ms, DEFAULT_REQUEST_TIMEOUT),
    })
}

/// Environment variables a stdio server never gets from its config: they
/// would let a config inject code into the interpreter or loader.
pub fn is_hook_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_REPL_EXTERNAL_MODULE",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "GCONV_PATH",
        "HOSTALIASES",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "DENO_DIR",
        "ELECTRON_RUN_AS_NODE",
    ];
    let upper = name.to_ascii_uppercase();
    EXACT.contains(&upper.as_str())
        || upper.starts_with("LD_")
        || upper.starts_with("DYLD_")
        || upper.starts_with("BASH_FUNC_")
        || upper.starts_with("MALLOC_")
}

/// What a stdio server inherits from the gateway: only these.
pub const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "TERM",
];

/// The child's environment: the inherited basics plus the configured
/// variables, minus hook variables (dropped with a warning naming the
/// variable).
pub fn child_env(
    server: &str,
    configured: &BTreeMap<String, SecretSource>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, Secret)>> {
    let mut env: BTreeMap<String, Secret> = INHERITED_ENV
        .iter()
        .filter_map(|k| lookup(k).map(|v| ((*k).to_owned(), Secret(v))))
        .collect();
    for (key, source) in configured {
        if is_hook_variable(key) || key.is_empty() || key.contains('=') || key.contains('\0') {
            tracing::warn!(server, variable = %key, "MCP server env variable dropped: it could inject code into the server's interpreter or loader");
            continue;
        }
        let value = source.resolve(&format!("mcp.servers.{server}.env.{key}"), lookup)?;
        env.insert(key.clone(), value);
    }
    Ok(env.into_iter().collect())
}
