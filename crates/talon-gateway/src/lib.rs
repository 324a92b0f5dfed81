//! The Talon gateway: the protocol's method table served over one port
//! (HTTP calls now; SSE and WebSocket with the run engine), behind
//! tokens and scopes, over the durable store.
//!
//! Issue 14 is in progress: tokens, the HTTP transport, scopes, and the
//! methods the store alone can answer are here; runs (the agent loop),
//! streams, and several nodes are not yet.

mod api;
mod error;
mod http;
mod limits;
mod stream;
pub mod tokens;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use talon_protocol::gateway::Agent;
use talon_store::{Store, StoreConfig};

pub use api::Api;
pub use error::{GatewayError, Result, api_error};
pub use limits::Limits;

/// How a gateway runs.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Where it listens.
    pub listen: SocketAddr,
    /// `$TALON_STATE_DIR`.
    pub state_dir: PathBuf,
    /// Its store.
    pub store: StoreConfig,
    /// The agents the config file declares.
    pub config_agents: Vec<Agent>,
    /// Rate, stream and size limits.
    pub limits: Limits,
}

impl GatewayConfig {
    /// Loopback on `port`, the embedded store under `state_dir`.
    pub fn local(state_dir: impl Into<PathBuf>, port: u16) -> Self {
        let state_dir = state_dir.into();
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            store: StoreConfig::embedded(&state_dir),
            state_dir,
            config_agents: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// A gateway that is serving.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The admin token minted on this first start (print it once).
    pub admin_token: Option<String>,
    /// Its store.
    pub store: Store,
    shutdown: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Stops accepting, finishes the requests in flight, closes the store.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Err(error) = self.server.await {
            tracing::warn!(%error, "the server task ended abnormally");
        }
        self.store.close().await;
    }
}

/// Opens the store, mints the admin token on a first start, binds and
/// serves. Returns once it is ready (`/healthz` answers).
pub async fn start(config: GatewayConfig) -> Result<Running> {
    let store = talon_store::open(&config.store).await?;
    let admin_token =
        tokens::bootstrap_admin(&store, &config.state_dir, talon_store::now_ms()).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| GatewayError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| GatewayError::Bind {
        addr: config.listen,
        source,
    })?;
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "listening beyond loopback: every client that can reach this address needs a token");
    }
    let openapi = serde_json::to_vec(&talon_protocol::openapi::openapi())
        .map_err(|e| GatewayError::Random(format!("openapi document: {e}")))?;
    let shared = Arc::new(http::Shared {
        api: Api::new(store.clone(), config.config_agents.clone()),
        store: store.clone(),
        openapi: openapi.into(),
        limiter: limits::Limiter::new(config.limits),
    });
    let app = http::router(shared);
    let (shutdown, mut stop) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|stop| *stop).await;
            })
            .await
    });
    Ok(Running {
        addr,
        admin_token,
        store,
        shutdown,
        server,
    })
}
