//! What every server of the protocol derives from a run's row the same
//! way: its [`RunResult`] (`runs.wait`, `runs.cancel`), and the envelope
//! of an event it emits for the run.

use super::resources::{ArtifactSummary, Run, RunOutput, RunResult, RunResultStatus, RunStatus};
use crate::{Event, EventData};

impl RunResultStatus {
    /// A run's status as its result says it: `accepted` until it ends.
    pub fn of(status: RunStatus) -> Self {
        match status {
            RunStatus::Completed => Self::Completed,
            RunStatus::Cancelled => Self::Cancelled,
            RunStatus::TimedOut => Self::TimedOut,
            RunStatus::Failed => Self::Failed,
            _ => Self::Accepted,
        }
    }
}

impl RunResult {
    /// The result of `run` as its row stands, with the answer's text and
    /// the artifacts the run made, when the server knows them.
    pub fn of(run: &Run, text: Option<String>, artifacts: Option<Vec<ArtifactSummary>>) -> Self {
        Self {
            run_id: run.id.clone(),
            status: RunResultStatus::of(run.status),
            session_id: run.session_id.clone(),
            session_key: run.session_key.clone(),
            task_id: None,
            started_at: run.started_at,
            ended_at: run.ended_at,
            output: text.map(|text| RunOutput {
                text: Some(text),
                messages: None,
            }),
            usage: run.usage.clone(),
            artifacts,
            error: run.error.clone(),
        }
    }
}

impl Event {
    /// An event of `run` at `ts`, not yet numbered (the server's log gives
    /// it its id) and on behalf of no request yet.
    pub fn of_run(run: &Run, ts: u64, data: EventData) -> Self {
        let (kind, data) = data.into_parts();
        Self {
            version: 1,
            id: String::new(),
            ts,
            kind,
            run_id: Some(run.id.clone()),
            session_id: run.session_id.clone(),
            session_key: run.session_key.clone(),
            task_id: None,
            agent_id: Some(run.agent_id.clone()),
            request_id: None,
            data,
            raw: None,
        }
    }
}
