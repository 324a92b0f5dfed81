//! What the tests share: a host over a config, a spec, and a sink that
//! records a run's events and checkpoints.

mod anthropic;
mod conversation;
mod errors;
mod providers;
mod runs;
mod sandbox;

use std::sync::{Arc, Mutex};
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::bounded::SessionKey;

use talon_codemode::{MemoryStore, SnapshotStore, StoreLimits};
use talon_config::Config;
use talon_protocol::Event;
use talon_runtime::{
    Conversation, Host, ModelRoute, RunEmitter, RunHooks, RunIds, RunSink, RunSpec, Start, Turn,
    TurnState,
};
use talon_tools::{Approvals, Approver, DenyAll};
use tokio::sync::Notify;

/// Keeps every event and checkpoint of a run, and wakes whoever waits for
/// more.
#[derive(Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
    turns: Mutex<Vec<Turn>>,
    more: Notify,
}

impl RunSink for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event);
        self.more.notify_waiters();
    }

    fn checkpoint(&self, turn: TurnState) {
        self.turns.lock().unwrap().push(turn.into_turn(0));
    }
}

impl Recorder {
    /// The event types so far, deltas left out (their number depends on
    /// how the stream was cut).
    pub fn kinds(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.kind.as_str().to_owned())
            .filter(|k| !k.ends_with(".delta"))
            .collect()
    }

    /// Waits until an event of `kind` has arrived.
    pub async fn until(&self, kind: &str) {
        loop {
            let more = self.more.notified();
            if self.kinds().iter().any(|k| k == kind) {
                return;
            }
            more.await;
        }
    }

    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The checkpoints so far.
    pub fn turns(&self) -> Vec<Turn> {
        self.turns.lock().unwrap().clone()
    }
}

/// Asks no one: what the policy sends to a person is denied.
pub struct NoOne;

impl RunHooks for NoOne {
    fn asker(&self, events: &RunEmitter) -> Arc<dyn Approver> {
        events.reporting(Arc::new(DenyAll))
    }
}

/// A host over `config` (JSON5 text) whose models are the mock at `url`.
pub fn host(config: &str, url: String) -> Host {
    let config = Config::parse(config, None).unwrap();
    Host::new(
        Arc::new(config),
        ModelRoute {
            base_url: Some(url),
        },
    )
    .unwrap()
}

/// The ids of run `run_id` of agent `main` in session `s1`.
pub fn ids(run_id: &str) -> RunIds {
    RunIds {
        agent: AgentId::new("main"),
        session: SessionId::new("s1"),
        run: RunId::new(run_id),
        session_key: SessionKey::new("agent:main:s1"),
        channel: Some("test".into()),
    }
}

/// The spec of run `run_id` of agent `main` in `workspace`, starting
/// with `message`, its events to `recorder`.
pub fn spec(
    run_id: &str,
    workspace: &std::path::Path,
    recorder: &Arc<Recorder>,
    message: &str,
) -> RunSpec {
    RunSpec {
        clock: talon_protocol::clock::Clock::system(),
        ids: ids(run_id),
        cancel: Default::default(),
        sink: recorder.clone(),
        approvals: Arc::new(Approvals::default()),
        hooks: Arc::new(NoOne),
        cells: Box::new(|limits: StoreLimits| {
            Ok(Arc::new(MemoryStore::new(limits)) as Arc<dyn SnapshotStore>)
        }),
        workspace: talon_runtime::Workspace::At(workspace.to_owned()),
        timeout: None,
        client_tools: Vec::new(),
        shell: Default::default(),
        redact: Vec::new(),
        history: Conversation::default(),
        start: Start::Message(message.into()),
        settled: Vec::new(),
    }
}
