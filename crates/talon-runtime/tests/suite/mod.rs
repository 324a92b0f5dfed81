//! What the tests share: a host over a config, a spec, and a sink that
//! records a run's events.

mod runs;

use std::sync::{Arc, Mutex};

use talon_agent::{EventSink, RunEvents};
use talon_codemode::{MemoryStore, SnapshotStore, StoreLimits};
use talon_config::Config;
use talon_protocol::Event;
use talon_runtime::{Host, ModelRoute, RunSpec};
use talon_tools::{DenyAll, NoUpdates, RunContext, RunScope};
use tokio::sync::Notify;

/// Keeps every event of a run, and wakes whoever waits for more.
#[derive(Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
    more: Notify,
}

impl EventSink for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event);
        self.more.notify_waiters();
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

/// The spec of run `run_id` of agent `main` in `workspace`, its events to
/// `recorder`.
pub fn spec(run_id: &str, workspace: &std::path::Path, recorder: &Arc<Recorder>) -> RunSpec {
    let ctx = RunContext {
        scope: RunScope {
            agent_id: "main".into(),
            session_id: "s1".into(),
            run_id: run_id.into(),
        },
        session_key: "agent:main:s1".into(),
        sender: None,
        channel: Some("test".into()),
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
    };
    let events = Arc::new(RunEvents::new(recorder.clone(), &ctx));
    RunSpec {
        agent: "main".into(),
        ctx,
        events,
        approver: Arc::new(DenyAll),
        cells: Box::new(|limits: StoreLimits| {
            Ok(Arc::new(MemoryStore::new(limits)) as Arc<dyn SnapshotStore>)
        }),
        workspace: Some(workspace.to_owned()),
        timeout: None,
        client_tools: Vec::new(),
        questions: None,
        changes: None,
        shell: Default::default(),
        redact: Vec::new(),
    }
}
