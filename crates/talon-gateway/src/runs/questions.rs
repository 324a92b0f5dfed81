//! Questions as durable resources: the gateway's executor of `ask_user`
//! ([`talon_runtime::questions`]). A call stores a [`Question`] and
//! `question.requested`, then waits like an approval does (the engine's
//! resolution watch, a 1 s store poll, its own expiry) until
//! `questions.respond` answers it; the answer (checked against the
//! question's choices or schema when it was given) is the call's result,
//! reported as `question.answered`. Before it waits, the run's state as
//! the turn's calls started is stored, and the tool is replay-safe: a run
//! whose node died resumes inside the turn and the call finds its question
//! again (by call id with the same prompt, else by prompt among the run's
//! pending ones); one the run already took an answer from is used up.

use std::sync::Arc;
use talon_protocol::gateway::bounded::QuestionId;

use serde_json::{Value, json};
use talon_protocol::EventData;
use talon_protocol::event_data::QuestionAnsweredData;
use talon_protocol::gateway::{ApiError, Question, QuestionStatus};
use talon_runtime::RunEmitter;
use talon_runtime::questions::Ask;
use talon_store::{PendingFilter, Store, StoreError};
use talon_tools::{
    BoxFuture, CatalogEntry, RunContext, ToolCall, ToolError, ToolErrorCode, ToolExecutor,
};

use super::new_id;
use super::sink::StoreSink;

/// Asks the run's questions through the store.
pub(crate) struct DurableQuestions {
    pub store: Store,
    pub events: RunEmitter,
    pub sink: Arc<StoreSink>,
    /// Bumped whenever this node resolves a question or an approval.
    pub resolved: tokio::sync::watch::Receiver<u64>,
    /// The engine, which counts the run as waiting on a person.
    pub engine: super::Engine,
    /// The questions this run took an answer (or an end) from, in this
    /// process: a later call with the same id is another call.
    pub settled: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl ToolExecutor for DurableQuestions {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        _: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let ask = Ask::from_args(&call.args)?;
            self.ask(ctx, call, ask).await.map_err(|error| {
                ToolError::new(
                    ToolErrorCode::Unavailable,
                    format!("the question could not be kept: {error}"),
                )
            })?
        })
    }
}

impl DurableQuestions {
    async fn ask(
        &self,
        ctx: &RunContext,
        call: &ToolCall,
        ask: Ask,
    ) -> Result<Result<Value, ToolError>, StoreError> {
        let mine = self
            .store
            .questions(&PendingFilter {
                run_id: Some(ctx.scope.run_id.clone().into_string()),
                ..PendingFilter::default()
            })
            .await?;
        // The same call (id and prompt; a provider may number every turn's
        // calls alike), or a pending question with the same prompt; never
        // one this run already took an answer from.
        let used = self.settled.lock().map(|a| a.clone()).unwrap_or_default();
        let same = |q: &&Question| !used.contains(q.id.as_str()) && q.prompt == ask.prompt;
        let earlier = mine
            .iter()
            .filter(same)
            .find(|q| q.tool_call_id.as_deref() == Some(call.call_id.as_str()))
            .or_else(|| {
                mine.iter()
                    .filter(same)
                    .find(|q| q.status == QuestionStatus::Pending)
            });
        let (question, fresh) = match earlier {
            Some(question) => (question.clone(), false),
            None => {
                let now = self.store.now_ms();
                let id = new_id("q").map_err(|e| StoreError::Corrupt(e.message))?;
                let question = Question {
                    id: QuestionId::new(id),
                    run_id: ctx.scope.run_id.clone(),
                    session_id: (!ctx.scope.session_id.as_str().is_empty())
                        .then(|| ctx.scope.session_id.clone()),
                    tool_call_id: Some(call.call_id.clone()),
                    prompt: ask.prompt,
                    choices: ask.choices,
                    answer_schema: ask.answer_schema,
                    expires_at: Some(now + ask.timeout.as_millis() as u64),
                    status: QuestionStatus::Pending,
                    answer: None,
                    created_at: now,
                    answered_at: None,
                };
                self.sink.keep_turn().await;
                self.store.create_question(&question).await?;
                self.events
                    .emit(EventData::QuestionRequested(question.clone()));
                (question, true)
            }
        };
        // From here on a cancelled run settles the question `cancelled`,
        // even while it is being made durable.
        let mut guard = Unanswered {
            store: self.store.clone(),
            id: Some(question.id.clone().into_string()),
            wait: self.engine.waiting_on_person(ctx.scope.run_id.as_str()),
        };
        if fresh {
            self.sink.flush().await;
        }
        tracing::info!(
            target: "talon::run",
            run_id = %ctx.scope.run_id,
            question_id = %question.id,
            "run waiting for an answer"
        );
        let settled = self.wait(question).await?;
        guard.id = None;
        if settled.status != QuestionStatus::Answered {
            // No event says so (an answer's does): the run is running again
            // unless it waits on something else.
            self.store
                .set_run_waiting(&ctx.scope.run_id, talon_store::RunWaits::Answered)
                .await?;
        }
        if let Ok(mut used) = self.settled.lock() {
            used.insert(settled.id.to_string());
        }
        tracing::info!(
            target: "talon::run",
            run_id = %ctx.scope.run_id,
            question_id = %settled.id,
            status = ?settled.status,
            "question settled"
        );
        Ok(match settled.status {
            QuestionStatus::Answered => {
                let answer = settled.answer.clone().unwrap_or(Value::Null);
                self.events
                    .emit(EventData::QuestionAnswered(QuestionAnsweredData {
                        question_id: settled.id.clone(),
                        answer: answer.clone(),
                    }));
                Ok(json!({"questionId": settled.id, "answer": answer}))
            }
            QuestionStatus::Expired => Err(ToolError::new(
                ToolErrorCode::Timeout,
                format!(
                    "nobody answered question {} before it expired; go on without the answer or ask again",
                    settled.id
                ),
            )),
            _ => Err(ToolError::new(
                ToolErrorCode::Aborted,
                format!("question {} was cancelled", settled.id),
            )),
        })
    }

    async fn wait(&self, question: Question) -> Result<Question, StoreError> {
        super::person::wait(&self.store, &self.resolved, question).await
    }
}

/// Resolves a question `cancelled` when its call stops waiting.
struct Unanswered {
    store: Store,
    id: Option<String>,
    /// Counts the run as waiting on a person meanwhile.
    wait: super::PersonWait,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        if self.wait.suspended() {
            return;
        }
        let store = self.store.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let now = store.now_ms();
                let cancelled = store
                    .resolve_question(&id, |q| {
                        q.status = QuestionStatus::Cancelled;
                        q.answered_at = Some(now);
                    })
                    .await;
                if let Err(error) = cancelled {
                    tracing::warn!(%error, question = %id, "a cancelled question was left pending");
                }
            });
        }
    }
}

/// Checks an answer against its question: one of its choices, and its
/// schema; the error lists every reason.
pub(crate) fn check_answer(question: &Question, answer: &Value) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    if let Some(choices) = &question.choices
        && !answer
            .as_str()
            .is_some_and(|a| choices.iter().any(|c| c == a))
    {
        errors.push(format!("the answer must be one of {choices:?}"));
    }
    if let Some(schema) = &question.answer_schema
        && let Err(found) = talon_tools::schema::validate(schema, answer)
    {
        errors.extend(found.0);
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(
        talon_protocol::gateway::refuse::answer_unfit(&errors.join("; ")).with_details(
            talon_protocol::gateway::ErrorDetails {
                errors,
                ..Default::default()
            },
        ),
    )
}
