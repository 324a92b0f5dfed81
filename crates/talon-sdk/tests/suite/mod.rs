//! The SDK's suite. Most tests run twice, through [`both!`]: against
//! `talon_sdk_testing::FakeGateway` and against a real gateway
//! (`talon_gateway::start`, its model the scripted mock, behind a proxy
//! that can cut streams), so that the fake cannot drift from the real
//! thing. Tests of faults only the fake can inject run against it alone.

mod contract;
mod fake_only;
mod generated;
mod hostile;
mod runs;
mod sessions;
mod tasks;
mod transport;

use std::sync::Arc;

use serde_json::json;
use talon_gateway::{GatewayConfig, Running};
use talon_mock_model::{MockModel, Replay, Script, ScriptedCall, Turn};
use talon_runtime::{Host, ModelRoute};
use talon_sdk::{ClientConfig, Talon};
use talon_sdk_testing::{FakeGateway, FakeRun, FakeTask, Fault};
use talon_testing::proxy::StreamCutter;

/// Which gateway a test talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fake,
    Real,
}

/// What the model (or the fake's script) does in every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Replies [`REPLY`].
    Reply,
    /// Writes `note.txt` (a call the default policy sends for approval),
    /// then replies [`DONE`].
    ApprovedWrite,
    /// Spawns a sub-agent (`sessions_spawn`: [`SPAWNED_TASK`], labelled
    /// [`SPAWNED_LABEL`]) whose answer is [`DONE`], then replies [`DONE`]
    /// (the real gateway's child run replays the same script: at depth 1
    /// it is offered no spawning tool, and says [`DONE`] after the error).
    Spawn,
}

pub const SPAWNED_TASK: &str = "find the answer";
pub const SPAWNED_LABEL: &str = "finder";

pub const REPLY: &str = "Hello from the SDK suite.";
pub const DONE: &str = "Done.";
/// The write tool's catalog id, an approval's `toolId`.
pub const WRITE: &str = "openclaw:core:write";
/// How many runs a fake is scripted for.
const FAKE_RUNS: usize = 8;

/// A gateway of either kind.
pub struct Backend {
    pub kind: Kind,
    pub url: String,
    pub token: String,
    pub fake: Option<FakeGateway>,
    pub real: Option<Real>,
}

#[allow(
    dead_code,
    reason = "held so that the gateway and its mock live as long as the test"
)]
pub struct Real {
    pub running: Running,
    pub dir: tempfile::TempDir,
    pub mock: Arc<MockModel>,
    pub proxy: StreamCutter,
}

fn script(scenario: Scenario) -> Script {
    let turns = match scenario {
        Scenario::Reply => vec![Turn {
            text: Some(REPLY.into()),
            ..Turn::default()
        }],
        Scenario::Spawn => vec![
            Turn {
                tool_calls: vec![ScriptedCall {
                    name: "sessions_spawn".into(),
                    arguments: json!({"task": SPAWNED_TASK, "label": SPAWNED_LABEL}),
                }],
                ..Turn::default()
            },
            Turn {
                text: Some(DONE.into()),
                ..Turn::default()
            },
        ],
        Scenario::ApprovedWrite => vec![
            Turn {
                tool_calls: vec![ScriptedCall {
                    name: "write".into(),
                    arguments: json!({"path": "note.txt", "content": "approved text"}),
                }],
                ..Turn::default()
            },
            Turn {
                text: Some(DONE.into()),
                ..Turn::default()
            },
        ],
    };
    Script {
        turns,
        replay: Replay::PerRun,
        ..Script::default()
    }
}

fn fake_run(scenario: Scenario) -> FakeRun {
    match scenario {
        // Like the real gateway, the fake leaves each run's trajectory.
        Scenario::Reply => FakeRun::reply(REPLY),
        Scenario::Spawn => FakeRun::reply(DONE).spawn(
            FakeTask::new(SPAWNED_TASK)
                .label(SPAWNED_LABEL)
                .result(DONE)
                .takes(std::time::Duration::from_millis(50)),
        ),
        Scenario::ApprovedWrite => FakeRun::reply(DONE).approval(
            WRITE,
            json!({"path": "note.txt", "content": "approved text"}),
        ),
    }
}

impl Backend {
    pub async fn start(kind: Kind, scenario: Scenario) -> Self {
        let defaults = match scenario {
            Scenario::Spawn => json!({"subagents": {}}),
            _ => json!({}),
        };
        let runs = vec![fake_run(scenario); FAKE_RUNS];
        Self::start_with(kind, script(scenario), runs, defaults).await
    }

    /// A backend whose model plays `script` (the real gateway's) or whose
    /// runs play `runs` (the fake's, in order; then `ok`), with
    /// `defaults`' keys added to the config's `agents.defaults`.
    pub async fn start_with(
        kind: Kind,
        script: Script,
        runs: Vec<FakeRun>,
        defaults: serde_json::Value,
    ) -> Self {
        match kind {
            Kind::Fake => {
                let fake = FakeGateway::start().await.unwrap();
                for run in runs {
                    fake.script_run(run);
                }
                Self {
                    kind,
                    url: fake.url(),
                    token: fake.token().to_owned(),
                    fake: Some(fake),
                    real: None,
                }
            }
            Kind::Real => {
                let dir = tempfile::tempdir().unwrap();
                std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
                let mock = Arc::new(MockModel::start(script).await.unwrap());
                let mut doc =
                    json!({"agents": {"defaults": {"workspace": dir.path().join("workspace")}}});
                for (key, value) in defaults.as_object().into_iter().flatten() {
                    doc["agents"]["defaults"][key] = value.clone();
                }
                let config = talon_config::Config::parse(&doc.to_string(), None).unwrap();
                let host = Arc::new(
                    Host::new(
                        Arc::new(config),
                        ModelRoute {
                            base_url: Some(mock.base_url()),
                        },
                    )
                    .unwrap(),
                );
                let running = talon_gateway::start(GatewayConfig::local(dir.path(), 0, host))
                    .await
                    .unwrap();
                let token = running.admin_token.clone().unwrap();
                let proxy = StreamCutter::start(running.addr).await.unwrap();
                Self {
                    kind,
                    url: proxy.url(),
                    token,
                    fake: None,
                    real: Some(Real {
                        running,
                        dir,
                        mock,
                        proxy,
                    }),
                }
            }
        }
    }

    pub async fn talon(&self) -> Talon {
        Talon::connect(&self.url, &self.token).await.unwrap()
    }

    pub fn config(&self) -> ClientConfig {
        ClientConfig::new(&self.url, &self.token)
    }

    /// Cuts the next event stream after `frames` events.
    pub fn cut_next_stream(&self, frames: usize) {
        match (&self.fake, &self.real) {
            (Some(fake), _) => fake.inject(Fault::DropStream {
                after_events: frames,
            }),
            (_, Some(real)) => real.proxy.cut_next_stream(frames),
            _ => unreachable!(),
        }
    }

    /// The file the approved write makes, where the backend has one.
    pub fn note(&self) -> Option<String> {
        let real = self.real.as_ref()?;
        std::fs::read_to_string(real.dir.path().join("workspace/note.txt")).ok()
    }
}

/// Runs `async fn $name(kind: Kind)` against both backends.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn fake() {
                    super::$name(crate::suite::Kind::Fake).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn real() {
                    super::$name(crate::suite::Kind::Real).await;
                }
            }
        )*
    };
}
pub(crate) use both;

/// A list method's params with neither limit nor cursor: the first page.
pub fn every<T: serde::de::DeserializeOwned>() -> T {
    serde_json::from_value(serde_json::json!({})).unwrap()
}
