//! Live revocation: a token revoked, or one that expires, loses the
//! connections it opened, not only its next call.
//!
//! One task per node reads the store's recent revocations every
//! [`POLL`] (revocations are made by any node, or by `talon token revoke`
//! straight in the store, so every node looks for itself) and bumps a
//! watch. Each open stream and WebSocket holds a [`Liveness`]: it wakes on
//! that watch and checks its own token, and sleeps until its token's
//! expiry. So within [`POLL`] plus one store read of a revocation, and at
//! its expiry, an SSE stream ends with `event: error` `unauthenticated`
//! and a WebSocket closes with [`CLOSE_REVOKED`] or [`CLOSE_EXPIRED`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use talon_protocol::gateway::{ApiError, ErrorCode};
use talon_store::Store;
use tokio::sync::watch;

use crate::auth::identity::Caller;

/// How often the store is read for revocations.
pub(crate) const POLL: Duration = Duration::from_millis(250);
/// How far back each read looks, so that clocks of nodes that disagree by
/// less than this lose nothing.
const SKEW: Duration = Duration::from_secs(300);

/// The WebSocket close code of a connection whose token was revoked.
pub const CLOSE_REVOKED: u16 = 4001;
/// The WebSocket close code of a connection whose token expired.
pub const CLOSE_EXPIRED: u16 = 4002;

/// Why a connection's credential ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its token was revoked.
    Revoked,
    /// Its token expired.
    Expired,
}

impl Ended {
    /// The error a stream ends with.
    pub(crate) fn error(self) -> ApiError {
        let (message, reason) = match self {
            Self::Revoked => ("the token that opened this stream was revoked", "revoked"),
            Self::Expired => ("the token that opened this stream expired", "expired"),
        };
        ApiError::new(ErrorCode::Unauthenticated, message)
            .with_details(talon_protocol::gateway::ErrorDetails::reason(reason))
    }

    /// The WebSocket close code and reason.
    pub(crate) fn close(self) -> (u16, &'static str) {
        match self {
            Self::Revoked => (CLOSE_REVOKED, "token revoked"),
            Self::Expired => (CLOSE_EXPIRED, "token expired"),
        }
    }
}

/// The node's view of revoked tokens.
#[derive(Debug)]
pub(crate) struct Revocations {
    revoked: Mutex<HashSet<String>>,
    changed: watch::Sender<u64>,
    /// The store's clock (a token's expiry is a wall-clock time).
    clock: talon_protocol::clock::Clock,
}

impl Revocations {
    /// Starts the node's reader of revocations; it stops with `closing`.
    pub(crate) fn start(store: Store, mut closing: watch::Receiver<bool>) -> Arc<Self> {
        let revocations = Arc::new(Self {
            revoked: Mutex::new(HashSet::new()),
            changed: watch::Sender::new(0),
            clock: store.clock().clone(),
        });
        let watcher = revocations.clone();
        tokio::spawn(async move {
            let mut since = store.now_ms().saturating_sub(SKEW.as_millis() as u64);
            // The first read one interval after start-up, not during it.
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = closing.wait_for(|c| *c) => return,
                }
                match store.revoked_since(since).await {
                    Ok(found) => {
                        let newest = found.iter().map(|(_, at)| *at).max();
                        if let Some(newest) = newest {
                            since = since.max(newest.saturating_sub(SKEW.as_millis() as u64));
                        }
                        watcher.add(found.into_iter().map(|(id, _)| id));
                    }
                    Err(error) => {
                        tracing::debug!(%error, "revocations could not be read; trying again");
                    }
                }
            }
        });
        revocations
    }

    fn add(&self, ids: impl Iterator<Item = String>) {
        let mut new = false;
        if let Ok(mut revoked) = self.revoked.lock() {
            for id in ids {
                new |= revoked.insert(id);
            }
        }
        if new {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    fn is_revoked(&self, token_id: &str) -> bool {
        self.revoked
            .lock()
            .map(|r| r.contains(token_id))
            .unwrap_or(false)
    }

    /// What tells `caller`'s connection that its credential ended.
    pub(crate) fn watch(self: &Arc<Self>, caller: &Caller) -> Liveness {
        Liveness {
            revocations: self.clone(),
            token_id: caller.token_id.clone(),
            expires_at: caller.expires_at,
            changes: self.changed.subscribe(),
        }
    }
}

/// One connection's watch on its token.
#[derive(Debug)]
pub(crate) struct Liveness {
    revocations: Arc<Revocations>,
    token_id: String,
    expires_at: Option<u64>,
    changes: watch::Receiver<u64>,
}

impl Liveness {
    /// Resolves when the token is revoked or expires (never, for a live
    /// token without an expiry).
    pub(crate) async fn ended(&mut self) -> Ended {
        let expiry = async {
            match self.expires_at {
                Some(at) => {
                    let left = at.saturating_sub(self.revocations.clock.now_ms());
                    tokio::time::sleep(Duration::from_millis(left)).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(expiry);
        loop {
            if self.revocations.is_revoked(&self.token_id) {
                return Ended::Revoked;
            }
            tokio::select! {
                changed = self.changes.changed() => {
                    if changed.is_err() {
                        // The node's reader is gone (shutting down): no
                        // more revocations will be seen.
                        std::future::pending::<()>().await;
                    }
                }
                () = &mut expiry => return Ended::Expired,
            }
        }
    }
}
