//! The store's quota, `gateway.limits.maxStoredBytes`: the bytes the
//! store holds (database and artifact files), measured now and then, and
//! what was stored since counted in between.

use std::sync::Arc;
use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode};

/// How often the store's size is measured against the quota.
const MEASURE_EVERY: Duration = Duration::from_secs(5);

/// The bytes the store holds, measured every [`MEASURE_EVERY`], against
/// the quota.
#[derive(Debug, Clone)]
pub(crate) struct StoredBytes {
    held: Arc<std::sync::atomic::AtomicU64>,
    quota: Option<u64>,
}

impl StoredBytes {
    /// Measures `store` once, then until `closing` (only when there is a
    /// quota).
    pub(crate) async fn start(
        store: talon_store::Store,
        quota: Option<u64>,
        mut closing: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        let held = Arc::new(std::sync::atomic::AtomicU64::new(0));
        if quota.is_some() {
            if let Ok(bytes) = store.stored_bytes().await {
                held.store(bytes, std::sync::atomic::Ordering::Relaxed);
            }
            let measured = held.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(MEASURE_EVERY);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = closing.wait_for(|c| *c) => return,
                    }
                    match store.stored_bytes().await {
                        Ok(bytes) => measured.store(bytes, std::sync::atomic::Ordering::Relaxed),
                        Err(error) => tracing::debug!(%error, "the store's size could not be read"),
                    }
                }
            });
        }
        Self { held, quota }
    }

    /// What is left of the quota (`None`: there is none).
    pub(crate) fn room(&self) -> Option<u64> {
        let held = self.held.load(std::sync::atomic::Ordering::Relaxed);
        self.quota.map(|quota| quota.saturating_sub(held))
    }

    /// Counts `bytes` just stored (an environment's workspace) until the
    /// next measurement, which counts them itself.
    pub(crate) fn add(&self, bytes: u64) {
        self.held
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// `quota_exceeded` once the store holds its quota.
    pub(crate) fn check(&self) -> Result<(), ApiError> {
        let Some(quota) = self.quota else {
            return Ok(());
        };
        let held = self.held.load(std::sync::atomic::Ordering::Relaxed);
        if held < quota {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorCode::QuotaExceeded,
            format!(
                "the store holds {held} bytes, its quota (gateway.limits.maxStoredBytes) is {quota}: nothing more is written until room is freed"
            ),
        )
        .with_details(talon_protocol::gateway::ErrorDetails {stored_bytes: Some(held), quota_bytes: Some(quota), ..Default::default() }))
    }
}
