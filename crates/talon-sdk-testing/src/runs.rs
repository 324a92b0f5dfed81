//! Runs as the gateway accepts and controls them: `runs.create` and
//! `sessions.send` (one path: checks, the idempotency key, the session,
//! the multitask strategy, `run.created`, then the run played on a task),
//! `runs.cancel`, `runs.wait`, `runs.events` and `sessions.abort`.

use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId};

use talon_protocol::EventData;
use talon_protocol::event_data::{RunCreatedData, RunEndedData, RunQueuedData};
use talon_protocol::gateway::params::{RunsCreateParams, RunsEventsParams, RunsEventsResult};
use talon_protocol::gateway::run_views::EventCount;
use talon_protocol::gateway::{
    ApiError, EnvironmentStatus, MultitaskStrategy, Run, RunInput, RunResult, RunStatus,
    RunsListParams, RunsListResult, Session, Usage, UsageSummary, UsageSummaryParams, UsageTally,
};

use super::play;
use super::script::{cursor_expired, take_expire};
use super::state::{DEFAULT_AGENT, FirstCall, RunRecord, Shared, State, hash_of, not_found};

/// How long `runs.cancel` waits for a running run to end.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);
const DEFAULT_WAIT: Duration =
    Duration::from_millis(talon_protocol::gateway::caps::DEFAULT_WAIT_MS);
const MAX_WAIT: Duration =
    Duration::from_millis(talon_protocol::gateway::caps::DEFAULT_MAX_WAIT_MS);
/// A page's length: the protocol's default and cap.
pub(crate) fn limit(asked: Option<u32>) -> usize {
    talon_protocol::gateway::page::limit(asked) as usize
}

/// `runs.list`: newest first (ties by id, descending), after the cursor.
pub(crate) fn list(shared: &Shared, p: &RunsListParams) -> Result<RunsListResult, ApiError> {
    p.check()?;
    let (mut runs, cursor) = shared.read(|s| {
        let cursor = p
            .cursor
            .as_ref()
            .map(|c| c.as_str())
            .map(|id| s.runs.get(id).map(|r| (r.run.created_at, r.run.id.clone())));
        let runs: Vec<Run> = s
            .runs
            .values()
            .map(|r| r.run.clone())
            .filter(|r| p.admits(r))
            .collect();
        (runs, cursor)
    });
    runs.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
    if let Some(cursor) = cursor {
        let (at, id) = cursor.ok_or_else(|| {
            RunsListParams::unknown_cursor(
                p.cursor.as_ref().map(|c| c.as_str()).unwrap_or_default(),
            )
        })?;
        runs.retain(|r| (r.created_at, r.id.as_str()) < (at, id.as_str()));
    }
    let limit = limit(p.limit);
    let more = runs.len() > limit;
    runs.truncate(limit);
    let next_cursor = more
        .then(|| runs.last().map(|r| r.id.clone().into()))
        .flatten();
    Ok(RunsListResult { runs, next_cursor })
}

/// `usage.summary`: every run of the window, through the protocol's tally.
pub(crate) fn usage(shared: &Shared, p: &UsageSummaryParams) -> Result<UsageSummary, ApiError> {
    shared.read(|s| {
        let window = p.window(s.now_ms())?;
        let mut tally = UsageTally::default();
        for record in s.runs.values() {
            let run = &record.run;
            if run.created_at < window.0
                || run.created_at >= window.1
                || p.agent_id.as_ref().is_some_and(|a| *a != run.agent_id)
            {
                continue;
            }
            tally.add(
                run.created_at,
                run.agent_id.as_str(),
                run.model.as_deref(),
                run.usage.as_ref(),
            );
        }
        Ok(tally.finish(window))
    })
}

/// The input's text as `run.created` and the session's user message
/// carry it (the params are checked already).
fn input_text(input: &RunInput) -> String {
    match input {
        RunInput::Text(text) => text.clone(),
        RunInput::Messages(messages) => messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default(),
    }
}

/// The run's session: by id, by key (created if absent), or new.
fn session_for(s: &mut State, p: &RunsCreateParams) -> Result<Session, ApiError> {
    let agent = p.agent_id.as_ref().map(AgentId::as_str);
    if let Some(agent) = agent
        && s.agent(agent).is_none()
    {
        return Err(not_found("agent", agent));
    }
    let session = if let Some(id) = &p.session_id {
        let session = s.session(id.as_str())?.clone();
        if p.session_key.as_ref().is_some_and(|k| *k != session.key) {
            return Err(talon_protocol::gateway::refuse::session_id_and_key_differ());
        }
        session
    } else if let Some(key) = &p.session_key {
        s.resolve_session(key.as_str(), agent)?
    } else {
        s.create_session(agent.unwrap_or(DEFAULT_AGENT), None, Default::default())?
    };
    if let Some(agent) = agent
        && session.agent_id != AgentId::new(agent)
    {
        return Err(talon_protocol::gateway::refuse::session_of_other_agent(
            session.key.as_str(),
            session.agent_id.as_str(),
            agent,
        ));
    }
    Ok(session)
}

/// The live runs of a session, oldest first.
pub(crate) fn live_runs(s: &State, session_id: &str) -> Vec<RunId> {
    let mut live: Vec<RunId> = s
        .runs
        .values()
        .filter(|r| {
            r.run.session_id.as_ref().map(SessionId::as_str) == Some(session_id)
                && !r.run.status.is_terminal()
        })
        .map(|r| r.run.id.clone())
        .collect();
    live.sort();
    live
}

/// Accepts a run (`runs.create`, `sessions.send`) and starts playing it.
pub(crate) fn start_run(shared: &Arc<Shared>, p: RunsCreateParams) -> Result<Run, ApiError> {
    p.check()?;
    let input = input_text(&p.input);
    let hash = {
        let mut keyless = p.clone();
        keyless.idempotency_key = None;
        hash_of("runs.create", &keyless)
    };
    let accepted = shared.write(|s| -> Result<_, ApiError> {
        if let Some(key) = &p.idempotency_key
            && let Some(first) = s.idempotency.get(key.as_str())
        {
            if first.hash != hash {
                return Err(talon_protocol::gateway::refuse::idempotency_reused(
                    key.as_str(),
                ));
            }
            let id = first.answer.as_str().unwrap_or_default();
            return Ok((s.run(id)?.run.clone(), None));
        }
        if let Some(id) = &p.environment_id {
            let environment = s
                .environments
                .iter()
                .find(|e| &e.id == id)
                .ok_or_else(|| not_found("environment", id.as_str()))?;
            if environment.status != EnvironmentStatus::Ready {
                return Err(
                    talon_protocol::gateway::refuse::environment_unready_for_run(id.as_str()),
                );
            }
        }
        let session = session_for(s, &p)?;
        let live = live_runs(s, session.id.as_str());
        let strategy = p.multitask_strategy.unwrap_or_default();
        if !live.is_empty() {
            match strategy {
                MultitaskStrategy::Reject => {
                    return Err(
                        talon_protocol::gateway::refuse::session_busy().with_details(
                            talon_protocol::gateway::ErrorDetails {
                                active_run_ids: live,
                                ..Default::default()
                            },
                        ),
                    );
                }
                MultitaskStrategy::Interrupt | MultitaskStrategy::Rollback => {
                    let rollback = strategy == MultitaskStrategy::Rollback;
                    for id in &live {
                        request_cancel(s, id.as_str(), rollback);
                    }
                }
                MultitaskStrategy::Enqueue => {}
            }
        }
        let run = Run {
            summary: p.input.summary(),
            model: None,
            subject: None,
            id: RunId::new(s.new_id("run")),
            agent_id: session.agent_id.clone(),
            session_id: Some(session.id.clone()),
            session_key: Some(session.key.clone()),
            status: RunStatus::Queued,
            created_at: s.now_ms(),
            started_at: None,
            ended_at: None,
            usage: None,
            error: None,
        };
        s.push_run_event(
            &run,
            EventData::RunCreated(RunCreatedData {
                input: input.clone(),
            }),
        );
        if !live.is_empty() && strategy == MultitaskStrategy::Enqueue {
            s.push_run_event(
                &run,
                EventData::RunQueued(RunQueuedData {
                    reason: "session".into(),
                }),
            );
        }
        let script = s.scripts.pop_front().unwrap_or_default();
        s.runs.insert(
            run.id.clone(),
            RunRecord {
                run: run.clone(),
                result: None,
                input,
                cancel: None,
                open_call: None,
                artifacts: Vec::new(),
            },
        );
        if let Some(key) = &p.idempotency_key {
            s.idempotency.insert(
                key.to_string(),
                FirstCall {
                    hash: hash.clone(),
                    answer: serde_json::Value::String(run.id.to_string()),
                },
            );
        }
        Ok((run, Some(script)))
    })?;
    let (run, script) = accepted;
    if let Some(script) = script {
        tracing::debug!(run = %run.id, "the fake gateway plays a run");
        let timeout = p.timeout_ms.map(Duration::from_millis);
        tokio::spawn(play::play(shared.clone(), run.id.clone(), script, timeout));
    }
    Ok(run)
}

/// Asks a run to stop: a queued one ends at once (`run.cancelled`), a
/// running one is told and ends itself. Nothing for an ended run.
fn request_cancel(s: &mut State, run_id: &str, rollback: bool) {
    let Some(record) = s.runs.get_mut(run_id) else {
        return;
    };
    if record.run.status.is_terminal() {
        return;
    }
    let rollback = rollback || record.cancel == Some(true);
    record.cancel = Some(rollback);
    if record.run.status != RunStatus::Queued {
        return;
    }
    record.run.status = RunStatus::Cancelled;
    record.run.ended_at = Some(s.clock.now_ms());
    let run = record.run.clone();
    record.result = Some(result_of(&run, None, None));
    s.push_run_event(
        &run,
        EventData::RunCancelled(RunEndedData {
            text: None,
            error: Some("the run was cancelled before it started".into()),
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
            duration_ms: 0,
            pending_tool_calls: Vec::new(),
            telemetry: None,
        }),
    );
}

/// `runs.cancel`: the run once it ended (at most [`CANCEL_SETTLE`] later).
pub(crate) async fn cancel(shared: &Shared, run_id: &str, rollback: bool) -> Result<Run, ApiError> {
    shared.write(|s| {
        s.run(run_id)?;
        request_cancel(s, run_id, rollback);
        Ok::<_, ApiError>(())
    })?;
    let deadline = tokio::time::Instant::now() + CANCEL_SETTLE;
    let mut changed = shared.watch();
    loop {
        changed.borrow_and_update();
        let run = shared.read(|s| s.run(run_id).map(|r| r.run.clone()))?;
        if run.status.is_terminal() || tokio::time::Instant::now() >= deadline {
            return Ok(run);
        }
        let _ = tokio::time::timeout_at(deadline, changed.changed()).await;
    }
}

/// `runs.wait`: the result, or `accepted` once the deadline passed.
pub(crate) async fn wait(
    shared: &Shared,
    run_id: &str,
    timeout: Option<Duration>,
) -> Result<RunResult, ApiError> {
    let timeout = timeout.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut changed = shared.watch();
    let mut closing = shared.closing.clone();
    loop {
        changed.borrow_and_update();
        let (run, result) =
            shared.read(|s| s.run(run_id).map(|r| (r.run.clone(), r.result.clone())))?;
        if let Some(result) = result {
            return Ok(result);
        }
        if tokio::time::Instant::now() >= deadline || *closing.borrow() {
            return Ok(result_of(&run, None, None));
        }
        tokio::select! {
            _ = tokio::time::timeout_at(deadline, changed.changed()) => {}
            _ = closing.changed() => {}
        }
    }
}

/// `runs.events`: a page of the run's events after the cursor.
pub(crate) fn events(shared: &Shared, p: &RunsEventsParams) -> Result<RunsEventsResult, ApiError> {
    shared.write(|s| {
        s.run(p.run_id.as_str())?;
        let window = p.window()?;
        if let Some(cursor) = window.after
            && take_expire(&mut s.faults)
        {
            return Err(cursor_expired(cursor));
        }
        // The log's event `n` is at `n - 1`.
        let from = usize::try_from(window.after.unwrap_or(0)).unwrap_or(usize::MAX);
        let to = window.before.map_or(usize::MAX, |b| {
            usize::try_from(b.saturating_sub(1)).unwrap_or(usize::MAX)
        });
        let of_run = s
            .log
            .iter()
            .take(to)
            .skip(from)
            .filter(|e| e.run_id.as_ref() == Some(&p.run_id));
        let events: Vec<_> = match window.count {
            EventCount::First(count) => of_run.take(limit(count)).cloned().collect(),
            EventCount::Last(last) => {
                let all: Vec<_> = of_run.collect();
                let skip = all.len().saturating_sub(limit(Some(last)));
                all.into_iter().skip(skip).cloned().collect()
            }
        };
        let done = events.last().is_some_and(|e| e.kind.is_terminal());
        Ok(RunsEventsResult { events, done })
    })
}

/// `sessions.abort`: cancels every live run of the session.
pub(crate) async fn abort(shared: &Shared, session_id: &str) -> Result<Vec<RunId>, ApiError> {
    let live = shared.read(|s| {
        s.session(session_id)?;
        Ok::<_, ApiError>(live_runs(s, session_id))
    })?;
    let mut cancelled = Vec::new();
    for id in live {
        cancelled.push(cancel(shared, id.as_str(), false).await?.id);
    }
    Ok(cancelled)
}

/// The result of `run` as it is (`accepted` while it has not ended).
pub(crate) fn result_of(
    run: &Run,
    text: Option<String>,
    artifacts: Option<Vec<talon_protocol::gateway::ArtifactSummary>>,
) -> RunResult {
    RunResult::of(run, text, artifacts)
}
