//! The event log's retention (`store.retention.{maxAgeDays, maxEvents}`):
//! a background job removes the events the policy no longer keeps, after
//! runs end (coalesced: one prune covers every run that ended meanwhile)
//! and on a timer (every half of `maxAgeDays`, between 100 ms and a
//! minute; a minute for `maxEvents` alone), so a cursor older than what is
//! kept answers `cursor_expired` instead of silently skipping events. Each
//! node of a shared database prunes; a prune that finds nothing to remove
//! changes nothing.
//!
//! Suspended Code Mode cells expire too (`tools.codeMode.snapshotTtlSeconds`):
//! a timer deletes the expired ones every half of the TTL (between a second
//! and a minute), so a cell whose run still runs, or whose node died, does
//! not outlive its TTL by more than that while the gateway is idle. A
//! run's cells go when it ends (`exec.rs`).

use std::time::Duration;

use talon_store::Retention;

use super::Engine;

/// The longest time between two prunes.
const MAX_PRUNE_INTERVAL: Duration = Duration::from_secs(60);
/// The shortest.
const MIN_PRUNE_INTERVAL: Duration = Duration::from_millis(100);

/// How often the timer prunes under `retention`, or `None` when it keeps
/// everything.
pub(super) fn interval(retention: &Retention) -> Option<Duration> {
    match (retention.max_age, retention.max_events) {
        (None, None) => None,
        (Some(age), _) => Some((age / 2).clamp(MIN_PRUNE_INTERVAL, MAX_PRUNE_INTERVAL)),
        (None, Some(_)) => Some(MAX_PRUNE_INTERVAL),
    }
}

/// The longest time between two purges of expired cells.
const MAX_CELL_PURGE_INTERVAL: Duration = Duration::from_secs(60);
/// The shortest.
const MIN_CELL_PURGE_INTERVAL: Duration = Duration::from_secs(1);

/// How often expired cells are purged when they live `ttl` (`None`: Code
/// Mode is off in the global config; cells of agents that turn it on are
/// purged every minute).
pub(super) fn cell_purge_interval(ttl: Option<Duration>) -> Duration {
    ttl.map_or(MAX_CELL_PURGE_INTERVAL, |ttl| {
        (ttl / 2).clamp(MIN_CELL_PURGE_INTERVAL, MAX_CELL_PURGE_INTERVAL)
    })
}

impl Engine {
    /// Purges expired cells until the engine drains (see the module docs).
    pub(super) async fn purge_cells(self) {
        let ttl = talon_runtime::SurfacePlan::from_config(self.inner.host.config(), "")
            .ok()
            .and_then(|plan| plan.code_mode)
            .map(|code_mode| code_mode.snapshot_ttl);
        self.purge_every(
            cell_purge_interval(ttl),
            "expired code mode cells",
            |store, now| async move { store.purge_cells(now).await },
        )
        .await;
    }

    /// Runs `purge` (on the store, at the time) every `every` until the
    /// engine drains, logging how many of `what` it removed: the timers of
    /// expired cells and artifacts.
    pub(super) async fn purge_every<F, Fut>(self, every: Duration, what: &'static str, purge: F)
    where
        F: Fn(talon_store::Store, u64) -> Fut,
        Fut: std::future::Future<Output = Result<u64, talon_store::StoreError>>,
    {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if self
                .inner
                .draining
                .load(std::sync::atomic::Ordering::SeqCst)
            {
                return;
            }
            match purge(self.inner.store.clone(), self.inner.store.now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(purged = n, what, "purged"),
                Err(error) => tracing::warn!(%error, what, "could not be purged"),
            }
        }
    }

    /// Prunes the event log until the engine drains (see the module docs).
    pub(super) async fn prune_events(self) {
        let retention = self.inner.limits.event_retention;
        let Some(every) = interval(&retention) else {
            return;
        };
        let mut ended = self.inner.ended.subscribe();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                changed = ended.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    ended.borrow_and_update();
                }
            }
            if self
                .inner
                .draining
                .load(std::sync::atomic::Ordering::SeqCst)
            {
                return;
            }
            match self
                .inner
                .store
                .prune(retention, self.inner.store.now_ms())
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::debug!(pruned = n, "events past retention removed"),
                Err(error) => tracing::warn!(%error, "events past retention could not be removed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_cells_are_purged_every_half_ttl_between_a_second_and_a_minute() {
        let every = [None, Some(1), Some(10), Some(900)]
            .map(|ttl| cell_purge_interval(ttl.map(Duration::from_secs)).as_secs());
        assert_eq!(every, [60, 1, 5, 60]);
    }

    #[test]
    fn the_timer_follows_the_age_and_keeps_still_without_a_policy() {
        let of = |max_age, max_events| {
            interval(&Retention {
                max_age,
                max_events,
            })
        };
        assert_eq!(of(None, None), None);
        assert_eq!(of(None, Some(10)), Some(MAX_PRUNE_INTERVAL));
        assert_eq!(
            of(Some(Duration::from_secs(10)), None),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            of(Some(Duration::from_millis(10)), Some(1)),
            Some(MIN_PRUNE_INTERVAL)
        );
        assert_eq!(
            of(Some(Duration::from_secs(86_400)), None),
            Some(MAX_PRUNE_INTERVAL)
        );
    }
}
