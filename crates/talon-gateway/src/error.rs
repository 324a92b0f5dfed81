//! The gateway's errors, and the one function that maps the store's
//! errors to protocol errors.

use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_store::StoreError;

/// What can stop the gateway from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file under the state directory could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The operating system's random source failed.
    #[error("no random source: {0}")]
    Random(#[source] getrandom::Error),
    /// `gateway.environments.sshHosts` is not a set of hosts the `ssh`
    /// provider can use.
    #[error("gateway.environments.sshHosts: {0}")]
    Ssh(#[source] talon_environments::ssh::SshConfigError),
    /// Runs left live by the previous start could not be ended.
    #[error("recovering runs: {}", .0.message)]
    Recovery(#[source] ApiError),
}

/// The gateway's result.
pub type Result<T> = std::result::Result<T, GatewayError>;

/// The protocol error a store failure answers with. Internal details go to
/// the log, not to the caller.
pub fn api_error(error: StoreError) -> ApiError {
    match error {
        StoreError::CursorExpired { cursor, oldest } => {
            talon_protocol::gateway::refuse::cursor_expired(
                &cursor.to_string(),
                &oldest.to_string(),
            )
        }
        StoreError::IdempotencyConflict { key } => {
            talon_protocol::gateway::refuse::idempotency_reused(crate::auth::identity::given_key(
                &key,
            ))
        }
        StoreError::Exists { kind, id } => {
            talon_protocol::gateway::refuse::already_exists(kind, &id)
        }
        StoreError::Busy { kind, id } => talon_protocol::gateway::refuse::has_live_run(kind, &id),
        StoreError::NotFound { kind, id } => talon_protocol::gateway::refuse::not_found(kind, &id),
        StoreError::DiskFull(_)
        | StoreError::ReadOnly(_)
        | StoreError::Connect { .. }
        | StoreError::Closed => {
            tracing::error!(%error, "store unavailable");
            crate::observe::metrics::store_error();
            let reason = error.unwritable_reason().unwrap_or("closed");
            ApiError::new(
                ErrorCode::Unavailable,
                "the store is unavailable; try again later",
            )
            .with_retry_after_ms(1_000)
            .with_details(talon_protocol::gateway::ErrorDetails {
                reason: Some(reason.to_string()),
                detail: Some(error.to_string().to_string()),
                ..Default::default()
            })
        }
        other => {
            tracing::error!(error = %other, "store failure");
            talon_protocol::gateway::refuse::internal()
        }
    }
}
