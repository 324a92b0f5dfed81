//! The group-commit writer: one task per store commits event appends.
//! Appends that arrive while a commit is in flight wait in the channel and
//! share the next commit (up to [`MAX_BATCH`] events), so a burst of small
//! appends costs a few fsyncs instead of one each, and no append waits
//! longer than the commit before it plus its own.
//!
//! Each append gets its own answer: when a shared commit fails, every
//! append in it is retried alone, so one append's failure is never
//! another's.
//!
//! A run's end ([`crate::run_end`]) is committed alone, in order with the
//! appends: its row and its events in one transaction, the events only if
//! the row was written.

use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot, watch};

use crate::Backend;
use crate::error::{Result, StoreError};
use crate::events::{self, Prepared};
use crate::health::HealthCell;
use crate::run_end::RunEnding;

/// Events in one shared commit at most.
const MAX_BATCH: usize = 4096;
/// How often the writer yields to let appenders catch up before it
/// commits a small batch.
const LINGER_YIELDS: u32 = 2;
/// Events committed between two checkpoints (at most one runs at a
/// time, beside the commits).
const CHECKPOINT_EVERY: usize = 2048;
/// Appends waiting at most before appenders are slowed down.
const QUEUE: usize = 1024;

enum Job {
    Append {
        rows: Vec<Prepared>,
        reply: oneshot::Sender<Result<u64>>,
    },
    /// A run's end and its events, committed alone: answered with the
    /// events' first id (0 when there are none), or `None` when the run
    /// had already ended and nothing was written.
    End {
        ending: RunEnding,
        rows: Vec<Prepared>,
        reply: oneshot::Sender<Result<Option<u64>>>,
    },
    Flush(oneshot::Sender<()>),
}

/// The handle appenders send to.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
    committed: watch::Receiver<u64>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Append { rows, .. } => write!(f, "Append({} events)", rows.len()),
            Self::End { rows, .. } => write!(f, "End({} events)", rows.len()),
            Self::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl Writer {
    /// Starts the writer task on the current runtime. It ends when every
    /// handle is dropped, after committing what was sent.
    /// Its commits move `announce` (which other nodes' commits may move
    /// too).
    pub(crate) fn spawn(
        pool: AnyPool,
        backend: Backend,
        announce: std::sync::Arc<watch::Sender<u64>>,
        health: std::sync::Arc<HealthCell>,
    ) -> Self {
        let (jobs, inbox) = mpsc::channel(QUEUE);
        let committed = announce.subscribe();
        tokio::spawn(run(pool, backend, inbox, announce, health));
        Self { jobs, committed }
    }

    /// The id of the last event this store committed (as of its open, or
    /// its own latest commit); changes wake live readers.
    pub(crate) fn committed(&self) -> watch::Receiver<u64> {
        self.committed.clone()
    }

    /// Queues `rows` for the next commit (waiting only while the queue
    /// is full) and returns what answers with the first id given to them
    /// once they are durable. Appends are committed in the order they
    /// were queued.
    pub(crate) async fn submit(
        &self,
        rows: Vec<Prepared>,
    ) -> Result<oneshot::Receiver<Result<u64>>> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job::Append { rows, reply })
            .await
            .map_err(|_| StoreError::Closed)?;
        Ok(answer)
    }

    /// Queues a run's end with its events, committed after every append
    /// queued before it ([`Job::End`]).
    pub(crate) async fn end(
        &self,
        ending: RunEnding,
        rows: Vec<Prepared>,
    ) -> Result<oneshot::Receiver<Result<Option<u64>>>> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job::End {
                ending,
                rows,
                reply,
            })
            .await
            .map_err(|_| StoreError::Closed)?;
        Ok(answer)
    }

    /// Returns once every append sent before it has been answered.
    pub(crate) async fn flush(&self) {
        let (reply, answer) = oneshot::channel();
        if self.jobs.send(Job::Flush(reply)).await.is_ok() {
            let _ = answer.await;
        }
    }
}

async fn run(
    pool: AnyPool,
    backend: Backend,
    mut inbox: mpsc::Receiver<Job>,
    announce: std::sync::Arc<watch::Sender<u64>>,
    health: std::sync::Arc<HealthCell>,
) {
    tracing::debug!(backend = backend.name(), "event writer started");
    let mut pending: Option<Job> = None;
    let mut since_checkpoint = 0;
    let mut checkpoint: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let first = match pending.take() {
            Some(job) => job,
            None => match inbox.recv().await {
                Some(job) => job,
                None => break,
            },
        };
        let mut batch = Vec::new();
        let mut events = 0;
        let mut flushes = Vec::new();
        let mut ending = None;
        let mut next = Some(first);
        // Appenders answered by the last commit are about to send again:
        // give them a moment (a yield, not a timer) before committing a
        // small batch alone.
        let mut yields = LINGER_YIELDS;
        loop {
            match next.take() {
                Some(Job::Flush(reply)) => flushes.push(reply),
                Some(Job::Append { rows, reply }) => {
                    if !batch.is_empty() && events + rows.len() > MAX_BATCH {
                        pending = Some(Job::Append { rows, reply });
                        break;
                    }
                    events += rows.len();
                    batch.push((rows, reply));
                }
                // An end commits alone, after the appends before it.
                Some(job @ Job::End { .. }) => {
                    if batch.is_empty() {
                        ending = Some(job);
                    } else {
                        pending = Some(job);
                    }
                    break;
                }
                None if yields > 0 && events < MAX_BATCH / 8 => {
                    yields -= 1;
                    tokio::task::yield_now().await;
                }
                None => break,
            }
            next = inbox.try_recv().ok();
        }
        let mut last = commit(&pool, backend, batch, &health).await;
        if let Some(Job::End {
            ending,
            rows,
            reply,
        }) = ending
        {
            let rows: Vec<&Prepared> = rows.iter().collect();
            let written = end(&pool, backend, &ending, &rows).await;
            match &written {
                Ok(Some(first)) if !rows.is_empty() => {
                    last = Some(first + rows.len() as u64 - 1);
                }
                Ok(_) => {}
                Err(error) => health.failed(error),
            }
            events += rows.len();
            let _ = reply.send(written);
        }
        if let Some(last) = last {
            announce.send_if_modified(|seen| {
                let newer = last > *seen;
                *seen = (*seen).max(last);
                newer
            });
        }
        for reply in flushes {
            let _ = reply.send(());
        }
        since_checkpoint += events;
        if since_checkpoint >= CHECKPOINT_EVERY
            && checkpoint.as_ref().is_none_or(|c| c.is_finished())
        {
            since_checkpoint = 0;
            let pool = pool.clone();
            checkpoint = Some(tokio::spawn(async move {
                if let Err(error) = backend.checkpoint(&pool).await {
                    tracing::warn!(%error, "checkpoint failed");
                }
            }));
        }
    }
    if let Some(checkpoint) = checkpoint {
        let _ = checkpoint.await;
    }
    let _ = backend.checkpoint(&pool).await;
    tracing::debug!("event writer stopped");
}

/// Commits `batch` together; when that fails, each append alone. Returns
/// the last id committed, if any.
async fn commit(
    pool: &AnyPool,
    backend: Backend,
    batch: Vec<(Vec<Prepared>, oneshot::Sender<Result<u64>>)>,
    health: &HealthCell,
) -> Option<u64> {
    if batch.is_empty() {
        return None;
    }
    let all: Vec<&Prepared> = batch.iter().flat_map(|(rows, _)| rows.iter()).collect();
    let total = all.len() as u64;
    match write(pool, backend, &all).await {
        Ok(first) => {
            // (A commit that fits in space already there says nothing of
            // whether the store has room again: only the probe does.)
            let mut next = first;
            for (rows, reply) in batch {
                let _ = reply.send(Ok(next));
                next += rows.len() as u64;
            }
            Some(first + total - 1)
        }
        Err(error) if batch.len() == 1 => {
            health.failed(&error);
            if let Some((_, reply)) = batch.into_iter().next() {
                let _ = reply.send(Err(error));
            }
            None
        }
        Err(error) => {
            tracing::warn!(%error, appends = batch.len(), "shared commit failed; committing each append alone");
            let mut last = None;
            for (rows, reply) in batch {
                let rows: Vec<&Prepared> = rows.iter().collect();
                let written = write(pool, backend, &rows).await;
                match &written {
                    Ok(first) => {
                        last = Some(first + rows.len() as u64 - 1);
                    }
                    Err(error) => health.failed(error),
                }
                let _ = reply.send(written);
            }
            last
        }
    }
}

async fn write(pool: &AnyPool, backend: Backend, rows: &[&Prepared]) -> Result<u64> {
    let mut tx = backend.begin_write(pool).await?;
    let first = insert(&mut tx, backend, rows).await?;
    tx.commit().await?;
    Ok(first)
}

/// Writes a run's end and, only if it was written, its events.
async fn end(
    pool: &AnyPool,
    backend: Backend,
    ending: &RunEnding,
    rows: &[&Prepared],
) -> Result<Option<u64>> {
    let mut tx = backend.begin_write(pool).await?;
    if !ending.write(&mut tx).await? {
        // Dropped, the transaction rolls back: nothing was written.
        return Ok(None);
    }
    let first = if rows.is_empty() {
        0
    } else {
        insert(&mut tx, backend, rows).await?
    };
    tx.commit().await?;
    Ok(Some(first))
}

/// Inserts `rows` in the transaction and tells the other nodes at commit.
async fn insert(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    backend: Backend,
    rows: &[&Prepared],
) -> Result<u64> {
    let first = events::insert(tx, backend, rows).await?;
    if backend == Backend::Postgres {
        // Delivered at commit, in commit order, to every node listening.
        let last = first + rows.len() as u64 - 1;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(crate::notify::EVENTS)
            .bind(last.to_string())
            .execute(&mut **tx)
            .await?;
    }
    Ok(first)
}
