//! Stored-bytes quotas per subject and per token
//! (`maxStoredBytesPerSubject`, `maxStoredBytesPerToken`), beside the
//! store's own (`limits::StoredBytes`). What each holds is recounted from
//! the store every few seconds (`Store::usage`); between recounts every
//! admitted call that stores something reserves what it may store (its
//! params' size three times over, a few rows' overhead, and a run's own
//! records when it starts one), so a burst of
//! concurrent writes is refused as it reaches the quota, not one recount
//! later. A recount replaces the measure and drops the reservations,
//! whose bytes it now counts (a run that has not ended counts its
//! footprint beside what it has stored, until it ends). What stops work
//! or frees room is never refused (`Room`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode, Method};

/// How often what each subject and token holds is recounted.
const RECOUNT_EVERY: Duration = Duration::from_secs(5);

/// What a run stores beside its input, at the least: a session row when
/// it makes one, its two messages, its row, six events and its trajectory
/// artifact (a page of its own). Measured at 9.7 KB on SQLite
/// (docs/benchmarks.md, "Stored-bytes quotas"); what a longer run stores
/// past this is counted by the next recount.
const RUN_FOOTPRINT: u64 = 10 << 10;

/// What an admitted call of `method` may store, at most as estimated: its
/// params (kept in a run's request, its messages and its events), a few
/// rows, and a run's own records when it starts one.
fn estimate(method: Method, params: &serde_json::Value) -> u64 {
    let len = serde_json::to_string(params).map_or(0, |text| text.len());
    let run = match method {
        Method::RunsCreate | Method::SessionsSend => RUN_FOOTPRINT,
        _ => 0,
    };
    (len as u64)
        .saturating_mul(3)
        .saturating_add(talon_store::ROW_OVERHEAD * 4)
        .saturating_add(run)
}

/// The quotas and what each subject and token holds.
#[derive(Debug, Clone)]
pub(crate) struct Quotas {
    per_subject: Option<u64>,
    per_token: Option<u64>,
    ledger: Arc<Mutex<Ledger>>,
}

#[derive(Debug, Default)]
struct Ledger {
    measured: talon_store::Usage,
    /// Reserved since the last recount, by subject and by token.
    subjects: HashMap<String, u64>,
    tokens: HashMap<String, u64>,
}

impl Quotas {
    /// Recounts `store` now and then until `closing` (only when a quota
    /// is set).
    pub(crate) async fn start(
        store: talon_store::Store,
        per_subject: Option<u64>,
        per_token: Option<u64>,
        mut closing: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        let quotas = Self {
            per_subject,
            per_token,
            ledger: Arc::new(Mutex::new(Ledger::default())),
        };
        if per_subject.is_some() || per_token.is_some() {
            quotas.recount(&store).await;
            let again = quotas.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(RECOUNT_EVERY);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = closing.wait_for(|c| *c) => return,
                    }
                    again.recount(&store).await;
                }
            });
        }
        quotas
    }

    async fn recount(&self, store: &talon_store::Store) {
        match store.usage(RUN_FOOTPRINT).await {
            Ok(measured) => {
                if let Ok(mut ledger) = self.ledger.lock() {
                    *ledger = Ledger {
                        measured,
                        ..Ledger::default()
                    };
                }
            }
            Err(error) => {
                tracing::debug!(%error, "what subjects and tokens hold could not be recounted")
            }
        }
    }

    /// Admits a call of `token` (bound to `subject`) with `params`,
    /// reserving what it may store; `quota_exceeded` naming the quota when
    /// its subject or token already holds it. Free when no such quota is
    /// set (the params are not even measured).
    pub(crate) fn admit(
        &self,
        token: &str,
        subject: Option<&str>,
        method: Method,
        params: &serde_json::Value,
    ) -> Result<(), ApiError> {
        if self.per_subject.is_none() && self.per_token.is_none() {
            return Ok(());
        }
        let bytes = estimate(method, params);
        let Ok(mut ledger) = self.ledger.lock() else {
            return Ok(());
        };
        let held = |measured: &HashMap<String, u64>, reserved: &HashMap<String, u64>, key: &str| {
            measured.get(key).copied().unwrap_or(0) + reserved.get(key).copied().unwrap_or(0)
        };
        if let (Some(quota), Some(subject)) = (self.per_subject, subject) {
            let now = held(&ledger.measured.subjects, &ledger.subjects, subject);
            if now.saturating_add(bytes) > quota {
                return Err(over("subject", "maxStoredBytesPerSubject", now, quota));
            }
        }
        if let Some(quota) = self.per_token {
            let now = held(&ledger.measured.tokens, &ledger.tokens, token);
            if now.saturating_add(bytes) > quota {
                return Err(over("token", "maxStoredBytesPerToken", now, quota));
            }
        }
        if let Some(subject) = subject {
            *ledger.subjects.entry(subject.to_owned()).or_default() += bytes;
        }
        *ledger.tokens.entry(token.to_owned()).or_default() += bytes;
        Ok(())
    }
}

fn over(whose: &str, key: &str, held: u64, quota: u64) -> ApiError {
    ApiError::new(
        ErrorCode::QuotaExceeded,
        format!(
            "this {whose} holds {held} bytes, near its quota (gateway.limits.{key}) of {quota}: nothing more is written for it until room is freed (sessions.delete, runs.delete)"
        ),
    )
    .with_details(talon_protocol::gateway::ErrorDetails {limit: Some(key.to_string()), stored_bytes: Some(held), quota_bytes: Some(quota), ..Default::default() })
}
