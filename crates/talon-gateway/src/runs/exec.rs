//! Executing one claimed run: its event sink, its history from the
//! session, the run on the node's host (`start.rs`, through
//! `talon_runtime`'s front), then its messages and its end written back
//! (the end only if no one else ended it), whether the loop ran or the
//! run was refused before it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use talon_protocol::gateway::bounded::MessageId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use talon_protocol::event_data::RunEndedData;
use talon_protocol::gateway::{ApiError, ErrorCode, Message, Run, RunStatus};
use talon_protocol::{Event, EventData};
use talon_runtime::cells::{SnapshotStore, StoreLimits};
use talon_runtime::{Conversation, RunEmitter, conversation};
use talon_store::{Claimed, MAX_PAGE};

use super::resume::RunCheckpoint;
use super::sink::{Checkpoints, StoreSink};
use super::start::{Loop, Looped, Refused, Resume, ids};
use super::{Active, Engine, RunRequest, result_of};
use talon_tools::Approvals;

/// A run's input made ready for the loop.
pub(super) struct Prepared {
    pub request: RunRequest,
    /// The history, what the input adds, the user's turn.
    pub input: conversation::Prepared,
}

/// The run's span: inside the trace of the request that created it (its
/// stored `traceparent`), wherever and whenever it executes; its status
/// is recorded as it ends ([`Engine::finish`]).
pub(super) fn span(claimed: &Claimed) -> tracing::Span {
    let traceparent = claimed
        .request
        .as_ref()
        .ok()
        .and_then(|r| r.traceparent.as_deref());
    tracing::info_span!(
        target: "talon::trace",
        "run",
        traceparent,
        talon.run.id = %claimed.run.id,
        talon.agent.id = %claimed.run.agent_id,
        talon.session.id = claimed.run.session_id.as_ref().map(SessionId::as_str),
        talon.run.status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
    )
}

impl Engine {
    /// Runs a claimed run to its end: its sink and context, the loop (see
    /// `start.rs`), then its end, whether the loop ran or not.
    pub(super) async fn execute(&self, claimed: Claimed, active: Active) {
        let Claimed {
            run,
            request,
            checkpoint,
        } = claimed;
        let stored = RunCheckpoint::read(checkpoint);
        // A run back in the queue after its node died resumes from its
        // last complete turn, or from its input when it had completed
        // none; either way its `run.started` says where.
        let start = match stored.resume_from() {
            Some(from) => Resume::From(from),
            None if stored.resumes > 0 => Resume::FromInput,
            None => Resume::No,
        };
        tracing::info!(
            target: "talon::run",
            run_id = %run.id,
            agent = %run.agent_id,
            node = %self.inner.node,
            resumed = start != Resume::No,
            "run started"
        );
        let task = request.as_ref().ok().and_then(|r| r.task_id.clone());
        let sink = Arc::new(
            StoreSink::start(
                self.inner.store.clone(),
                Some(Checkpoints {
                    run_id: run.id.clone(),
                    node: self.inner.node.clone(),
                    stored,
                }),
                Some(active.cancel.clone()),
            )
            .with_task(task),
        );
        let ids = ids(&run);
        let looped = self
            .run_loop(
                &run,
                request,
                Loop {
                    ids: ids.clone(),
                    cancel: active.cancel.clone(),
                    sink: sink.clone(),
                    start,
                    more: super::More::default(),
                },
            )
            .await;
        match looped {
            Ok(looped) => self.end_looped(&run, looped, &sink, &active).await,
            Err(refused) => {
                let events = RunEmitter::new(&ids, self.inner.store.clock(), sink.clone());
                self.end_refused(&run, refused, &events, &sink, &active)
                    .await;
            }
        }
    }

    /// Ends a run whose loop never started: its end is this node's to
    /// say. The app's input stays in the session, its answers to pending
    /// calls with it, so that nothing it sent is lost.
    async fn end_refused(
        &self,
        run: &Run,
        refused: Refused,
        events: &RunEmitter,
        sink: &StoreSink,
        active: &Active,
    ) {
        let Refused {
            error,
            input,
            message,
        } = refused;
        events.emit(EventData::RunFailed(RunEndedData {
            text: None,
            error: Some(error.message.clone()),
            turns: 0,
            tool_calls: 0,
            usage: Default::default(),
            duration_ms: 0,
            pending_tool_calls: Vec::new(),
            telemetry: None,
        }));
        let mut ended = run.clone();
        ended.status = RunStatus::Failed;
        ended.ended_at = Some(self.inner.store.now_ms());
        ended.error = Some(error);
        let ending = self.closed(sink, run, &mut ended).await;
        let mut added = input;
        if let Some(message) = message {
            added.extend(Conversation::user(message));
        }
        self.save_messages(run, &added, active).await;
        let mut summary = result_of(&ended, None);
        summary.artifacts = self.trajectory(&ended, &ending).await.map(|t| vec![t]);
        self.finish(&ended, summary, ending).await;
    }

    /// Ends a run the loop ran: its messages, its row, its artifacts (those
    /// its tools made, the environment's diff, the trajectory) and, when it left client calls
    /// for the app, the message that asks them.
    async fn end_looped(&self, run: &Run, looped: Looped, sink: &StoreSink, active: &Active) {
        let Looped {
            result,
            added,
            asked,
            environment,
        } = looped;
        let held = result.held.clone();
        let stored = self.save_messages(run, &added, active).await;
        let mut ended = run.clone();
        ended.status = result.status;
        ended.ended_at = Some(self.inner.store.now_ms());
        ended.usage = Some(result.usage.clone());
        ended.error = result.error.clone();
        let ending = self.closed(sink, run, &mut ended).await;
        let text = (!result.text.is_empty()).then(|| result.text.clone());
        let mut summary = result_of(&ended, text);
        let mut artifacts = self.made(&ended).await;
        if let Some((environment, binding)) = &environment {
            artifacts.extend(
                self.workspace_diff(&ended, environment, &binding.secrets)
                    .await,
            );
        }
        artifacts.extend(self.trajectory(&ended, &ending).await);
        summary.artifacts = (!artifacts.is_empty()).then_some(artifacts);
        // The message whose client calls the app is to answer. Calls a
        // Code Mode cell made stand in place of the `exec` calls held open
        // for them: the app answers those.
        if let Some(message) = asked.and_then(|index| stored.get(index)) {
            let mut message = message.clone();
            if !held.is_empty() {
                message
                    .tool_calls
                    .retain(|c| !held.contains(&c.id.to_string()));
                let nested: Vec<_> = result
                    .pending
                    .iter()
                    .filter(|p| !message.tool_calls.iter().any(|c| c.id == p.id))
                    .cloned()
                    .collect();
                message.tool_calls.extend(nested);
            }
            let output = summary.output.get_or_insert_with(Default::default);
            output.messages = Some(vec![message]);
        }
        super::person::close_requests(&self.inner.store, run.id.as_str()).await;
        self.forget_cells(run, &held).await;
        self.finish(&ended, summary, ending).await;
    }

    /// Deletes a run's suspended cells at its end (completed, failed,
    /// cancelled or timed out): no later `wait` can resume them, since a
    /// cell is scoped to the run that made it. Those that wait for the
    /// app's answers (the run held their `exec` calls open) stay for the
    /// session's next run.
    async fn forget_cells(&self, run: &Run, held: &[String]) {
        let keep = match (&run.session_id, held.is_empty()) {
            (Some(session), false) => self.held_cells(run, session.as_str(), held).await,
            _ => Vec::new(),
        };
        let run = run.id.as_str();
        match self
            .inner
            .store
            .delete_run_cells_except(&RunId::new(run), &keep)
            .await
        {
            Ok(0) => {}
            Ok(cells) => tracing::debug!(run, cells, "a run's suspended cells deleted at its end"),
            Err(error) => tracing::warn!(
                %error,
                run,
                "a run's suspended cells could not be deleted; the purge removes them once expired"
            ),
        }
    }

    /// Closes the run's sink once every event is durable, and returns
    /// what tells the run's end (its terminal event, held by the sink for
    /// the end to store). When a write failed, the run ends `failed`
    /// saying so, told by a `run.failed` in place of what the sink dropped.
    async fn closed(&self, sink: &StoreSink, run: &Run, ended: &mut Run) -> Vec<Event> {
        let ending = match sink.close().await {
            Ok(closed) => closed.ending,
            Err(error) => {
                tracing::error!(%error, run = %run.id, "a run's events were not all stored");
                Vec::new()
            }
        };
        let Some(detail) = sink.failure() else {
            return ending;
        };
        let error = ApiError::new(
            ErrorCode::Unavailable,
            format!("the store could not take this run's events ({detail}); the run was stopped"),
        )
        .with_details(talon_protocol::gateway::ErrorDetails::reason("store"));
        ended.status = RunStatus::Failed;
        ended.error = Some(error.clone());
        vec![
            self.run_event(
                ended,
                EventData::RunFailed(RunEndedData {
                    text: None,
                    error: Some(error.message),
                    turns: 0,
                    tool_calls: 0,
                    usage: Default::default(),
                    duration_ms: ended
                        .ended_at
                        .unwrap_or_default()
                        .saturating_sub(ended.created_at),
                    pending_tool_calls: Vec::new(),
                    telemetry: None,
                }),
            ),
        ]
    }

    /// Stores a run's end with the events that tell it, in one commit,
    /// retrying while the store cannot write. A draining node stops
    /// trying: the run stays claimed by it, and the next start recovers it
    /// as it does a dead node's.
    async fn finish(
        &self,
        ended: &Run,
        summary: talon_protocol::gateway::RunResult,
        ending: Vec<Event>,
    ) {
        if self
            .retrying(ended.id.as_str(), "its end", || {
                self.end_run(ended, &summary, ending.clone())
            })
            .await
            .is_none()
        {
            return;
        }
        let took = ended
            .ended_at
            .unwrap_or_default()
            .saturating_sub(ended.created_at);
        let status = super::status_name(ended.status);
        let span = tracing::Span::current();
        span.record("talon.run.status", status);
        if let Some(error) = &ended.error {
            span.record("otel.status_code", "error");
            span.record("otel.status_message", error.message.as_str());
        }
        self.inner.metrics.run_ended(
            status,
            Duration::from_millis(took),
            ended.agent_id.as_str(),
            ended.usage.as_ref().and_then(|u| u.cost_usd),
        );
        tracing::info!(
            target: "talon::run",
            run_id = %ended.id,
            status,
            duration_ms = took,
            error = ended.error.as_ref().map_or("", |e| e.code.as_str()),
            "run finished"
        );
    }

    /// Runs `write` until it succeeds (its value), backing off to 2 s
    /// between tries, or the node drains (`None`).
    async fn retrying<T, F, W>(&self, run: &str, what: &str, mut write: W) -> Option<T>
    where
        W: FnMut() -> F,
        F: std::future::Future<Output = Result<T, talon_store::StoreError>>,
    {
        let mut delay = Duration::from_millis(100);
        loop {
            let written = write().await;
            if let Err(error) = &written {
                crate::observe::metrics::store_error();
                self.inner.store.note_failure(error);
            }
            match written {
                Ok(written) => return Some(written),
                Err(error) if self.inner.draining.load(Ordering::SeqCst) => {
                    tracing::error!(%error, run, "a run's end could not be stored before the node stopped; the next start recovers it");
                    return None;
                }
                Err(error) => {
                    tracing::warn!(%error, run, "a run's end could not be stored ({what}); retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// The run's request, the model's history (the session's, then the
    /// input before the user's turn: the app's answers to pending client
    /// calls first), what the run adds to the session before the loop's
    /// own messages, and the user's turn (none when the input only
    /// answers calls).
    pub(super) async fn prepare_input(
        &self,
        run: &Run,
        request: Result<RunRequest, talon_store::UnreadableRequest>,
    ) -> Result<Prepared, ApiError> {
        let request = request.map_err(|why| ApiError::new(ErrorCode::Internal, why.to_string()))?;
        if request.invoke.is_some() {
            // A direct call takes nothing from the session and adds nothing.
            return Ok(Prepared {
                request,
                input: conversation::Prepared::default(),
            });
        }
        let history = match &run.session_id {
            Some(session) => self.session_history(session.as_str()).await?,
            None => Conversation::default(),
        };
        // Calls held open by an earlier run may be a Code Mode cell's,
        // which waits for the app's answers in the cell store.
        let awaiting = match &run.session_id {
            Some(session) if !history.pending_calls().is_empty() => {
                self.awaiting(session.as_str()).await?
            }
            _ => Vec::new(),
        };
        let input = conversation::prepare_with(history, &request.input, &awaiting)
            .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()))?;
        Ok(Prepared { request, input })
    }

    /// The ids of `run`'s cells that wait for the app's answers to the
    /// client calls of the `exec` calls in `held`.
    async fn held_cells(&self, run: &Run, session: &str, held: &[String]) -> Vec<String> {
        match self.awaiting(session).await {
            Ok(cells) => cells
                .into_iter()
                .filter(|c| c.scope.run_id.as_str() == run.id.as_str() && held.contains(&c.parent))
                .map(|c| c.cell_id.to_string())
                .collect(),
            Err(error) => {
                tracing::warn!(error = %error.message, run = %run.id, "the cells waiting for the app could not be read; they are deleted with the run");
                Vec::new()
            }
        }
    }

    /// The cells of `session` that wait for its app's answers.
    async fn awaiting(
        &self,
        session: &str,
    ) -> Result<Vec<talon_runtime::cells::AwaitingCell>, ApiError> {
        let store = self.cell_store()?;
        let session = SessionId::new(session);
        tokio::task::spawn_blocking(move || {
            talon_runtime::cells::awaiting_cells(store.as_ref(), &session)
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(cell_error)
    }

    /// The node's cell store (the database's `cells` table) for reads,
    /// settles and deletes, whose limits do not matter: one the node's
    /// runs already opened (opening another, a pool of its own on the
    /// same database, would contend with it), else one with the default
    /// limits.
    fn cell_store(&self) -> Result<Arc<dyn SnapshotStore>, ApiError> {
        let open = self
            .inner
            .cells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .next()
            .cloned();
        if let Some(store) = open {
            return Ok(store as Arc<dyn SnapshotStore>);
        }
        (self.cells())(StoreLimits::default()).map_err(|e| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!("the cell store cannot be opened: {e}"),
            )
        })
    }

    /// Records the app's answers in the cells they resume, and deletes
    /// the cells whose calls the app left unanswered (their `exec` reads
    /// as unanswered to the model).
    pub(super) async fn answer_cells(
        &self,
        input: &conversation::Prepared,
    ) -> Result<(), ApiError> {
        if input.resume.is_empty() && input.abandoned.is_empty() {
            return Ok(());
        }
        let store = self.cell_store()?;
        let resume = input.resume.clone();
        let answers = input.cell_answers.clone();
        let abandoned = input.abandoned.clone();
        tokio::task::spawn_blocking(move || {
            for cell in &resume {
                talon_runtime::cells::answer_cell(store.as_ref(), cell, &answers)?;
            }
            for cell in &abandoned {
                store.delete(&cell.cell_id)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(cell_error)
    }

    /// A session's conversation as the model reads it.
    pub(crate) async fn session_history(&self, session_id: &str) -> Result<Conversation, ApiError> {
        let mut stored = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .inner
                .store
                .messages(&SessionId::new(session_id), after.as_deref(), MAX_PAGE)
                .await
                .map_err(crate::error::api_error)?;
            let full = page.len() as u32 >= MAX_PAGE;
            after = page
                .last()
                .map(|m| m.message.id.clone())
                .map(MessageId::into_string);
            stored.extend(page.into_iter().map(|m| m.message));
            if !full {
                break;
            }
        }
        Ok(Conversation::of_session(&stored))
    }

    /// Appends what the run added to its session, unless it was rolled
    /// back, and returns it as stored (nothing for a run without a
    /// session).
    async fn save_messages(
        &self,
        run: &Run,
        added: &Conversation,
        active: &Active,
    ) -> Vec<Message> {
        let Some(session) = &run.session_id else {
            return Vec::new();
        };
        let stored = added.to_stored(session, &run.id, self.inner.store.now_ms());
        if active.rollback.load(Ordering::SeqCst) || stored.is_empty() {
            return stored;
        }
        if let Err(error) = self.inner.store.append_messages(session, &stored).await {
            tracing::error!(%error, run = %run.id, "a run's messages were not stored");
        }
        stored
    }

    /// The approval policy, `tools.approvals` (`talon_tools::approvals`),
    /// read once with the config.
    pub(super) fn policy(&self) -> Result<Arc<Approvals>, ApiError> {
        Ok(self.inner.host.approvals())
    }

    /// Where a run's suspended cells go: the store, one cell store per set
    /// of limits, shared by the node's runs.
    pub(super) fn cells(&self) -> talon_runtime::OpenCells {
        let engine = self.clone();
        Box::new(move |limits: StoreLimits| {
            let key = format!("{limits:?}");
            let mut cells = engine
                .inner
                .cells
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(store) = cells.get(&key) {
                return Ok(store.clone() as Arc<dyn SnapshotStore>);
            }
            let seal = talon_runtime::cells::default_store_key()?;
            let store = Arc::new(talon_store::CellStore::open(
                &engine.inner.store_config,
                limits,
                seal,
            )?);
            cells.insert(key, store.clone());
            Ok(store as Arc<dyn SnapshotStore>)
        })
    }
}

/// A cell store failure as the protocol's error.
fn cell_error(error: talon_runtime::cells::CellError) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!("the suspended cells could not be read or written: {error}"),
    )
}
