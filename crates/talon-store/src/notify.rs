//! Cross-node wake-ups on PostgreSQL (LISTEN/NOTIFY). Every commit of
//! events notifies `talon_events` with its last id, inside the committing
//! transaction (delivered at commit, in commit order); every change of a
//! run that another node may act on (created, ended, requeued, a cancel
//! asked) notifies `talon_runs`. One listener connection per store moves
//! [`crate::Store::committed`] for other nodes' commits and ticks
//! [`crate::Store::runs_changed`], so live readers, claims and waits wake
//! at once instead of on their next poll. The polls stay, as the fallback
//! for a lost notification: after the listener reconnects it wakes
//! everyone, since notifications sent meanwhile are gone. SQLite has one
//! writing process and needs none of this: its own appends move
//! `committed`, and its live readers do not poll
//! ([`crate::Store::announces_every_commit`]).

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::watch;

/// The channel event commits notify, with the last id as payload.
pub(crate) const EVENTS: &str = "talon_events";
/// The channel run changes notify.
pub(crate) const RUNS: &str = "talon_runs";

/// What the listener moves.
#[derive(Debug, Clone)]
pub(crate) struct Wakes {
    /// The last event id known committed (by any node).
    pub committed: Arc<watch::Sender<u64>>,
    /// Ticks on every run change.
    pub runs: Arc<watch::Sender<u64>>,
}

impl Wakes {
    fn wake_all(&self) {
        self.committed.send_modify(|_| {});
        self.runs.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A task that ends when dropped.
#[derive(Debug)]
pub(crate) struct Listening(tokio::task::JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts listening on `url` for `wakes`.
pub(crate) fn listen(url: String, wakes: Wakes) -> Listening {
    Listening(tokio::spawn(async move {
        loop {
            let mut listener = match PgListener::connect(&url).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "the store's notification listener cannot connect; polling meanwhile");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if let Err(error) = listener.listen_all([EVENTS, RUNS]).await {
                tracing::warn!(%error, "the store's notification listener cannot listen; polling meanwhile");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            // Whatever was notified before this point is lost: readers
            // look again.
            wakes.wake_all();
            loop {
                match listener.try_recv().await {
                    Ok(Some(notification)) => match notification.channel() {
                        EVENTS => {
                            let last = notification.payload().parse::<u64>().unwrap_or(0);
                            wakes.committed.send_if_modified(|seen| {
                                let newer = last > *seen;
                                *seen = (*seen).max(last);
                                newer
                            });
                        }
                        _ => wakes.runs.send_modify(|n| *n = n.wrapping_add(1)),
                    },
                    // The connection was lost; the next call reconnects.
                    Ok(None) => wakes.wake_all(),
                    Err(error) => {
                        tracing::warn!(%error, "the store's notification listener lost its connection");
                        wakes.wake_all();
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        break;
                    }
                }
            }
        }
    }))
}
