//! A run's events on their way to the store: [`StoreSink`] takes them from
//! the agent loop without blocking it (the loop's sink is synchronous) and
//! appends them in order, as many to a commit as have arrived, so a run
//! streaming a delta per token never waits for each commit. Subscribers
//! read the store, so no one sees an event before it is committed.
//!
//! The loop's checkpoints (the run's state at the end of a turn) go
//! through the same queue: one is stored once every event before it is
//! durable, with the id of the last of them, so a run resumed from it
//! knows exactly which events came after ([`super::resume`]). The state
//! as a turn's calls start is kept here and stored only when a run is
//! about to wait inside the turn ([`StoreSink::keep_turn`]).
//!
//! The run's terminal event is not appended here: the sink holds it (and
//! anything after it) and hands it over at [`StoreSink::close`], so that
//! the engine stores it with the run's row ended, in one commit
//! ([`talon_store::Store::end_run`]).
//!
//! A write that fails (a full disk, a lost database) trips the sink: it
//! stores nothing more of the run, so the log never has a later event
//! after a missing one, and cancels the run; the engine then ends it
//! `failed` saying why, retrying that end until the store takes it
//! ([`StoreSink::failure`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use talon_protocol::gateway::bounded::RunId;

use talon_protocol::{Event, EventType};
use talon_runtime::{RunSink, TurnState};
use talon_store::{Pending, RunWaits, Store, StoreError};
use talon_tools::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::resume::RunCheckpoint;

/// What the loop hands the sink, in order.
enum Item {
    Event(Event),
    Checkpoint(TurnState),
    /// The run's state as a turn's calls start; kept, and stored only when
    /// asked ([`Item::KeepTurn`]).
    TurnStarted(TurnState),
    /// Stores the kept turn start (a run about to wait inside the turn),
    /// answered `true` once it is stored.
    KeepTurn(oneshot::Sender<bool>),
    /// Answered once every event before it is durable (`true`), or could
    /// not be (`false`).
    Flush(oneshot::Sender<bool>),
}

/// Where a run's checkpoints go.
#[derive(Debug, Clone)]
pub(crate) struct Checkpoints {
    /// The run.
    pub run_id: RunId,
    /// The node executing it (a checkpoint of a run another node took over
    /// is not stored).
    pub node: String,
    /// What the store held when the run was claimed.
    pub stored: RunCheckpoint,
}

/// Appends a run's events to the store, in order.
#[derive(Debug)]
pub(crate) struct StoreSink {
    queue: Mutex<Option<mpsc::UnboundedSender<Item>>>,
    forwarder: Mutex<Option<tokio::task::JoinHandle<Result<Closed, StoreError>>>>,
    /// Checkpoints taken so far.
    epoch: Arc<AtomicU64>,
    /// `epoch + 1` of the last checkpoint interval in which the start of
    /// a call that is not replay-safe was made durable (0: none).
    recorded: Arc<AtomicU64>,
    /// Flushes made for calls' starts (the ones skipped are not counted).
    flushes: AtomicU64,
    /// Values redacted from every event before it is stored (the run's
    /// bound secrets).
    secrets: Mutex<Arc<talon_tools::redact::Redactor>>,
    /// The streamed texts' ends held back while a secret could span them.
    streams: Mutex<super::streamed::Streams>,
    /// The first write that failed, once one has.
    failed: Arc<OnceLock<String>>,
    /// The request id every event carries: the call's the sink was
    /// started for (the run's creator's, [`crate::observe::on_behalf_of`]).
    request_id: Option<String>,
    /// The task whose work the run is (a sub-agent's): its events carry it.
    task_id: Option<talon_protocol::gateway::bounded::TaskId>,
}

/// The forwarder's state.
struct Forwarder {
    store: Store,
    checkpoints: Option<Checkpoints>,
    /// Commits not yet answered.
    pending: Vec<Pending>,
    /// The id of the last event known durable.
    last: Option<u64>,
    failure: Option<StoreError>,
    /// The current turn's start and the last event known durable then
    /// (every call of earlier turns is at or before it).
    turn: Option<(TurnState, Option<u64>)>,
    /// Cancelled when a write fails (the run's own token).
    trip: Option<CancellationToken>,
    failed: Arc<OnceLock<String>>,
    /// The terminal event and any after it, held for the run's end.
    ending: Vec<Event>,
}

/// What a closed sink leaves the run's end to store.
#[derive(Debug, Default)]
pub(crate) struct Closed {
    /// The terminal event (and any the loop emitted after it), not yet
    /// stored: the run's end stores them with its row.
    pub ending: Vec<Event>,
}

impl Forwarder {
    /// Records the first failure: nothing more is stored, the run is
    /// cancelled.
    fn fail(&mut self, error: StoreError) {
        if self.failure.is_some() {
            return;
        }
        tracing::error!(%error, "a run's events could not be stored; the run is stopped");
        let _ = self.failed.set(error.to_string());
        if let Some(trip) = &self.trip {
            trip.cancel();
        }
        self.failure = Some(error);
    }

    async fn settle(&mut self, pending: Pending) {
        match pending.durable().await {
            Ok(events) => {
                if let Some(id) = events
                    .last()
                    .and_then(|e| e.id.as_str().parse::<u64>().ok())
                {
                    self.last = Some(id);
                }
            }
            Err(error) => self.fail(error),
        }
    }

    async fn events(&mut self, mut batch: Vec<Event>) {
        if self.failure.is_some() {
            return;
        }
        if !self.ending.is_empty() {
            self.ending.append(&mut batch);
            return;
        }
        if let Some(at) = batch.iter().position(|e| e.kind.is_terminal()) {
            self.ending = batch.split_off(at);
            if batch.is_empty() {
                return;
            }
        }
        for event in &batch {
            if let Err(error) = self.onto_row(event).await {
                self.fail(error);
                return;
            }
        }
        match self.store.submit(batch).await {
            Ok(p) => self.pending.push(p),
            Err(error) => self.fail(error),
        }
        // Answered commits are dropped as the run goes, so a long run
        // holds only what is still in flight.
        if self.pending.len() > 64 {
            let settled: Vec<Pending> = self.pending.drain(..self.pending.len() - 8).collect();
            for p in settled {
                self.settle(p).await;
            }
        }
    }

    /// What the run's row keeps of its events, written before they are:
    /// the model it started on (`Run.model`, what `usage.summary` groups
    /// by); `waiting` while an approval or a question is pending, and
    /// `running` again once none is. (Its end, usage included, is written
    /// with its terminal event: [`Closed::ending`].)
    async fn onto_row(&self, event: &Event) -> Result<(), StoreError> {
        let Some(run_id) = &event.run_id else {
            return Ok(());
        };
        match event.kind {
            EventType::RunStarted => {
                if let Some(model) = event.data.get("model").and_then(|m| m.as_str()) {
                    self.store.set_run_model(run_id, model).await?;
                }
            }
            EventType::ApprovalRequested | EventType::QuestionRequested => {
                self.store.set_run_waiting(run_id, RunWaits::Asked).await?;
            }
            EventType::ApprovalResolved | EventType::QuestionAnswered => {
                self.store
                    .set_run_waiting(run_id, RunWaits::Answered)
                    .await?;
            }
            _ => {}
        }
        Ok(())
    }

    async fn drain(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            self.settle(p).await;
        }
    }

    /// Stores the kept turn start, if there is one; whether the run can
    /// resume inside the turn.
    async fn keep_turn(&mut self) -> bool {
        let Some((turn, through)) = self.turn.take() else {
            return false;
        };
        let Some(to) = self.checkpoints.as_mut() else {
            return false;
        };
        if self.failure.is_some() {
            return false;
        }
        to.stored
            .record(turn.into_turn(self.store.now_ms()), through);
        match self
            .store
            .set_run_checkpoint(&to.run_id, &to.node, &to.stored.to_value())
            .await
        {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, run = %to.run_id, "a run's turn start was not stored");
                false
            }
        }
    }

    async fn checkpoint(&mut self, checkpoint: TurnState) {
        self.turn = None;
        self.drain().await;
        let Some(to) = self.checkpoints.as_mut() else {
            return;
        };
        if self.failure.is_some() {
            // Events before it may be missing: resuming from it could
            // repeat a call; the last stored checkpoint stays.
            return;
        }
        to.stored
            .record(checkpoint.into_turn(self.store.now_ms()), self.last);
        if let Err(error) = self
            .store
            .set_run_checkpoint(&to.run_id, &to.node, &to.stored.to_value())
            .await
        {
            tracing::warn!(%error, run = %to.run_id, "a run's checkpoint was not stored");
        }
    }
}

impl StoreSink {
    /// A sink over `store`, forwarding on a task of its own; the run's
    /// checkpoints are stored when `checkpoints` says where; `trip` is
    /// cancelled when a write fails.
    pub(crate) fn start(
        store: Store,
        checkpoints: Option<Checkpoints>,
        trip: Option<CancellationToken>,
    ) -> Self {
        let (queue, mut inbox) = mpsc::unbounded_channel::<Item>();
        let failed = Arc::new(OnceLock::new());
        let mut forwarder = Forwarder {
            store,
            checkpoints,
            pending: Vec::new(),
            last: None,
            failure: None,
            turn: None,
            trip,
            failed: failed.clone(),
            ending: Vec::new(),
        };
        let task = tokio::spawn(async move {
            let mut held = None;
            loop {
                let item = match held.take() {
                    Some(item) => item,
                    None => match inbox.recv().await {
                        Some(item) => item,
                        None => break,
                    },
                };
                match item {
                    Item::Checkpoint(checkpoint) => forwarder.checkpoint(checkpoint).await,
                    Item::TurnStarted(turn) => forwarder.turn = Some((turn, forwarder.last)),
                    Item::KeepTurn(done) => {
                        let kept = forwarder.keep_turn().await;
                        let _ = done.send(kept);
                    }
                    Item::Flush(done) => {
                        forwarder.drain().await;
                        let _ = done.send(forwarder.failure.is_none());
                    }
                    Item::Event(first) => {
                        let mut batch = vec![first];
                        while let Ok(next) = inbox.try_recv() {
                            match next {
                                Item::Event(event) => batch.push(event),
                                checkpoint => {
                                    held = Some(checkpoint);
                                    break;
                                }
                            }
                        }
                        forwarder.events(batch).await;
                    }
                }
            }
            forwarder.drain().await;
            match forwarder.failure {
                Some(error) => Err(error),
                None => Ok(Closed {
                    ending: forwarder.ending,
                }),
            }
        });
        Self {
            queue: Mutex::new(Some(queue)),
            forwarder: Mutex::new(Some(task)),
            epoch: Arc::new(AtomicU64::new(0)),
            recorded: Arc::new(AtomicU64::new(0)),
            flushes: AtomicU64::new(0),
            secrets: Mutex::new(Arc::new(Default::default())),
            streams: Mutex::default(),
            failed,
            request_id: crate::observe::request_id(),
            task_id: None,
        }
    }

    /// The sink of a run that is task `task`'s work: its events carry
    /// the task's id.
    pub(crate) fn with_task(
        mut self,
        task: Option<talon_protocol::gateway::bounded::TaskId>,
    ) -> Self {
        self.task_id = task;
        self
    }

    /// The first write of the run's that failed, if one has.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    /// Flushes made for calls' starts so far.
    #[cfg(test)]
    pub(crate) fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::SeqCst)
    }

    /// Takes no more events and waits until every one taken is durable;
    /// returns the terminal event held for the run's end.
    pub(crate) async fn close(&self) -> Result<Closed, StoreError> {
        drop(self.queue.lock().ok().and_then(|mut q| q.take()));
        let forwarder = self.forwarder.lock().ok().and_then(|mut f| f.take());
        match forwarder {
            Some(task) => task.await.map_err(|_| StoreError::Closed)?,
            None => Ok(Closed::default()),
        }
    }

    /// Waits until every event taken so far is durable; whether they are.
    pub(crate) async fn flush(&self) -> bool {
        let (done, flushed) = oneshot::channel();
        if !self.send(Item::Flush(done)) {
            return false;
        }
        flushed.await.unwrap_or(false)
    }

    /// Redacts `secrets` from every event taken from now on.
    pub(crate) fn redact(&self, secrets: Vec<String>) {
        if let Ok(mut held) = self.secrets.lock() {
            *held = Arc::new(talon_tools::redact::Redactor::new(&secrets));
        }
    }

    /// Stores the run's state as its current turn's calls started, so
    /// that a run about to wait inside the turn (for an approval) resumes
    /// there after a restart; resolves `true` once stored, `false` when
    /// there is nothing to store (no turn, or checkpoints off) or it
    /// failed.
    pub(crate) async fn keep_turn(&self) -> bool {
        let (done, kept) = oneshot::channel();
        if !self.send(Item::KeepTurn(done)) {
            return false;
        }
        kept.await.unwrap_or(false)
    }

    fn send(&self, item: Item) -> bool {
        self.queue
            .lock()
            .ok()
            .and_then(|q| q.as_ref().map(|q| q.send(item).is_ok()))
            == Some(true)
    }
}

impl RunSink for StoreSink {
    fn emit(&self, mut event: Event) {
        if event.request_id.is_none() {
            event.request_id.clone_from(&self.request_id);
        }
        if event.task_id.is_none() {
            event.task_id.clone_from(&self.task_id);
        }
        let secrets = self
            .secrets
            .lock()
            .map(|held| held.clone())
            .unwrap_or_default();
        if secrets.is_empty() {
            if !self.send(Item::Event(event)) {
                tracing::warn!("an event arrived after its run's sink closed; dropped");
            }
            return;
        }
        {
            if let Some(raw) = &event.raw {
                let redacted = secrets.value(raw);
                // A secret split across a stream's events cannot be cut
                // out of them: the payload is not kept.
                event.raw = Some(if secrets.spanned(&redacted) {
                    serde_json::json!({"withheld": "a secret the gateway knows spans its events"})
                } else {
                    redacted
                });
            }
        }
        // Held while sending, so that the events keep their order.
        let mut streams = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for event in streams.take(event, &secrets) {
            if !self.send(Item::Event(event)) {
                tracing::warn!("an event arrived after its run's sink closed; dropped");
            }
        }
    }

    fn checkpoint(&self, checkpoint: TurnState) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.send(Item::Checkpoint(checkpoint));
    }

    fn turn_started(&self, checkpoint: TurnState) {
        self.send(Item::TurnStarted(checkpoint));
    }

    /// Waits for the store, once per checkpoint interval: after one such
    /// start is durable, resuming from the interval's checkpoint is ruled
    /// out, and later starts in it change nothing (a closed sink has
    /// nothing left to wait for).
    fn call_recorded(&self) -> BoxFuture<'_, bool> {
        let epoch = self.epoch.load(Ordering::SeqCst);
        if self.recorded.load(Ordering::SeqCst) == epoch + 1 {
            return Box::pin(std::future::ready(true));
        }
        self.flushes.fetch_add(1, Ordering::SeqCst);
        let (done, flushed) = oneshot::channel();
        let sent = self.send(Item::Flush(done));
        let recorded = self.recorded.clone();
        Box::pin(async move {
            if !sent {
                // Closed: the run is over, and nothing it starts is kept.
                return false;
            }
            let durable = flushed.await.unwrap_or(false);
            if durable {
                // The call's start, made after checkpoint `epoch`, is
                // durable (if a checkpoint came since, this says nothing
                // of the new interval).
                recorded.fetch_max(epoch + 1, Ordering::SeqCst);
            }
            durable
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use talon_protocol::EventType;
    use talon_store::EventFilter;

    fn event(run: &str, kind: EventType) -> Event {
        Event {
            subject: None,
            version: 1,
            id: Default::default(),
            ts: 1,
            kind,
            run_id: Some(talon_protocol::gateway::bounded::RunId::new(run)),
            session_id: None,
            session_key: None,
            task_id: None,
            agent_id: None,
            request_id: None,
            data: serde_json::json!({"callId": "c", "name": "write"}),
            raw: None,
        }
    }

    fn checkpoint() -> TurnState {
        talon_runtime::Turn {
            turns: 1,
            tool_calls: 1,
            ..talon_runtime::Turn::default()
        }
        .into()
    }

    #[tokio::test]
    async fn a_calls_start_is_durable_once_recorded_and_one_wait_serves_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let store = talon_store::open(&talon_store::StoreConfig::embedded(dir.path()))
            .await
            .unwrap();
        let sink = StoreSink::start(store.clone(), None, None);
        let started = |store: Store| async move {
            let filter = EventFilter {
                run_id: Some("r".into()),
                ..EventFilter::default()
            };
            store.after(None, &filter, 100).await.unwrap().len()
        };
        sink.emit(event("r", EventType::ToolCallStarted));
        assert!(sink.call_recorded().await);
        // Recorded means committed: a reader sees it now.
        assert_eq!(started(store.clone()).await, 1);
        // Later starts in the same interval do not wait.
        sink.emit(event("r", EventType::ToolCallStarted));
        assert!(sink.call_recorded().await);
        assert_eq!(sink.flushes(), 1);
        // After a checkpoint, the first start waits again.
        sink.checkpoint(checkpoint());
        sink.emit(event("r", EventType::ToolCallStarted));
        assert!(sink.call_recorded().await);
        assert_eq!(sink.flushes(), 2);
        assert_eq!(started(store.clone()).await, 3);
        // The terminal event is held for the run's end, not appended.
        sink.emit(event("r", EventType::RunCompleted));
        let closed = sink.close().await.unwrap();
        assert_eq!(
            closed.ending.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [EventType::RunCompleted]
        );
        assert_eq!(started(store.clone()).await, 3);
        // A closed sink keeps nothing: a call started now is not on record.
        sink.checkpoint(checkpoint());
        assert!(!sink.call_recorded().await);
    }
}
