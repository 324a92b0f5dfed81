//! Playing a [`FakeRun`]: on its own task, once its session's lane is
//! free, the run emits what the gateway's agent loop would (`run.started`,
//! its scripted steps, the reply's deltas and message, the terminal event
//! with `RunEndedData`), waits on approvals and questions like a durable
//! run does, and honours cancellation and its own time limit; its end is
//! [`super::end`]'s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use talon_protocol::EventData;
use talon_protocol::event_data::{
    ApprovalResolvedData, AssistantMessageData, QuestionAnsweredData, RunStartedData, TextDelta,
    ToolCallCompletedData, ToolCallFailedData, ToolCallStartedData,
};
use talon_protocol::gateway::bounded::{ApprovalId, QuestionId, RunId};
use talon_protocol::gateway::{
    Approval, ApprovalDecision, ApprovalKind, ApprovalStatus, Question, QuestionStatus, RiskLevel,
    RunStatus, ToolSummary, Usage,
};

use super::end::words;
use super::runs::live_runs;
use super::script::{FakeRun, Step};
use super::state::{MODEL, Shared, State, mime_of};

/// How long approvals and questions wait (the gateway's default).
const PERSON_WAIT_MS: u64 = 24 * 3600 * 1000;

/// Why a run stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `runs.cancel` (or a multitask strategy) asked.
    Cancelled,
    /// It exceeded its own time limit.
    TimedOut,
    /// It already ended (cancelled while queued).
    Ended,
    /// The gateway shuts down.
    Closing,
}

/// What the run did, for its end.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub turns: u32,
    pub tool_calls: u32,
    pub text: Option<String>,
}

/// Waits until `ready` says so, or the run is told to stop.
pub(crate) async fn wait_for<T>(
    shared: &Shared,
    run_id: &str,
    mut ready: impl FnMut(&State) -> Option<T>,
) -> Result<T, Stop> {
    let mut changed = shared.watch();
    let mut closing = shared.closing.clone();
    loop {
        changed.borrow_and_update();
        let seen = shared.read(|s| {
            let record = s.runs.get(run_id).ok_or(Stop::Ended)?;
            if record.run.status.is_terminal() {
                return Err(Stop::Ended);
            }
            if record.cancel.is_some() {
                return Err(Stop::Cancelled);
            }
            Ok(ready(s))
        })?;
        if let Some(value) = seen {
            return Ok(value);
        }
        if *closing.borrow() {
            return Err(Stop::Closing);
        }
        tokio::select! {
            changed = changed.changed() => if changed.is_err() { return Err(Stop::Closing) },
            closed = closing.changed() => if closed.is_err() { return Err(Stop::Closing) },
        }
    }
}

/// Sleeps `d`, unless the run is told to stop first.
async fn pause(shared: &Shared, run_id: &str, d: Duration) -> Result<(), Stop> {
    tokio::select! {
        () = tokio::time::sleep(d) => Ok(()),
        stopped = wait_for(shared, run_id, |_| None::<()>) => stopped,
    }
}

/// Plays `script` as run `run_id`, then ends it.
pub(crate) async fn play(
    shared: Arc<Shared>,
    run_id: RunId,
    script: FakeRun,
    timeout: Option<Duration>,
) {
    // One run at a time per session, in order.
    let lane = wait_for(&shared, run_id.as_str(), |s| {
        let session = s.runs.get(&run_id)?.run.session_id.clone()?;
        let first = live_runs(s, session.as_str()).into_iter().next()?;
        (first == run_id).then_some(())
    })
    .await;
    let started = Instant::now();
    let outcome = match lane {
        Ok(()) => {
            let begun = shared.write(|s| {
                let tools: Vec<String> = s.tools.iter().map(|t| t.name.clone()).collect();
                let Some(record) = s.runs.get_mut(&run_id) else {
                    return false;
                };
                if record.run.status != RunStatus::Queued || record.cancel.is_some() {
                    return false;
                }
                {
                    record.run.status = RunStatus::Running;
                    record.run.started_at = Some(s.clock.now_ms());
                    record.run.model = Some(MODEL.into());
                    let run = record.run.clone();
                    s.push_run_event(
                        &run,
                        EventData::RunStarted(RunStartedData {
                            model: MODEL.into(),
                            surface: "direct".into(),
                            tools,
                            resumed_after_turn: None,
                        }),
                    );
                }
                true
            });
            if !begun {
                return;
            }
            let mut progress = Progress::default();
            let steps = steps(&shared, run_id.as_str(), &script, &mut progress);
            let stopped = match timeout {
                Some(limit) => tokio::time::timeout(limit, steps)
                    .await
                    .unwrap_or(Err(Stop::TimedOut)),
                None => steps.await,
            };
            Some((stopped, progress))
        }
        Err(Stop::Cancelled) => Some((Err(Stop::Cancelled), Progress::default())),
        Err(_) => None,
    };
    let Some((stopped, progress)) = outcome else {
        return;
    };
    if stopped == Err(Stop::Closing) || stopped == Err(Stop::Ended) {
        return;
    }
    shared.write(|s| {
        super::end::end(
            s,
            run_id.as_str(),
            &script,
            stopped,
            progress,
            started,
            timeout,
        )
    });
}

async fn steps(
    shared: &Arc<Shared>,
    run_id: &str,
    script: &FakeRun,
    progress: &mut Progress,
) -> Result<(), Stop> {
    for step in &script.steps {
        match step {
            Step::Event(data) => emit(shared, run_id, (**data).clone()),
            Step::Delay(d) => pause(shared, run_id, *d).await?,
            Step::Approval { tool, arguments } => {
                model_call(shared, run_id, progress, None);
                progress.tool_calls += 1;
                approval(shared, run_id, tool, arguments).await?;
            }
            Step::Question { prompt, choices } => {
                model_call(shared, run_id, progress, None);
                progress.tool_calls += 1;
                question(shared, run_id, prompt, choices).await?;
            }
            Step::Artifact { name, kind, bytes } => shared.write(|s| {
                let Some(run) = s.runs.get(run_id).map(|r| r.run.clone()) else {
                    return;
                };
                let mime = mime_of(name, bytes);
                let summary = s.put_artifact(&run, *kind, name.clone(), mime, bytes.clone());
                if let Some(record) = s.runs.get_mut(run_id) {
                    record.artifacts.push(summary.clone());
                }
                s.push_run_event(&run, EventData::ArtifactCreated(summary));
            }),
            Step::Spawn(task) => {
                model_call(shared, run_id, progress, None);
                progress.tool_calls += 1;
                spawn(shared, run_id, task);
            }
        }
    }
    if script.failure.is_none() {
        let text = script.reply.clone();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(8) {
            emit(
                shared,
                run_id,
                EventData::AssistantDelta(TextDelta {
                    text: piece.iter().collect(),
                }),
            );
        }
        model_call(shared, run_id, progress, Some(&text));
        if !text.is_empty() {
            progress.text = Some(text);
        }
    }
    Ok(())
}

/// One model call's `assistant.message`, as the agent loop emits it: the
/// reply's text (`None`: a call of one tool), and its usage in words (the
/// input counted on the run's first call).
fn model_call(shared: &Shared, run_id: &str, progress: &mut Progress, reply: Option<&str>) {
    let input = match progress.turns {
        0 => shared.read(|s| s.runs.get(run_id).map_or(1, |r| words(&r.input).max(1))),
        _ => 0,
    };
    progress.turns += 1;
    let output = reply.map_or(0, words);
    emit(
        shared,
        run_id,
        EventData::AssistantMessage(AssistantMessageData {
            text: reply.filter(|t| !t.is_empty()).map(str::to_owned),
            tool_calls: u32::from(reply.is_none()),
            finish_reason: Some(
                if reply.is_some() {
                    "stop"
                } else {
                    "tool_calls"
                }
                .into(),
            ),
            usage: Some(Usage {
                input_tokens: Some(input),
                output_tokens: Some(output),
                total_tokens: Some(input + output),
                cost_usd: None,
                ..Usage::default()
            }),
        }),
    );
}

fn emit(shared: &Shared, run_id: &str, data: EventData) {
    shared.write(|s| {
        if let Some(run) = s.runs.get(run_id).map(|r| r.run.clone()) {
            s.push_run_event(&run, data);
        }
    });
}

/// A `sessions_spawn` call that records `task` and returns at once, as
/// the gateway's answers: `{status: "accepted", taskId}`.
fn spawn(shared: &Arc<Shared>, run_id: &str, task: &super::tasks::FakeTask) {
    let mut arguments = json!({"task": task.description});
    if let Some(label) = &task.label {
        arguments["label"] = json!(label);
    }
    let stored = shared.write(|s| {
        let run = s.runs.get(run_id).map(|r| r.run.clone())?;
        let call_id = start_call(s, run_id, "sessions_spawn", arguments);
        let stored = s.create_task(task, Some(&run));
        if let Some(record) = s.runs.get_mut(run_id) {
            record.open_call = None;
        }
        s.push_run_event(
            &run,
            EventData::ToolCallCompleted(ToolCallCompletedData {
                call_id,
                parent_id: None,
                name: "sessions_spawn".into(),
                duration_ms: 0,
                result: json!({"status": "accepted", "taskId": stored.id}),
            }),
        );
        Some(stored)
    });
    if let Some(stored) = stored {
        super::tasks::play(shared.clone(), stored.id, task);
    }
}

/// Starts a tool call: `tool.call.started`; its id.
fn start_call(s: &mut State, run_id: &str, name: &str, arguments: serde_json::Value) -> String {
    let call_id: String = s.new_id("call");
    if let Some(record) = s.runs.get_mut(run_id) {
        record.open_call = Some((call_id.clone(), name.to_owned()));
        let run = record.run.clone();
        s.push_run_event(
            &run,
            EventData::ToolCallStarted(ToolCallStartedData {
                call_id: call_id.clone(),
                parent_id: None,
                name: name.to_owned(),
                source: None,
                arguments: Some(arguments),
                replay_safe: false,
            }),
        );
    }
    call_id
}

/// The name and catalog id of the tool a scripted approval is for
/// ([`FakeRun::approval`](super::FakeRun::approval)'s `tool`): the tool
/// set with `set_tools` whose id is `tool`, else whose name is; else
/// `tool` itself, a catalog id (the tool named by its last `:` segment)
/// or a name (a core tool's, `openclaw:core:<name>`).
pub(crate) fn tool_of(tools: &[ToolSummary], tool: &str) -> (String, String) {
    let set = tools
        .iter()
        .find(|t| t.id == tool)
        .or_else(|| tools.iter().find(|t| t.name == tool));
    match (set, tool.rsplit_once(':')) {
        (Some(t), _) => (t.name.clone(), t.id.clone()),
        (None, Some((_, name))) => (name.to_owned(), tool.to_owned()),
        (None, None) => (tool.to_owned(), format!("openclaw:core:{tool}")),
    }
}

async fn approval(
    shared: &Shared,
    run_id: &str,
    tool: &str,
    arguments: &serde_json::Value,
) -> Result<(), Stop> {
    let begun = Instant::now();
    let (tool, tool_id) = shared.read(|s| tool_of(&s.tools, tool));
    // Named as the model names it, like the gateway's calls.
    let tool = tool.as_str();
    let (call_id, approval_id) = shared.write(|s| {
        let call_id = start_call(s, run_id, tool, arguments.clone());
        let id: ApprovalId = ApprovalId::new(s.new_id("appr"));
        let run = s.runs.get(run_id).map(|r| r.run.clone());
        if let Some(run) = run {
            let now = s.now_ms();
            let summary = Approval::summary_of(tool, &arguments.to_string());
            let approval = Approval {
                id: id.clone(),
                run_id: run.id.clone(),
                session_id: run.session_id.clone(),
                kind: ApprovalKind::Tool,
                summary,
                tool_name: Some(tool.to_owned()),
                tool_id: Some(tool_id),
                tool_call_id: Some(call_id.clone()),
                arguments: Some(arguments.clone()),
                environment_action: None,
                risk: RiskLevel::Medium,
                decisions: vec![
                    ApprovalDecision::ApproveOnce,
                    ApprovalDecision::ApproveSession,
                    ApprovalDecision::ApproveAlways,
                    ApprovalDecision::Deny,
                ],
                expires_at: Some(now + PERSON_WAIT_MS),
                reusable: true,
                status: ApprovalStatus::Pending,
                decision: None,
                reason: None,
                created_at: now,
                resolved_at: None,
            };
            s.approvals.push(approval.clone());
            waits(s, run_id, Person::Asked);
            s.push_run_event(&run, EventData::ApprovalRequested(approval));
        }
        (call_id, id)
    });
    let resolved = wait_for(shared, run_id, |s| {
        s.approvals
            .iter()
            .find(|a| a.id == approval_id && a.status != ApprovalStatus::Pending)
            .cloned()
    })
    .await?;
    shared.write(|s| {
        let Some(record) = s.runs.get_mut(run_id) else {
            return;
        };
        record.open_call = None;
        let run = record.run.clone();
        waits(s, run_id, Person::Answered);
        s.push_run_event(
            &run,
            EventData::ApprovalResolved(ApprovalResolvedData {
                approval_id: resolved.id.clone(),
                status: resolved.status,
                decision: resolved.decision,
                reason: resolved.reason.clone(),
                reused: false,
            }),
        );
        let duration_ms = begun.elapsed().as_millis() as u64;
        let ended = if resolved.status == ApprovalStatus::Approved {
            EventData::ToolCallCompleted(ToolCallCompletedData {
                call_id,
                parent_id: None,
                name: tool.to_owned(),
                duration_ms,
                result: json!({"ok": true}),
            })
        } else {
            let error = match &resolved.reason {
                Some(reason) => format!("the call of {tool} was denied: {reason}"),
                None => format!("the call of {tool} was denied"),
            };
            EventData::ToolCallFailed(ToolCallFailedData {
                call_id,
                parent_id: None,
                name: tool.to_owned(),
                duration_ms: Some(duration_ms),
                status: Some("denied".into()),
                error: json!({"error": error, "status": "denied"}),
            })
        };
        s.push_run_event(&run, ended);
    });
    Ok(())
}

async fn question(
    shared: &Shared,
    run_id: &str,
    prompt: &str,
    choices: &[String],
) -> Result<(), Stop> {
    let begun = Instant::now();
    let mut arguments = json!({"prompt": prompt});
    if !choices.is_empty() {
        arguments["choices"] = json!(choices);
    }
    let (call_id, question_id) = shared.write(|s| {
        let call_id = start_call(s, run_id, "ask_user", arguments);
        let id: QuestionId = QuestionId::new(s.new_id("q"));
        if let Some(run) = s.runs.get(run_id).map(|r| r.run.clone()) {
            let now = s.now_ms();
            let question = Question {
                id: id.clone(),
                run_id: run.id.clone(),
                session_id: run.session_id.clone(),
                tool_call_id: Some(call_id.clone()),
                prompt: prompt.to_owned(),
                choices: (!choices.is_empty()).then(|| choices.to_vec()),
                answer_schema: None,
                expires_at: Some(now + PERSON_WAIT_MS),
                status: QuestionStatus::Pending,
                answer: None,
                created_at: now,
                answered_at: None,
            };
            s.questions.push(question.clone());
            waits(s, run_id, Person::Asked);
            s.push_run_event(&run, EventData::QuestionRequested(question));
        }
        (call_id, id)
    });
    let answer = wait_for(shared, run_id, |s| {
        s.questions
            .iter()
            .find(|q| q.id == question_id && q.status == QuestionStatus::Answered)
            .map(|q| q.answer.clone().unwrap_or_default())
    })
    .await?;
    shared.write(|s| {
        let Some(record) = s.runs.get_mut(run_id) else {
            return;
        };
        record.open_call = None;
        let run = record.run.clone();
        waits(s, run_id, Person::Answered);
        s.push_run_event(
            &run,
            EventData::QuestionAnswered(QuestionAnsweredData {
                question_id: question_id.clone(),
                answer: answer.clone(),
            }),
        );
        s.push_run_event(
            &run,
            EventData::ToolCallCompleted(ToolCallCompletedData {
                call_id,
                parent_id: None,
                name: "ask_user".into(),
                duration_ms: begun.elapsed().as_millis() as u64,
                result: json!({"questionId": question_id, "answer": answer}),
            }),
        );
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use talon_protocol::ToolEffect;
    use talon_protocol::gateway::{ApprovalPolicy, ToolOrigin, ToolReach};

    use super::*;

    fn tool(id: &str, name: &str) -> ToolSummary {
        ToolSummary {
            id: id.into(),
            name: name.into(),
            source: ToolOrigin::Mcp,
            owner: "files".into(),
            description: "Writes a file.".into(),
            arguments: vec![],
            parameters: json!({"type": "object"}),
            approval: ApprovalPolicy::Ask,
            requires_approval: true,
            reach: vec![ToolReach::Direct],
            hidden: false,
            read_only: false,
            writable: true,
            host_capable: false,
            effect: ToolEffect::Writes,
        }
    }

    #[test]
    fn a_scripted_approval_names_its_tool_and_gives_its_id_like_the_gateway() {
        let tools = [tool("mcp:files:write", "write")];
        let named: Vec<_> = [
            "mcp:files:write",
            // A set tool by its name.
            "write",
            // Another tool of the same name, by its id.
            "openclaw:core:write",
            // Any other name: a core tool's.
            "exec",
        ]
        .iter()
        .map(|t| tool_of(&tools, t))
        .collect();
        let pair = |name: &str, id: &str| (name.to_owned(), id.to_owned());
        assert_eq!(
            named,
            [
                pair("write", "mcp:files:write"),
                pair("write", "mcp:files:write"),
                pair("write", "openclaw:core:write"),
                pair("exec", "openclaw:core:exec"),
            ]
        );
    }
}

/// Where a run is with the person it asked.
#[derive(Clone, Copy)]
enum Person {
    /// An approval or a question was asked.
    Asked,
    /// It was answered.
    Answered,
}

/// Moves a running run to `waiting` as it asks a person, and a waiting one
/// back to `running` as it is answered, as the gateway does (the fake's
/// runs ask one thing at a time).
fn waits(s: &mut State, run_id: &str, person: Person) {
    if let Some(record) = s.runs.get_mut(run_id) {
        let (from, to) = match person {
            Person::Asked => (RunStatus::Running, RunStatus::Waiting),
            Person::Answered => (RunStatus::Waiting, RunStatus::Running),
        };
        if record.run.status == from {
            record.run.status = to;
        }
    }
}
