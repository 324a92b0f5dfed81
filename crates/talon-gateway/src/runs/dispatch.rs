//! A node's claim loop: the start (orphans of a previous life ended or
//! taken back, the sweepers spawned), claiming queued runs while there is
//! room, renewing leases, following the cancel requests and dead nodes
//! other nodes left in the store, executing each claimed run on a task of
//! its own, and the drain when the node stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use talon_protocol::gateway::ApiError;
use tokio_util::sync::CancellationToken;

use super::{Active, Engine, LEASE, POLL, RENEW, exec, remote};
use crate::error::api_error;

impl Engine {
    /// Ends what the previous life of this store's runs left live (all of
    /// them on SQLite, which one node owns; those whose lease expired on
    /// PostgreSQL), then starts claiming runs.
    pub(crate) async fn start(&self) -> Result<tokio::task::JoinHandle<()>, ApiError> {
        let now = self.inner.store.now_ms();
        let (orphans, orphaned) = match self.inner.store.backend() {
            talon_store::Backend::Sqlite => (
                self.inner.store.live_runs().await,
                talon_store::Orphaned::Any,
            ),
            talon_store::Backend::Postgres => (
                self.inner
                    .store
                    .orphaned_runs(now, Some(&self.inner.node))
                    .await,
                talon_store::Orphaned::LeaseEndedOrHeldBy {
                    now,
                    node: &self.inner.node,
                },
            ),
        };
        for run in orphans.map_err(api_error)? {
            self.recover_orphan(run, orphaned).await;
        }
        tokio::spawn(crate::memory::trim_after(self.inner.ended.subscribe()));
        tokio::spawn(self.clone().purge_artifacts());
        if let Some(ssh) = &self.inner.ssh {
            tokio::spawn(remote::sweep(ssh.clone()));
        }
        tokio::spawn(self.clone().prune_events());

        tokio::spawn(self.clone().purge_cells());
        let engine = self.clone();
        Ok(tokio::spawn(async move { engine.dispatch().await }))
    }

    /// Claims and executes runs until the node drains; renews leases,
    /// follows cancel requests other nodes left, and takes over runs of
    /// dead nodes.
    async fn dispatch(&self) {
        let mut poll = tokio::time::interval(POLL);
        let mut renew = tokio::time::interval(RENEW);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Runs other nodes created, ended or asked to cancel (notified on
        // PostgreSQL); the poll catches what a notification missed.
        let mut runs_changed = self.inner.store.runs_changed();
        loop {
            tokio::select! {
                () = self.inner.wake.notified() => {}
                _ = runs_changed.changed() => self.follow_store().await,
                _ = poll.tick() => self.follow_store().await,
                _ = renew.tick() => {
                    let until = self.inner.store.now_ms() + LEASE.as_millis() as u64;
                    if let Err(error) = self.inner.store.renew_leases(&self.inner.node, until).await {
                        tracing::warn!(%error, "could not renew this node's leases");
                    }
                }
            }
            if self.inner.draining.load(Ordering::SeqCst) {
                return;
            }
            self.fill().await;
        }
    }

    /// Claims queued runs while this node has room.
    async fn fill(&self) {
        while self.running() < self.inner.limits.max_concurrent
            && !self.inner.draining.load(Ordering::SeqCst)
        {
            // Not while a run is being accepted (its row is stored before
            // its `run.created`).
            let lane = self.inner.lane.lock().await;
            let now = self.inner.store.now_ms();
            let claimed = self
                .inner
                .store
                .claim_run(&self.inner.node, None, now, now + LEASE.as_millis() as u64)
                .await;
            drop(lane);
            match claimed {
                Ok(Some(claimed)) => self.spawn(claimed),
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "could not claim a run");
                    return;
                }
            }
        }
    }

    /// Cancel requests and dead nodes' runs, as other nodes left them in
    /// the store.
    async fn follow_store(&self) {
        let store = &self.inner.store;
        if let Ok(ids) = store.cancel_requests(&self.inner.node).await {
            for (id, mode) in ids {
                if let Some(active) = self.active().get(&id) {
                    active
                        .rollback
                        .fetch_or(mode == talon_store::CancelMode::Rollback, Ordering::SeqCst);
                    active.cancel.cancel();
                }
            }
        }
        let now = self.inner.store.now_ms();
        if store.backend() == talon_store::Backend::Postgres
            && let Ok(orphans) = store.orphaned_runs(now, None).await
        {
            for run in orphans {
                self.recover_orphan(run, talon_store::Orphaned::LeaseEnded { now })
                    .await;
            }
        }
    }

    /// Executes a claimed run on a task of its own.
    fn spawn(&self, claimed: talon_store::Claimed) {
        let active = Active {
            cancel: CancellationToken::new(),
            rollback: Arc::new(AtomicBool::new(false)),
        };
        self.active()
            .insert(claimed.run.id.to_string(), active.clone());
        let engine = self.clone();
        tokio::spawn(async move {
            let id = claimed.run.id.clone();
            let span = exec::span(&claimed);
            // What the run appends carries the id of the call that
            // created it, on whichever node and after however many
            // restarts it executes.
            let request_id = claimed
                .request
                .as_ref()
                .ok()
                .and_then(|r| r.request_id.clone());
            let work = tracing::Instrument::instrument(engine.execute(claimed, active), span);
            crate::observe::on_behalf_of(request_id, work).await;
            engine.active().remove(id.as_str());
            engine.inner.ended.send_modify(|n| *n += 1);
            engine.inner.wake.notify_one();
        });
    }

    /// Stops claiming runs and refuses new ones; running runs get the
    /// grace period, then are cancelled; returns once every one has ended
    /// and its events are durable. Background processes are killed at
    /// once: nothing this node started outlives it (their tasks end
    /// `lost`).
    pub(crate) async fn drain(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
        self.inner.processes.stop_all("its gateway stopped");
        self.inner.wake.notify_one();
        let mut ended = self.inner.ended.subscribe();
        // Waiters of runs that are not running here answer now.
        self.inner.ended.send_modify(|n| *n += 1);
        let grace = tokio::time::Instant::now() + self.inner.limits.drain_grace;
        // The grace is for runs at work: one waiting on a person does not
        // hold the stop (it is left to the next start below); a run may
        // start waiting meanwhile, so this looks again every 100 ms.
        while self.at_work() > 0 && tokio::time::Instant::now() < grace {
            let next = (tokio::time::Instant::now() + Duration::from_millis(100)).min(grace);
            let _ = tokio::time::timeout_at(next, ended.changed()).await;
        }
        // Runs waiting on a person are left to the next start (as if the
        // node had died, with their requests durable and pending): they
        // resume inside their turn and wait again. The others are
        // cancelled.
        let waiting: std::collections::HashSet<String> = {
            let waiting = self
                .inner
                .waiting
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waiting.keys().cloned().collect()
        };
        self.inner.suspending.store(true, Ordering::SeqCst);
        let left: Vec<(String, Active)> = self
            .active()
            .iter()
            .map(|(id, active)| (id.clone(), active.clone()))
            .collect();
        for (id, active) in &left {
            if waiting.contains(id) {
                tracing::info!(run = %id, "a run waiting on a person is left to the next start");
            } else {
                active.cancel.cancel();
            }
        }
        let kept = |engine: &Engine| {
            engine
                .active()
                .keys()
                .filter(|id| waiting.contains(*id))
                .count()
        };
        while self.running() > kept(self) {
            if ended.changed().await.is_err() {
                break;
            }
        }
        self.inner.host.shutdown().await;
    }
}
