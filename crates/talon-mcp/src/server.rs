//! One MCP server's connection lifecycle: start (spawn the child or open
//! the HTTP session) and `initialize` under `connectionTimeoutMs`, list
//! its tools, serve requests under `requestTimeoutMs` and the run's
//! cancellation token, notice a crash or a dropped connection (the next
//! request reconnects), back off after failed starts, and shut down
//! cleanly.
//!
//! Cancellation waits on the token (`select!` on `cancelled()`), it does
//! not poll: the request future is dropped the moment the token is
//! cancelled, and rmcp sends `notifications/cancelled` for a request
//! dropped in flight. A run cancelled while its server is still
//! connecting stops waiting too (the start is abandoned and the child
//! killed; the next request starts again).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
    Implementation, ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams, Tool,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use talon_tools::{CancellationToken, McpServerFeatures};

use crate::config::{ServerConfig, Transport, child_env};
use crate::error::{ErrorSource, McpError, Result};
use crate::progress::{Progress, ProgressTo};
use crate::stderr::StderrTail;

/// Reads the environment (the process's in production; a map in tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// First wait after a failed start; doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between start attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long an error waits for a dead child's last stderr lines.
const STDERR_GRACE: Duration = Duration::from_millis(300);

/// Receives server notifications.
#[derive(Clone)]
struct Handler {
    tools_changed: Arc<AtomicBool>,
    server: Arc<str>,
    progress: Arc<Progress>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.progress.notify(&params);
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        // The newest version with an `initialize` handshake; the server
        // answers with the version it speaks, which we keep.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("talon", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A live connection.
struct Live {
    service: RunningService<RoleClient, Handler>,
    stderr: StderrTail,
    features: McpServerFeatures,
    protocol_version: String,
    /// The stdio child's process group (it leads its own), stopped when
    /// the connection goes, so nothing it started outlives it. Held only
    /// for its `Drop`.
    _group: Option<ProcessGroup>,
}

/// A child's process group; dropping it kills what is left of the group.
struct ProcessGroup(i32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // ESRCH (nothing left) is the normal case after a clean exit.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

enum Slot {
    Idle,
    Live(Arc<Live>),
    Failed {
        error: McpError,
        retry_at: Instant,
        backoff: Duration,
    },
}

/// One configured server.
pub struct Server {
    pub(crate) config: ServerConfig,
    env: EnvLookup,
    slot: tokio::sync::Mutex<Slot>,
    tools: RwLock<Option<Arc<Vec<Tool>>>>,
    tools_changed: Arc<AtomicBool>,
    progress: Arc<Progress>,
    features: RwLock<Option<McpServerFeatures>>,
    secrets: RwLock<Vec<String>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

/// What `initialize` told us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The protocol version the server speaks.
    pub protocol_version: String,
    /// Its optional features.
    pub features: McpServerFeatures,
}

impl Server {
    pub(crate) fn new(config: ServerConfig, env: EnvLookup) -> Self {
        Self {
            config,
            env,
            slot: tokio::sync::Mutex::new(Slot::Idle),
            tools: RwLock::new(None),
            tools_changed: Arc::new(AtomicBool::new(false)),
            progress: Arc::default(),
            features: RwLock::new(None),
            secrets: RwLock::new(Vec::new()),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn secrets(&self) -> Vec<String> {
        self.secrets.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The features the server advertised, once it has been reached.
    pub fn features(&self) -> Option<McpServerFeatures> {
        self.features.read().ok().and_then(|f| *f)
    }

    /// The live connection, starting it if needed. During the backoff
    /// after a failed start, the failure is returned at once.
    async fn live(&self) -> Result<Arc<Live>> {
        let mut slot = self.slot.lock().await;
        let backoff = match &*slot {
            Slot::Live(live) if !live.service.is_transport_closed() => return Ok(live.clone()),
            Slot::Failed {
                error,
                retry_at,
                backoff,
            } => {
                if Instant::now() < *retry_at {
                    return Err(error.clone());
                }
                (*backoff * 2).min(MAX_BACKOFF)
            }
            _ => FIRST_BACKOFF,
        };
        match self.start().await {
            Ok(live) => {
                let live = Arc::new(live);
                if let Ok(mut features) = self.features.write() {
                    *features = Some(live.features);
                }
                *slot = Slot::Live(live.clone());
                Ok(live)
            }
            Err(error) => {
                tracing::warn!(server = %self.name(), %error, "MCP server failed to start");
                *slot = Slot::Failed {
                    error: error.clone(),
                    retry_at: Instant::now() + backoff,
                    backoff,
                };
                Err(error)
            }
        }
    }

    async fn start(&self) -> Result<Live> {
        let started = Instant::now();
        let handler = Handler {
            tools_changed: self.tools_changed.clone(),
            server: self.name().into(),
            progress: self.progress.clone(),
        };
        let failed =
            |message: String, stderr: String, source: Option<ErrorSource>| McpError::Start {
                server: self.name().to_owned(),
                message,
                stderr,
                source,
            };
        let timeout = self.config.connection_timeout;
        let mut group = None;
        let (service, stderr) = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let env = child_env(self.name(), env, &*self.env)?;
                if let Ok(mut secrets) = self.secrets.write() {
                    *secrets = self.config_secret_values(
                        &env.iter()
                            .map(|(k, v)| (k.as_str(), v.expose()))
                            .collect::<Vec<_>>(),
                    );
                }
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear();
                for (key, value) in &env {
                    cmd.env(key, value.expose());
                }
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                wrapped.wrap(process_wrap::tokio::KillOnDrop);
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        failed(
                            format!("cannot run {command:?}"),
                            String::new(),
                            Some(Arc::new(e)),
                        )
                    })?;
                group = transport
                    .id()
                    .and_then(|pid| i32::try_from(pid).ok())
                    .map(ProcessGroup);
                let tail = stderr.map_or_else(StderrTail::empty, StderrTail::spawn);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => (service, tail),
                    Ok(Err(e)) => {
                        let stderr = tail.settled(STDERR_GRACE, &self.secrets()).await;
                        return Err(failed(
                            "initialize failed".into(),
                            stderr,
                            Some(Arc::new(e)),
                        ));
                    }
                    Err(_) => {
                        let stderr = tail.text(&self.secrets());
                        return Err(failed(
                            format!("no answer to initialize within {} ms", timeout.as_millis()),
                            stderr,
                            None,
                        ));
                    }
                }
            }
            Transport::Http { url, headers } => {
                let mut map = HashMap::new();
                let mut secrets = Vec::new();
                for (key, source) in headers {
                    let field = format!("mcp.servers.{}.headers.{key}", self.name());
                    let value = source.resolve(&field, &*self.env)?;
                    secrets.push(value.expose().to_owned());
                    let name = http::HeaderName::try_from(key.as_str())
                        .map_err(|_| McpError::config(&field, "not a valid header name"))?;
                    let mut value = http::HeaderValue::try_from(value.expose())
                        .map_err(|_| McpError::config(&field, "not a valid header value"))?;
                    value.set_sensitive(true);
                    map.insert(name, value);
                }
                if let Ok(mut s) = self.secrets.write() {
                    *s = secrets;
                }
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map),
                );
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => (service, StderrTail::empty()),
                    Ok(Err(e)) => {
                        return Err(failed(
                            "initialize failed".into(),
                            String::new(),
                            Some(Arc::new(e)),
                        ));
                    }
                    Err(_) => {
                        return Err(failed(
                            format!("no answer to initialize within {} ms", timeout.as_millis()),
                            String::new(),
                            None,
                        ));
                    }
                }
            }
        };
        let info = service.peer_info();
        let features = McpServerFeatures {
            resources: info
                .as_ref()
                .is_some_and(|i| i.capabilities.resources.is_some()),
            prompts: info
                .as_ref()
                .is_some_and(|i| i.capabilities.prompts.is_some()),
        };
        let protocol_version = info
            .as_ref()
            .map_or_else(String::new, |i| i.protocol_version.to_string());
        tracing::info!(server = %self.name(), %protocol_version, ms = started.elapsed().as_millis() as u64, "MCP server connected");
        // A new connection's tools are listed afresh.
        self.tools_changed.store(true, Ordering::SeqCst);
        Ok(Live {
            service,
            stderr,
            features,
            protocol_version,
            _group: group,
        })
    }

    /// Values of configured variables worth redacting from stderr.
    fn config_secret_values(&self, env: &[(&str, &str)]) -> Vec<String> {
        let Transport::Stdio {
            env: configured, ..
        } = &self.config.transport
        else {
            return Vec::new();
        };
        env.iter()
            .filter(|(k, _)| configured.contains_key(*k))
            .map(|(_, v)| (*v).to_owned())
            .collect()
    }

    /// Connects (if needed) and reports what `initialize` said.
    pub async fn connect(&self) -> Result<ServerInfo> {
        let live = self.live().await?;
        Ok(ServerInfo {
            protocol_version: live.protocol_version.clone(),
            features: live.features,
        })
    }

    /// The server's tools, listed again after `tools/list_changed` or a
    /// reconnect.
    pub async fn tools(&self) -> Result<Arc<Vec<Tool>>> {
        let live = self.live().await?;
        let cached = self.tools.read().ok().and_then(|t| t.clone());
        if let Some(tools) = cached
            && !self.tools_changed.load(Ordering::SeqCst)
        {
            return Ok(tools);
        }
        self.tools_changed.store(false, Ordering::SeqCst);
        let listed = self
            .request(&live, "tools/list", self.config.connection_timeout, async {
                live.service.list_all_tools().await
            })
            .await;
        match listed {
            Ok(tools) => {
                let tools = Arc::new(tools);
                if let Ok(mut cache) = self.tools.write() {
                    *cache = Some(tools.clone());
                }
                Ok(tools)
            }
            Err(e) => {
                self.tools_changed.store(true, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    /// `tools/call`, as MCP's result shape (`content`,
    /// `structuredContent`, `isError`); the server's progress goes to
    /// `progress` while it runs.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        cancel: Option<&CancellationToken>,
        progress: Option<ProgressTo>,
    ) -> Result<Value> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            _ => {
                return Err(McpError::Protocol {
                    server: self.name().to_owned(),
                    method: "tools/call".into(),
                    message: "tool arguments must be a JSON object".into(),
                    source: None,
                });
            }
        }
        self.until_cancelled(cancel, async {
            let live = self.live().await?;
            let result = self
                .request(&live, "tools/call", self.config.request_timeout, async {
                    crate::progress::call_tool(
                        live.service.peer(),
                        &self.progress,
                        params,
                        progress,
                    )
                    .await
                })
                .await?;
            serde_json::to_value(result).map_err(|e| self.malformed("tools/call", e))
        })
        .await
    }

    /// `resources/read`.
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value> {
        self.until_cancelled(cancel, async {
            let live = self.live().await?;
            if !live.features.resources {
                return Err(McpError::Unsupported {
                    server: self.name().to_owned(),
                    what: "resources".into(),
                });
            }
            let params = ReadResourceRequestParams::new(uri.to_owned());
            let result = self
                .request(
                    &live,
                    "resources/read",
                    self.config.request_timeout,
                    async { live.service.read_resource(params).await },
                )
                .await?;
            serde_json::to_value(result).map_err(|e| self.malformed("resources/read", e))
        })
        .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &Value,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            let strings: Map<String, Value> = map
                .iter()
                .map(|(k, v)| {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), Value::String(text))
                })
                .collect();
            params = params.with_arguments(strings);
        }
        self.until_cancelled(cancel, async {
            let live = self.live().await?;
            if !live.features.prompts {
                return Err(McpError::Unsupported {
                    server: self.name().to_owned(),
                    what: "prompts".into(),
                });
            }
            let result = self
                .request(&live, "prompts/get", self.config.request_timeout, async {
                    live.service.get_prompt(params).await
                })
                .await?;
            serde_json::to_value(result).map_err(|e| self.malformed("prompts/get", e))
        })
        .await
    }

    /// Runs `work` (connecting if needed, then one request) until it ends
    /// or `cancel` is cancelled, whichever comes first. On cancellation
    /// `work` is dropped at once: a request in flight is cancelled with
    /// `notifications/cancelled`, a start in progress is abandoned. An
    /// already cancelled token sends nothing.
    async fn until_cancelled<T>(
        &self,
        cancel: Option<&CancellationToken>,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let Some(token) = cancel else {
            return work.await;
        };
        tokio::select! {
            biased;
            () = token.cancelled() => Err(McpError::Aborted(self.name().to_owned())),
            result = work => result,
        }
    }

    fn malformed(&self, method: &str, error: serde_json::Error) -> McpError {
        McpError::Protocol {
            server: self.name().to_owned(),
            method: method.into(),
            message: "malformed response".into(),
            source: Some(Arc::new(error)),
        }
    }

    /// Runs one request under a timeout; a request that is given up (timed
    /// out, or dropped by [`Self::until_cancelled`]) is dropped in flight,
    /// which sends `notifications/cancelled`.
    async fn request<T>(
        &self,
        live: &Arc<Live>,
        method: &str,
        timeout: Duration,
        future: impl Future<Output = std::result::Result<T, ServiceError>>,
    ) -> Result<T> {
        match tokio::time::timeout(timeout, future).await {
            Err(_) => Err(McpError::Timeout {
                server: self.name().to_owned(),
                method: method.into(),
                timeout_ms: timeout.as_millis() as u64,
            }),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.failure(live, method, error).await),
        }
    }

    /// Classifies a failed request. A broken connection is forgotten, so
    /// the next request reconnects.
    async fn failure(&self, live: &Arc<Live>, method: &str, error: ServiceError) -> McpError {
        let closed = matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) || live.service.is_transport_closed();
        if !closed {
            return McpError::Protocol {
                server: self.name().to_owned(),
                method: method.into(),
                message: String::new(),
                source: Some(Arc::new(error)),
            };
        }
        let mut slot = self.slot.lock().await;
        if let Slot::Live(current) = &*slot
            && Arc::ptr_eq(current, live)
        {
            *slot = Slot::Idle;
        }
        drop(slot);
        let stderr = live.stderr.settled(STDERR_GRACE, &self.secrets()).await;
        tracing::warn!(server = %self.name(), method, "MCP server connection closed");
        McpError::Closed {
            server: self.name().to_owned(),
            message: format!("{method} was interrupted"),
            stderr,
            source: Some(Arc::new(error)),
        }
    }

    /// Closes the connection and stops the child (its process group).
    pub async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.slot.lock().await, Slot::Idle);
        if let Slot::Live(live) = previous {
            match Arc::try_unwrap(live) {
                Ok(live) => {
                    let _ = live.service.cancel().await;
                }
                // A request still holds it; dropping the last handle kills
                // the child.
                Err(shared) => shared.service.cancellation_token().cancel(),
            }
        }
    }
}
