//! The one clock: what every crate that stamps or compares wall-clock
//! times reads (the store's rows and expiries, the engine's events and
//! deadlines, suspended cells' lifetimes, the fake gateways), so that a
//! test moves time for all of them at once instead of sleeping.
//!
//! It lives here because every crate that reads the time already depends
//! on the protocol crate (times on the wire are its convention: epoch
//! milliseconds) and nothing else is as low. Timers that only measure an
//! interval (tokio's sleeps and timeouts, `Instant`) are not wall-clock
//! times and do not read it.
//!
//! [`Clock::system`] is the computer's clock. [`Clock::adjustable`] is the
//! same clock plus an offset that only grows, moved by the [`TimeTravel`]
//! handle it comes with: time keeps passing as usual, and a test skips
//! ahead (past an expiry) by calling [`TimeTravel::advance`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A wall clock: cheap to clone; clones read the same time.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// How far ahead of the system clock this one is (none for the system
    /// clock itself).
    ahead_ms: Option<Arc<AtomicU64>>,
}

/// Moves an adjustable [`Clock`] (and its clones) forward.
#[derive(Debug, Clone)]
pub struct TimeTravel {
    ahead_ms: Arc<AtomicU64>,
}

impl Clock {
    /// The computer's clock.
    pub fn system() -> Self {
        Self { ahead_ms: None }
    }

    /// The computer's clock, which [`TimeTravel::advance`] moves ahead.
    pub fn adjustable() -> (Self, TimeTravel) {
        let ahead_ms = Arc::new(AtomicU64::new(0));
        (
            Self {
                ahead_ms: Some(ahead_ms.clone()),
            },
            TimeTravel { ahead_ms },
        )
    }

    /// Milliseconds since the Unix epoch (0 on a clock set before 1970).
    pub fn now_ms(&self) -> u64 {
        let system = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let ahead = self
            .ahead_ms
            .as_ref()
            .map_or(0, |a| a.load(Ordering::SeqCst));
        system.saturating_add(ahead)
    }

    /// The time as a `SystemTime`.
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.now_ms())
    }
}

impl TimeTravel {
    /// Moves the clock `by` ahead, at once, for every clone.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        // `fetch_update` never fails with a closure that always answers.
        let _ = self
            .ahead_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |a| {
                Some(a.saturating_add(by))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adjustable_clock_moves_ahead_for_every_clone_and_keeps_running() {
        let (clock, travel) = Clock::adjustable();
        let copy = clock.clone();
        let before = clock.now_ms();
        travel.advance(Duration::from_secs(3600));
        let after = copy.now_ms();
        assert!(after >= before + 3_600_000, "{before} -> {after}");
        assert!(after < before + 3_600_000 + 60_000, "{before} -> {after}");
        let system = Clock::system().now_ms();
        assert!(system + 3_599_000 <= clock.now_ms());
        assert!(clock.now() >= UNIX_EPOCH + Duration::from_millis(after));
    }
}
