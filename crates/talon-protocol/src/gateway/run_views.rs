//! What every server of the protocol derives from its records the same
//! way: a run's [`RunResult`] (`runs.wait`, `runs.cancel`), the envelope
//! of an event it emits for a run or a session, where an artifact's bytes
//! are (`artifacts.download`), an approval's summary, the agent a gateway
//! has when its config names none, what the built-in `local`
//! environment provider can do, and the window a `runs.events` page
//! reads ([`EventWindow`]).

use super::ApiError;
use super::approvals::Approval;
use super::bounded::EventId;
use super::catalog::EnvironmentCapabilities;
use super::params::{
    AgentsCreateParams, AgentsUpdateParams, ArtifactsDownloadResult, EventsSubscribeParams,
    RunsEventsParams,
};
use super::resources::{
    Agent, AgentSource, ArtifactSummary, Run, RunOutput, RunResult, RunResultStatus, RunStatus,
    Session,
};
use crate::gateway::bounded::AgentId;
use crate::gateway::bounded::ModelRef;
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
            id: EventId::default(),
            ts,
            kind,
            run_id: Some(run.id.clone()),
            session_id: run.session_id.clone(),
            session_key: run.session_key.clone(),
            subject: run.subject.clone(),
            task_id: None,
            agent_id: Some(run.agent_id.clone()),
            request_id: None,
            data,
            raw: None,
        }
    }
}

impl ArtifactsDownloadResult {
    /// `artifact` and the path of its bytes, `/v1/artifacts/{id}/content`
    /// (fetched with the same token).
    pub fn of(artifact: ArtifactSummary) -> Self {
        Self {
            url: format!("/v1/artifacts/{}/content", artifact.id),
            artifact,
        }
    }
}

/// The id of the agent a run gets when it names none.
pub const DEFAULT_AGENT_ID: &str = "main";

impl Agent {
    /// The agent every gateway has: [`DEFAULT_AGENT_ID`], from the config's
    /// defaults.
    pub fn default_agent() -> Self {
        Self {
            id: AgentId::new(DEFAULT_AGENT_ID),
            name: None,
            description: Some("The default agent".into()),
            model: None,
            source: AgentSource::Config,
            created_at: None,
            updated_at: None,
        }
    }
}

impl Event {
    /// An event of `session` (no run's) at `ts`, not yet numbered.
    pub fn of_session(session: &Session, ts: u64, data: EventData) -> Self {
        let (kind, data) = data.into_parts();
        Self {
            version: 1,
            id: EventId::default(),
            ts,
            kind,
            run_id: None,
            session_id: Some(session.id.clone()),
            session_key: Some(session.key.clone()),
            subject: session.subject.clone(),
            task_id: None,
            agent_id: Some(session.agent_id.clone()),
            request_id: None,
            data,
            raw: None,
        }
    }
}

pub use super::caps::MAX_APPROVAL_SUMMARY_BYTES;

impl Approval {
    /// Refuses a decision this approval does not offer: `invalid_request`
    /// naming the ones it does as the wire does (`approve_once, deny`).
    /// Both servers answer `approvals.respond` with it.
    pub fn offers(&self, decision: super::approvals::ApprovalDecision) -> Result<(), ApiError> {
        if self.decisions.contains(&decision) {
            return Ok(());
        }
        let offered: Vec<&str> = self.decisions.iter().map(|d| d.as_str()).collect();
        Err(super::refuse::decision_not_offered(&offered.join(", ")))
    }

    /// The summary of a request to call `tool` with `arguments` (JSON
    /// text): both, cut to [`MAX_APPROVAL_SUMMARY_BYTES`] at a character
    /// boundary, with `...` where it was cut.
    pub fn summary_of(tool: &str, arguments: &str) -> String {
        let mut summary = format!("{tool} {arguments}");
        if summary.len() > MAX_APPROVAL_SUMMARY_BYTES {
            let keep = MAX_APPROVAL_SUMMARY_BYTES - 3;
            let cut = (0..=keep)
                .rev()
                .find(|i| summary.is_char_boundary(*i))
                .unwrap_or(0);
            summary.truncate(cut);
            summary.push_str("...");
        }
        summary
    }
}

impl EnvironmentCapabilities {
    /// The built-in `local` provider's: a checkout on this host's disk, no
    /// sandbox of its own, a network policy for its shell, secrets by
    /// reference, artifacts and logs, no pull requests, kept between runs.
    pub fn local() -> Self {
        Self {
            checkout: Some(true),
            sandbox: Some(false),
            network_policy: Some(true),
            secrets: Some(true),
            artifacts: Some(true),
            logs: Some(true),
            pull_requests: Some(false),
            long_running: Some(true),
        }
    }
}

impl Agent {
    /// The agent `agents.create` makes of `p` at `now` (its instructions
    /// are kept by the server, not shown).
    pub fn created(p: &AgentsCreateParams, now: u64) -> Self {
        Self {
            id: p.id.clone(),
            name: p.name.clone().map(Into::into),
            description: p.description.clone().map(Into::into),
            model: p.model.clone().map(ModelRef::into_string),
            source: AgentSource::Api,
            created_at: Some(now),
            updated_at: Some(now),
        }
    }
}

impl Agent {
    /// `agents.update` at `now`: each field `p` gives replaces the agent's.
    pub fn update(&mut self, p: AgentsUpdateParams, now: u64) {
        if let Some(name) = p.name {
            self.name = Some(name.into());
        }
        if let Some(description) = p.description {
            self.description = Some(description.into());
        }
        if let Some(model) = p.model {
            self.model = Some(model.into_string());
        }
        self.updated_at = Some(now);
    }
}

impl EventsSubscribeParams {
    /// The event id to replay after, or `invalid_request` for one that is
    /// not an event id.
    pub fn cursor(&self) -> Result<Option<u64>, ApiError> {
        self.after
            .as_ref()
            .map(|c| c.as_str())
            .map(|text| {
                text.parse::<u64>()
                    .map_err(|_| super::refuse::after_not_an_event_id(text))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::Approval;

    #[test]
    fn a_long_summary_is_cut_at_a_character_boundary() {
        assert_eq!(Approval::summary_of("read", "{}"), "read {}");
        // Byte 297 falls inside an "é": the cut is one byte earlier.
        let summary = Approval::summary_of("write", &"é".repeat(400));
        assert_eq!(summary, format!("write {}...", "é".repeat(145)));
        assert_eq!(summary.len(), 299);
    }
}

/// Which end of a `runs.events` window a page counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventCount {
    /// The first this many (the server's default and cap apply).
    First(Option<u32>),
    /// The last this many (the server's cap applies).
    Last(u32),
}

/// The events a `runs.events` page reads: those after `after` and before
/// `before` (event ids), counted from one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventWindow {
    /// Only events after this id.
    pub after: Option<u64>,
    /// Only events before this id.
    pub before: Option<u64>,
    /// How many, from which end.
    pub count: EventCount,
}

impl RunsEventsParams {
    /// The window asked for, or `invalid_request` for a cursor that is
    /// not an event id or for `last` with `limit`.
    pub fn window(&self) -> Result<EventWindow, ApiError> {
        let id = |cursor: Option<&super::bounded::Cursor>,
                  refuse: fn(&str) -> ApiError|
         -> Result<Option<u64>, ApiError> {
            cursor
                .map(|c| c.as_str().parse::<u64>().map_err(|_| refuse(c.as_str())))
                .transpose()
        };
        let after = id(
            self.after.as_ref(),
            crate::gateway::refuse::after_not_an_event_id,
        )?;
        let before = id(
            self.before.as_ref(),
            crate::gateway::refuse::before_not_an_event_id,
        )?;
        let count = match (self.limit, self.last) {
            (Some(_), Some(_)) => return Err(crate::gateway::refuse::last_and_limit()),
            (limit, None) => EventCount::First(limit),
            (None, Some(last)) => EventCount::Last(last),
        };
        Ok(EventWindow {
            after,
            before,
            count,
        })
    }
}
