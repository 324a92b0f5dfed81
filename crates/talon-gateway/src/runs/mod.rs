//! The node's run engine. A run is accepted into the store (`queued`,
//! with what it executes) and then claimed by exactly one node, which
//! executes it through the agent loop and ends it in the store. So runs
//! survive the node that accepted them: any node sharing the database can
//! claim a queued run, cancel one through the store, wait on one by
//! polling it, and take over the runs of a node whose lease expired.
//!
//! - One run per session lane: a run is claimed only while no other run of
//!   its session is live; a run created on a busy session follows its
//!   `multitaskStrategy` (`reject`, `enqueue` with `run.queued`,
//!   `interrupt`, `rollback`).
//! - Every event goes through the store before anyone sees it
//!   ([`sink::StoreSink`]).
//! - A run that was live when its node died goes back to the queue
//!   (`run.queued`) and resumes from its last complete turn when no tool
//!   call was in flight ([`resume`]); otherwise it is ended ([`recover`]).
//!   Queued runs simply wait to be claimed.
//! - The claim loop, lease renewal and drain are in [`dispatch`].

mod approvals;
mod artifacts;
mod control;
mod dispatch;
mod exec;
mod person;
mod pull_request;
pub(crate) mod questions;
mod recover;
mod remote;
mod resume;
mod retention;
mod sink;
mod start;
mod streamed;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use talon_protocol::gateway::bounded::AgentId;

use talon_protocol::event_data::RunEndedData;
use talon_protocol::gateway::{
    ApiError, ErrorCode, MultitaskStrategy, Run, RunResult, RunStatus, Session,
};
use talon_protocol::{Event, EventData};
use talon_runtime::Host;
use talon_store::{Store, StoreConfig};
use tokio_util::sync::CancellationToken;

use crate::error::api_error;

/// How long a node's claim on a run lasts without renewal.
pub const LEASE: Duration = Duration::from_secs(15);
/// How often a node renews its leases.
const RENEW: Duration = Duration::from_secs(5);
/// How often a node looks for work and cancel requests other nodes left
/// in the store.
const POLL: Duration = Duration::from_millis(500);
/// How often `runs.wait` looks at a run another node executes.
const WAIT_POLL: Duration = Duration::from_millis(250);

/// Limits of a node's runs.
#[derive(Debug, Clone)]
pub struct RunLimits {
    /// Runs this node executes at once.
    pub max_concurrent: usize,
    /// Runs waiting in the store before `runs.create` refuses more.
    pub max_queued: u32,
    /// `runs.wait` without `timeoutMs` waits this long.
    pub default_wait: Duration,
    /// The longest `runs.wait`.
    pub max_wait: Duration,
    /// The longest `timeoutMs` a run may ask for.
    pub max_run_timeout: Duration,
    /// On shutdown, how long running runs may go on before they are
    /// cancelled.
    pub drain_grace: Duration,
    /// How long artifacts (run trajectories, ...) are kept before they
    /// are purged (`None`: forever).
    pub artifact_max_age: Option<Duration>,
    /// Which events the log keeps (`store.retention`; the default keeps
    /// every event): older ones are pruned, and a cursor before them
    /// answers `cursor_expired`.
    pub event_retention: talon_store::Retention,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            max_concurrent: 64,
            max_queued: 10_000,
            default_wait: Duration::from_millis(talon_protocol::gateway::caps::DEFAULT_WAIT_MS),
            max_wait: Duration::from_millis(talon_protocol::gateway::caps::DEFAULT_MAX_WAIT_MS),
            max_run_timeout: Duration::from_secs(24 * 3600),
            drain_grace: Duration::from_secs(30),
            artifact_max_age: Some(Duration::from_secs(30 * 24 * 3600)),
            event_retention: talon_store::Retention::default(),
        }
    }
}

pub(crate) use talon_store::{Invocation, RunRequest};

/// Tools the engine adds to a run beside its environment's, given the
/// run: the task ledger's `sessions_spawn` for an agent that may spawn.
/// Set by the gateway as it starts ([`Engine::add_tools`]), so the engine
/// imports nothing above it.
pub(crate) type MoreTools = Arc<dyn Fn(Run) -> talon_tools::BoxFuture<'static, More> + Send + Sync>;

/// The bounds of this node's background processes, from `tools.exec`.
fn process_limits(host: &talon_runtime::Host) -> talon_runtime::ProcessLimits {
    let defaults = talon_runtime::ProcessLimits::default();
    let Some(exec) = host
        .config()
        .document()
        .ok()
        .and_then(|d| d.tools.settings.exec.clone())
    else {
        return defaults;
    };
    talon_runtime::ProcessLimits {
        per_session: exec
            .max_per_session
            .map_or(defaults.per_session, |n| n as usize),
        per_node: exec.max_per_node.map_or(defaults.per_node, |n| n as usize),
        retained_bytes: exec
            .max_output_bytes
            .map_or(defaults.retained_bytes, |n| n as usize),
        ttl: exec
            .timeout_sec
            .filter(|s| *s > 0)
            .map_or(defaults.ttl, Duration::from_secs),
        ended_kept: defaults.ended_kept,
    }
}

/// What the gateway adds to one run ([`MoreTools`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct More {
    /// Tools, a group per owner (sub-agents', `process`).
    pub tools: Vec<talon_runtime::HostTools>,
    /// Where its `exec` detaches background commands to.
    pub background: Option<talon_runtime::Background>,
}

/// A run to accept.
#[derive(Debug, Clone)]
pub(crate) struct Submit {
    /// The agent.
    pub agent_id: AgentId,
    /// Its session (resolved).
    pub session: Session,
    /// What it executes.
    pub request: RunRequest,
    /// On a busy session.
    pub strategy: MultitaskStrategy,
    /// The caller's idempotency key, and the hash of its params.
    pub idempotency: Option<(String, String)>,
}

/// A run this node executes.
#[derive(Debug, Clone)]
struct Active {
    cancel: CancellationToken,
    rollback: Arc<AtomicBool>,
}

/// The node's run engine (cheap to clone).
#[derive(Clone)]
pub(crate) struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("node", &self.inner.node)
            .finish_non_exhaustive()
    }
}

/// What the engine's environments use: the admin's policy and, when the
/// admin named hosts, the `ssh` provider.
#[derive(Debug, Clone)]
pub(crate) struct Environments {
    pub policy: Arc<talon_environments::EnvironmentPolicy>,
    pub ssh: Option<Arc<talon_environments::ssh::Ssh>>,
}

struct Inner {
    store: Store,
    store_config: StoreConfig,
    node: String,
    host: Arc<Host>,
    limits: RunLimits,
    active: Mutex<HashMap<String, Active>>,
    /// Held while a run is accepted (`submit`) and while this node claims
    /// one, so a run starts here only after its creation is stored.
    lane: tokio::sync::Mutex<()>,
    wake: tokio::sync::Notify,
    ended: tokio::sync::watch::Sender<u64>,
    /// Bumped when this node resolves an approval or a question (waiting runs re-read
    /// theirs).
    resolutions: tokio::sync::watch::Sender<u64>,
    draining: AtomicBool,
    /// Tools every run may be given beside its environment's.
    more_tools: std::sync::OnceLock<MoreTools>,
    cells: Mutex<HashMap<String, Arc<talon_store::CellStore>>>,
    /// The secrets the config resolves, redacted from stored artifacts.
    secrets: Vec<String>,
    /// What environments may use.
    environments: Arc<talon_environments::EnvironmentPolicy>,
    /// The environment providers this gateway has.
    providers: talon_environments::Providers,
    /// The `ssh` provider, when the admin named hosts (its runs' commands
    /// run there).
    ssh: Option<Arc<talon_environments::ssh::Ssh>>,
    /// Runs waiting on a person (an approval or a question), by id: how
    /// many of their calls wait.
    waiting: Mutex<HashMap<String, usize>>,
    /// Set when a stopping node leaves its waiting runs to the next start
    /// (their requests stay pending).
    suspending: AtomicBool,
    /// What the node counts.
    metrics: Arc<crate::observe::metrics::Metrics>,
    /// The background processes this node runs (they die with it).
    processes: talon_runtime::Processes,
}

/// A call of a run waiting on a person; counted while it lives.
pub(crate) struct PersonWait {
    engine: Engine,
    run_id: String,
}

impl PersonWait {
    /// Whether the node is stopping and leaves the run to its next start
    /// (so the request must stay pending).
    pub(crate) fn suspended(&self) -> bool {
        self.engine.inner.suspending.load(Ordering::SeqCst)
    }
}

impl Drop for PersonWait {
    fn drop(&mut self) {
        let mut waiting = self
            .engine
            .inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = waiting.get_mut(&self.run_id) {
            *n -= 1;
            if *n == 0 {
                waiting.remove(&self.run_id);
            }
        }
    }
}

/// The wire spelling of a run's status (a metric label, a log field).
pub(crate) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Queued => "queued",
        RunStatus::Running => "running",
        RunStatus::Waiting => "waiting",
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::Cancelled => "cancelled",
        RunStatus::TimedOut => "timed_out",
        _ => "unknown",
    }
}

/// A new id, `<prefix>_<24 hex digits>`.
pub(crate) fn new_id(prefix: &str) -> Result<String, ApiError> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)
        .map_err(|_| ApiError::new(ErrorCode::Internal, "no random source"))?;
    Ok(format!("{prefix}_{}", hex::encode(bytes)))
}

/// The result of an ended run, from its row.
pub(crate) fn result_of(run: &Run, text: Option<String>) -> RunResult {
    RunResult::of(run, text, None)
}

fn ended_data(error: Option<&ApiError>) -> RunEndedData {
    RunEndedData {
        text: None,
        error: error.map(|e| e.message.clone()),
        turns: 0,
        tool_calls: 0,
        usage: talon_protocol::gateway::Usage::default(),
        duration_ms: 0,
        pending_tool_calls: Vec::new(),
        telemetry: None,
    }
}

impl Engine {
    /// An event of `run`, unnumbered (the store numbers it), at the
    /// store's time.
    pub(crate) fn run_event(&self, run: &Run, data: EventData) -> Event {
        Event::of_run(run, self.inner.store.now_ms(), data)
    }

    /// The engine of node `node` over `store`, hosting runs on `host`.
    /// Call [`Engine::start`] to recover and begin claiming runs.
    pub(crate) fn new(
        store: Store,
        store_config: StoreConfig,
        node: String,
        host: Arc<Host>,
        limits: RunLimits,
        environments: Environments,
        metrics: Arc<crate::observe::metrics::Metrics>,
    ) -> Self {
        let Environments {
            policy: environments,
            ssh,
        } = environments;
        let mut providers = talon_environments::Providers::builtin();
        if let Some(ssh) = &ssh {
            providers = providers.with(ssh.clone());
        }
        Self {
            inner: Arc::new(Inner {
                store,
                store_config,
                node,
                limits,
                active: Mutex::new(HashMap::new()),
                lane: tokio::sync::Mutex::new(()),
                wake: tokio::sync::Notify::new(),
                ended: tokio::sync::watch::Sender::new(0),
                resolutions: tokio::sync::watch::Sender::new(0),
                draining: AtomicBool::new(false),
                more_tools: std::sync::OnceLock::new(),
                cells: Mutex::new(HashMap::new()),
                secrets: talon_runtime::provider::secrets(host.config()),
                environments,
                providers,
                ssh,
                waiting: Mutex::new(HashMap::new()),
                suspending: AtomicBool::new(false),
                metrics,
                processes: talon_runtime::Processes::new(process_limits(&host)),
                host,
            }),
        }
    }

    /// Wakes the runs waiting on approvals and questions to re-read them (one was
    /// resolved).
    pub(crate) fn resolved(&self) {
        self.inner.resolutions.send_modify(|n| *n += 1);
    }

    /// Runs of this node not waiting on a person.
    fn at_work(&self) -> usize {
        let waiting = self
            .inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect::<std::collections::HashSet<String>>();
        self.active()
            .keys()
            .filter(|id| !waiting.contains(*id))
            .count()
    }

    /// Counts a call of `run_id` as waiting on a person until the guard
    /// is dropped.
    pub(crate) fn waiting_on_person(&self, run_id: &str) -> PersonWait {
        *self
            .inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(run_id.to_owned())
            .or_default() += 1;
        PersonWait {
            engine: self.clone(),
            run_id: run_id.to_owned(),
        }
    }

    /// Environment `id` (which must be ready) and what a run started in
    /// it now gets.
    pub(crate) async fn bind_environment(
        &self,
        id: &str,
    ) -> Result<
        (
            talon_protocol::gateway::Environment,
            talon_environments::Binding,
        ),
        ApiError,
    > {
        use talon_protocol::gateway::{Environment, EnvironmentStatus};
        let environment: Environment =
            self.inner
                .store
                .environment(id)
                .await
                .map_err(api_error)?
                .ok_or_else(|| talon_protocol::gateway::refuse::not_found("environment", id))?;
        if environment.status != EnvironmentStatus::Ready || environment.workspace.is_none() {
            return Err(talon_protocol::gateway::refuse::environment_unready_for_run(id));
        }
        let provider = self.providers().get(environment.provider.as_str())?;
        let state_dir = self.state_dir();
        let binding = provider.bind(
            environment
                .settings
                .as_ref()
                .unwrap_or(&serde_json::Value::Null),
            self.environment_context(&state_dir),
        )?;
        Ok((environment, binding))
    }

    /// What environment providers are given: the admin's policy and the
    /// state directory.
    pub(crate) fn environment_context<'a>(
        &'a self,
        state_dir: &'a std::path::Path,
    ) -> talon_environments::Context<'a> {
        talon_environments::Context {
            policy: &self.inner.environments,
            state_dir,
            sandboxed: self.inner.host.jails().defaults().status().mode == "bubblewrap",
            room: None,
        }
    }

    /// The environment providers this gateway has.
    pub(crate) fn providers(&self) -> &talon_environments::Providers {
        &self.inner.providers
    }

    /// The state directory (environments' workspaces live under it).
    pub(crate) fn state_dir(&self) -> std::path::PathBuf {
        self.inner.store_config.state_dir.clone()
    }

    /// Runs waiting in the store before `runs.create` refuses more.
    pub(crate) fn max_queued(&self) -> u32 {
        self.inner.limits.max_queued
    }

    /// Runs of this node waiting on a person.
    pub(crate) fn waiting(&self) -> usize {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Appends `events`, timing how long they take to be durable; each
    /// carries the request id of the call it is appended for
    /// ([`crate::observe::stamp`]).
    pub(crate) async fn append(
        &self,
        mut events: Vec<Event>,
    ) -> Result<Vec<Event>, talon_store::StoreError> {
        crate::observe::stamp(&mut events);
        let started = std::time::Instant::now();
        let appended = self.inner.store.append(events).await;
        self.inner.metrics.appended(started.elapsed());
        appended
    }

    /// Ends a run that has not ended, with the events that tell it (its
    /// terminal event last), in one commit ([`talon_store::Store::end_run`]):
    /// `None` when it had already ended, and nothing was written.
    pub(crate) async fn end_run(
        &self,
        run: &Run,
        result: &talon_protocol::gateway::RunResult,
        mut events: Vec<Event>,
    ) -> Result<Option<Vec<Event>>, talon_store::StoreError> {
        crate::observe::stamp(&mut events);
        let started = std::time::Instant::now();
        let ended = self.inner.store.end_run(run, result, events).await;
        self.inner.metrics.appended(started.elapsed());
        ended
    }

    /// Gives every run the tools `more` makes for it (once; a second call
    /// changes nothing).
    pub(crate) fn add_tools(&self, more: MoreTools) {
        let _ = self.inner.more_tools.set(more);
    }

    /// The store runs and tasks live in.
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Ticks each time a run this node executes ends.
    pub(crate) fn ended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.ended.subscribe()
    }

    /// Whether this node is shutting down.
    pub(crate) fn draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    /// The background processes this node runs.
    pub(crate) fn processes(&self) -> &talon_runtime::Processes {
        &self.inner.processes
    }

    /// This node's id.
    pub(crate) fn node(&self) -> &str {
        &self.inner.node
    }

    /// The host runs execute on.
    pub(crate) fn host(&self) -> &Arc<Host> {
        &self.inner.host
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<String, Active>> {
        self.inner
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many runs this node executes now.
    pub(crate) fn running(&self) -> usize {
        self.active().len()
    }
}
