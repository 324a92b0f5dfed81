//! The fake gateway's memory: every resource it serves (agents,
//! sessions and their messages, runs and their results, approvals,
//! questions, artifacts, environments, background tasks), the one event log that streams
//! and `runs.events` read, idempotency keys, the queues of scripted runs
//! and faults, and the calls received. One [`Shared`] holds it behind a
//! `std::sync::Mutex` (never held across an `.await`) with a
//! `watch` that wakes every waiter when anything changes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use talon_protocol::gateway::bounded::{AgentId, ArtifactId, EventId, SessionKey};

use sha2::{Digest, Sha256};
use talon_protocol::gateway::bounded::{RunId, SessionId};
use talon_protocol::gateway::{
    Agent, ApiError, Approval, ArtifactSummary, Environment, Message, Question, Run, RunResult,
    Scope, Session, ToolSummary,
};
use talon_protocol::{Event, EventData};
use tokio::sync::watch;

use super::RecordedCall;
use super::script::{FakeRun, Fault};

/// The id of the fake's own token (the parent of every token it mints).
pub(crate) const FAKE_TOKEN_ID: &str = "tok_fakegateway00";

/// The fake's token.
pub(crate) const TOKEN: &str = "fake-token";
/// The one agent.
pub(crate) use talon_protocol::gateway::run_views::DEFAULT_AGENT_ID as DEFAULT_AGENT;
/// The one model.
pub(crate) const MODEL: &str = "mock/mock-model";

/// A run and what the fake knows of it.
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    /// The run as `runs.get` shows it.
    pub run: Run,
    /// Its result, once it ended.
    pub result: Option<RunResult>,
    /// The user's input (the last message's text).
    pub input: String,
    /// Whether `runs.cancel` asked it to stop (and whether its messages
    /// are dropped: `rollback`).
    pub cancel: Option<bool>,
    /// The call it is in, if any (`tool.call.failed` if it is cut off).
    pub open_call: Option<(String, String)>,
    /// Artifacts it produced, in order.
    pub artifacts: Vec<ArtifactSummary>,
}

/// An artifact and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct StoredArtifact {
    pub summary: ArtifactSummary,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

/// The first call of an idempotency key: what it hashed to, and what it
/// answered.
#[derive(Debug, Clone)]
pub(crate) struct FirstCall {
    pub hash: String,
    pub answer: serde_json::Value,
}

/// A token minted by `tokens.create` with an idempotency key.
#[derive(Debug)]
pub(crate) struct KeyedToken {
    pub id: String,
    pub token: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub binding: talon_protocol::gateway::Binding,
}

/// Everything the fake gateway holds.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The fake's clock (the protocol's one clock; a test may move it).
    pub clock: talon_protocol::clock::Clock,
    pub agents: Vec<Agent>,
    pub sessions: Vec<Session>,
    pub messages: HashMap<SessionId, Vec<Message>>,
    pub runs: HashMap<RunId, RunRecord>,
    pub approvals: Vec<Approval>,
    pub questions: Vec<Question>,
    pub artifacts: Vec<StoredArtifact>,
    pub environments: Vec<Environment>,
    pub idempotency: HashMap<String, FirstCall>,
    pub scripts: VecDeque<FakeRun>,
    pub faults: Vec<Fault>,
    pub calls: Vec<RecordedCall>,
    pub tools: Vec<ToolSummary>,
    pub invoke_results: HashMap<String, serde_json::Value>,
    /// Unused stream tickets: when each expires, and its one stream.
    pub tickets: HashMap<String, (u64, talon_protocol::gateway::TicketStream)>,
    /// Tokens minted by `tokens.create` and when each expires (every
    /// token of the fake is an admin's: it does not check scopes).
    pub tokens: HashMap<String, (u64, Vec<Scope>)>,
    /// Tokens minted with an idempotency key, by key.
    pub keyed_tokens: HashMap<String, KeyedToken>,
    /// Every token `tokens.create` minted, by id, as `tokens.list` shows
    /// it, with its current secret (gone from `tokens` once revoked).
    pub minted: std::collections::BTreeMap<String, (talon_protocol::gateway::TokenInfo, String)>,
    /// Background tasks, oldest first (`super::tasks`).
    pub tasks: Vec<talon_protocol::gateway::tasks::Task>,
    /// The event log: the event with id `n` is at `n - 1`.
    pub log: Vec<Event>,
    counter: u64,
}

impl State {
    /// A fresh gateway: agent `main`, nothing else.
    pub fn new(clock: talon_protocol::clock::Clock) -> Self {
        Self {
            clock,
            agents: vec![Agent::default_agent()],
            ..Self::default()
        }
    }

    /// A new id, `<prefix>_<24 hex digits>`, increasing.
    pub fn new_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}_{:024x}", self.counter)
    }

    /// Appends `event` to the log, numbering it; its id.
    pub fn push(&mut self, mut event: Event) -> u64 {
        let id = self.log.len() as u64 + 1;
        event.id = EventId::new(id.to_string());
        self.log.push(event);
        id
    }

    /// Milliseconds since the Unix epoch, by the fake's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// An event of `run`, unnumbered, stamped now.
    pub fn run_event(&self, run: &Run, data: EventData) -> Event {
        Event::of_run(run, self.now_ms(), data)
    }

    /// Appends an event of `run`.
    pub fn push_run_event(&mut self, run: &Run, data: EventData) -> u64 {
        let event = self.run_event(run, data);
        self.push(event)
    }

    pub fn agent(&self, id: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.id == AgentId::new(id))
    }

    pub fn session(&self, id: &str) -> Result<&Session, ApiError> {
        self.sessions
            .iter()
            .find(|s| s.id == SessionId::new(id))
            .ok_or_else(|| not_found("session", id))
    }

    pub fn session_by_key(&self, key: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.key == SessionKey::new(key))
    }

    pub fn run(&self, id: &str) -> Result<&RunRecord, ApiError> {
        self.runs.get(id).ok_or_else(|| not_found("run", id))
    }

    /// A new session of `agent_id` (which must exist), announced on the
    /// log (`session.created`) as the gateway does.
    pub fn create_session(
        &mut self,
        agent_id: &str,
        key: Option<String>,
        metadata: talon_protocol::gateway::Metadata,
    ) -> Result<Session, ApiError> {
        let session = self.add_session(agent_id, key, metadata)?;
        self.announce_session(&session);
        Ok(session)
    }

    /// Announces `session`, just made: `session.created`.
    pub fn announce_session(&mut self, session: &Session) {
        self.push(talon_protocol::Event::of_session(
            session,
            session.created_at,
            EventData::SessionCreated(session.clone()),
        ));
    }

    /// A new session of `agent_id` (which must exist), not announced yet
    /// (a fork is announced once it names its parent).
    pub fn add_session(
        &mut self,
        agent_id: &str,
        key: Option<String>,
        metadata: talon_protocol::gateway::Metadata,
    ) -> Result<Session, ApiError> {
        if self.agent(agent_id).is_none() {
            return Err(not_found("agent", agent_id));
        }
        if let Some(key) = &key
            && self.session_by_key(key).is_some()
        {
            return Err(talon_protocol::gateway::refuse::already_exists(
                "session", key,
            ));
        }
        let id: SessionId = SessionId::new(self.new_id("sess"));
        let now = self.now_ms();
        let session = Session {
            subject: None,
            key: SessionKey::new(key.unwrap_or_else(|| format!("{agent_id}:{id}"))),
            id,
            agent_id: AgentId::new(agent_id),
            parent_id: None,
            forked_at_message_id: None,
            metadata,
            created_at: now,
            updated_at: now,
        };
        self.sessions.push(session.clone());
        Ok(session)
    }

    /// The session with `key`, created for `agent` (`main` when absent)
    /// if there is none.
    pub fn resolve_session(&mut self, key: &str, agent: Option<&str>) -> Result<Session, ApiError> {
        if let Some(session) = self.session_by_key(key) {
            return Ok(session.clone());
        }
        let agent = agent.unwrap_or(DEFAULT_AGENT);
        self.create_session(agent, Some(key.to_owned()), Default::default())
    }

    /// Stores an artifact; its summary.
    pub fn put_artifact(
        &mut self,
        run: &Run,
        kind: talon_protocol::gateway::ArtifactType,
        title: String,
        mime: &str,
        bytes: Vec<u8>,
    ) -> ArtifactSummary {
        let now = self.now_ms();
        let summary = ArtifactSummary {
            id: ArtifactId::new(self.new_id("art")),
            run_id: Some(run.id.clone()),
            session_id: run.session_id.clone(),
            kind,
            title: Some(title),
            mime_type: Some(mime.to_owned()),
            size_bytes: Some(bytes.len() as u64),
            created_at: now,
            expires_at: Some(now + ARTIFACT_MAX_AGE_MS),
        };
        let sha256 = hex::encode(Sha256::digest(&bytes));
        self.artifacts.push(StoredArtifact {
            summary: summary.clone(),
            bytes,
            sha256,
        });
        summary
    }
}

/// How long artifacts are kept (the gateway's default, 30 days).
const ARTIFACT_MAX_AGE_MS: u64 = 30 * 24 * 3600 * 1000;

/// The memory and its wake-up call.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// The fake's clock (the one `State` holds too).
    clock: talon_protocol::clock::Clock,
    /// Bumped after every change: waiters (runs, waits, streams) look
    /// again.
    changed: watch::Sender<u64>,
    /// Turns `true` when the gateway shuts down.
    pub closing: watch::Receiver<bool>,
}

impl Shared {
    pub fn new(closing: watch::Receiver<bool>, clock: talon_protocol::clock::Clock) -> Self {
        Self {
            state: Mutex::new(State::new(clock.clone())),
            clock,
            changed: watch::Sender::new(0),
            closing,
        }
    }

    /// Milliseconds since the Unix epoch, by the fake's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Reads the state (no change announced).
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the state and wakes every waiter.
    pub fn write<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let out = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        out
    }

    /// A receiver woken by the next change.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `not_found`, worded as the gateway words it.
pub(crate) fn not_found(kind: &str, id: &str) -> ApiError {
    talon_protocol::gateway::refuse::not_found(kind, id)
}

pub(crate) use talon_wire::content::mime_of;

/// Canonical JSON's SHA-256, telling a retried call from another with the
/// same idempotency key.
pub(crate) fn hash_of(method: &str, params: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(params).unwrap_or_default();
    let canonical = serde_json::to_vec(&(method, value)).unwrap_or_default();
    hex::encode(Sha256::digest(&canonical))
}
