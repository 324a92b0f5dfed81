//! What a test tells the fake gateway: [`FakeRun`], the script a run
//! plays (its events, pauses, approvals, questions, artifacts, spawned tasks and how it
//! ends), and [`Fault`], a failure injected into the transport.

use std::time::Duration;

use talon_protocol::EventData;
use talon_protocol::gateway::{ApiError, ArtifactType, ErrorCode};

/// One step of a [`FakeRun`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Emit this event.
    Event(Box<EventData>),
    /// Pause.
    Delay(Duration),
    /// Ask for an approval of a tool call and wait for the decision.
    Approval {
        /// The tool: a catalog id, or a name (see [`FakeRun::approval`]).
        tool: String,
        /// The call's arguments.
        arguments: serde_json::Value,
    },
    /// Ask a question and wait for the answer.
    Question {
        /// What is asked.
        prompt: String,
        /// The answers to choose from.
        choices: Vec<String>,
    },
    /// Produce an artifact.
    Artifact {
        /// Its name (the title, and the MIME type by extension).
        name: String,
        /// What it is.
        kind: ArtifactType,
        /// Its content.
        bytes: Vec<u8>,
    },
    /// Start a background task (a `sessions_spawn` call).
    Spawn(Box<super::tasks::FakeTask>),
}

/// The script of one run of the fake gateway: its steps in order, then
/// its end (the assistant's reply and `run.completed`, or `run.failed`).
///
/// ```no_run
/// # use talon_sdk_testing::FakeRun;
/// # use talon_protocol::gateway::ArtifactType;
/// let run = FakeRun::reply("Done.")
///     .approval("openclaw:core:write", serde_json::json!({"path": "a.txt"}))
///     .artifact("a.txt", ArtifactType::File, b"hello".to_vec());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRun {
    pub(crate) steps: Vec<Step>,
    pub(crate) reply: String,
    pub(crate) failure: Option<ApiError>,
}

impl Default for FakeRun {
    fn default() -> Self {
        Self::reply("ok")
    }
}

impl FakeRun {
    /// A run that answers `text`: `run.started`, `assistant.delta`s (8
    /// characters each, as the mock model streams), `assistant.message`,
    /// `run.completed`; its `RunResult` is `completed` with
    /// `output.text`.
    pub fn reply(text: impl Into<String>) -> Self {
        Self {
            steps: Vec::new(),
            reply: text.into(),
            failure: None,
        }
    }

    /// Emits `data` (in order with the other steps, before the reply).
    pub fn event(mut self, data: EventData) -> Self {
        self.steps.push(Step::Event(Box::new(data)));
        self
    }

    /// Pauses for `d` between the steps around it.
    pub fn delay(mut self, d: Duration) -> Self {
        self.steps.push(Step::Delay(d));
        self
    }

    /// A call of `tool` that needs approval: `tool.call.started`,
    /// `approval.requested` (a pending `tool` approval offering the
    /// decisions the gateway offers, with the tool's `toolName` and
    /// `toolId` as the gateway gives them); the run waits until
    /// `approvals.respond` decides (the first decision wins), then
    /// `approval.resolved` and `tool.call.completed` (approved) or
    /// `tool.call.failed` (denied). A run cancelled meanwhile resolves it
    /// `cancelled`.
    ///
    /// `tool` is best the tool's catalog id (`openclaw:core:write`): the
    /// approval's `toolId` is that id, and its `toolName` (and the call's
    /// name) the name of the tool with that id set with
    /// [`FakeGateway::set_tools`](crate::FakeGateway::set_tools), else the
    /// id's last `:` segment (`write`). A tool set with `set_tools` may
    /// also be given by its name; any other name is taken as a core
    /// tool's (`write` is `openclaw:core:write`).
    pub fn approval(mut self, tool: impl Into<String>, arguments: serde_json::Value) -> Self {
        self.steps.push(Step::Approval {
            tool: tool.into(),
            arguments,
        });
        self
    }

    /// An `ask_user` call: `question.requested`; the run waits until
    /// `questions.respond` gives one of `choices` (any answer when
    /// `choices` is empty), then `question.answered`.
    pub fn question(mut self, prompt: impl Into<String>, choices: Vec<String>) -> Self {
        self.steps.push(Step::Question {
            prompt: prompt.into(),
            choices,
        });
        self
    }

    /// An artifact of the run: `artifact.created`; listed by
    /// `artifacts.list`, `artifacts.get`, `artifacts.download` and the
    /// run's `RunResult.artifacts`; its bytes served at
    /// `/v1/artifacts/{id}/content`.
    pub fn artifact(
        mut self,
        name: impl Into<String>,
        kind: ArtifactType,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        self.steps.push(Step::Artifact {
            name: name.into(),
            kind,
            bytes: bytes.into(),
        });
        self
    }

    /// A `sessions_spawn` call that starts a background task as the
    /// gateway's sub-agents do: `tool.call.started`, the task recorded
    /// (`task.updated`: `queued`, then `running`; its `runId` and session
    /// this run's), `tool.call.completed` with `{status: "accepted",
    /// taskId}`. The run goes on at once; the task ends as `task` says,
    /// on its own time.
    pub fn spawn(mut self, task: super::tasks::FakeTask) -> Self {
        self.steps.push(Step::Spawn(Box::new(task)));
        self
    }

    /// Ends the run `run.failed` with this error (instead of the reply
    /// and `run.completed`); `RunResult.error` carries it.
    pub fn fail(mut self, code: ErrorCode, message: impl Into<String>) -> Self {
        self.failure = Some(ApiError::new(code, message)); // the test's words
        self
    }
}

/// A failure injected into the fake gateway's transport. Faults wait in a
/// queue; each is used up when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The next event stream opened (SSE, or a WebSocket subscription) is
    /// cut after sending `after_events` events: the connection drops, with
    /// no terminal event and no error frame.
    DropStream {
        /// Events sent before the cut.
        after_events: usize,
    },
    /// The next stream, `runs.events` or `events.subscribe` made with a
    /// cursor answers `cursor_expired` (410).
    ExpireCursor,
    /// The next `times` calls of `method` answer `rate_limited` (429) with
    /// `retryAfterMs` (and `Retry-After`).
    RateLimited {
        /// The method, e.g. `runs.create`.
        method: String,
        /// How many calls.
        times: u32,
        /// The `retryAfterMs` they carry.
        retry_after_ms: u64,
    },
    /// The next `times` calls of `method` answer `unavailable` (503).
    Unavailable {
        /// The method.
        method: String,
        /// How many calls.
        times: u32,
    },
    /// The next call of `method` waits `delay` before it is served.
    Slow {
        /// The method.
        method: String,
        /// How long.
        delay: Duration,
    },
}

/// What a method call's fault does to it.
pub(crate) enum CallFault {
    /// Answer this error.
    Fail(ApiError),
    /// Wait, then serve.
    Wait(Duration),
}

/// Takes the first queued fault that applies to a call of `method`.
pub(crate) fn take_call_fault(faults: &mut Vec<Fault>, method: &str) -> Option<CallFault> {
    let at = faults.iter().position(|f| match f {
        Fault::RateLimited { method: m, .. }
        | Fault::Unavailable { method: m, .. }
        | Fault::Slow { method: m, .. } => m == method,
        Fault::DropStream { .. } | Fault::ExpireCursor => false,
    })?;
    let (fault, used_up) = match &mut faults[at] {
        Fault::RateLimited {
            times,
            retry_after_ms,
            ..
        } => {
            *times = times.saturating_sub(1);
            (
                CallFault::Fail(
                    talon_protocol::gateway::refuse::injected_rate_limit()
                        .with_retry_after_ms(*retry_after_ms),
                ),
                *times == 0,
            )
        }
        Fault::Unavailable { times, .. } => {
            *times = times.saturating_sub(1);
            (
                CallFault::Fail(talon_protocol::gateway::refuse::injected_unavailable()),
                *times == 0,
            )
        }
        Fault::Slow { delay, .. } => (CallFault::Wait(*delay), true),
        Fault::DropStream { .. } | Fault::ExpireCursor => return None,
    };
    if used_up {
        faults.remove(at);
    }
    Some(fault)
}

/// Takes the first queued `DropStream`: the events the stream may send.
pub(crate) fn take_drop(faults: &mut Vec<Fault>) -> Option<usize> {
    let at = faults
        .iter()
        .position(|f| matches!(f, Fault::DropStream { .. }))?;
    match faults.remove(at) {
        Fault::DropStream { after_events } => Some(after_events),
        _ => None,
    }
}

/// Takes the first queued `ExpireCursor`.
pub(crate) fn take_expire(faults: &mut Vec<Fault>) -> bool {
    match faults.iter().position(|f| matches!(f, Fault::ExpireCursor)) {
        Some(at) => {
            faults.remove(at);
            true
        }
        None => false,
    }
}

/// The error of an expired cursor, as the gateway words it (the oldest
/// event kept is said to be the one after the cursor).
pub(crate) fn cursor_expired(cursor: u64) -> ApiError {
    let oldest = cursor + 1;
    talon_protocol::gateway::refuse::cursor_expired(&cursor.to_string(), &oldest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_faults_are_used_up_in_order() {
        let mut faults = vec![
            Fault::ExpireCursor,
            Fault::RateLimited {
                method: "a".into(),
                times: 2,
                retry_after_ms: 1500,
            },
            Fault::Slow {
                method: "b".into(),
                delay: Duration::from_millis(5),
            },
        ];
        assert!(take_call_fault(&mut faults, "c").is_none());
        for _ in 0..2 {
            match take_call_fault(&mut faults, "a") {
                Some(CallFault::Fail(e)) => assert_eq!(
                    (e.code, e.retry_after_ms),
                    (ErrorCode::RateLimited, Some(1500))
                ),
                _ => panic!("not rate limited"),
            }
        }
        assert!(take_call_fault(&mut faults, "a").is_none());
        assert!(matches!(
            take_call_fault(&mut faults, "b"),
            Some(CallFault::Wait(_))
        ));
        assert_eq!(faults, vec![Fault::ExpireCursor]);
        assert!(take_expire(&mut faults));
        assert!(!take_expire(&mut faults));
    }
}
