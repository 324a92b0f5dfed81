//! Starting a claimed run's loop through `talon_runtime`'s front: its
//! input made ready, its environment bound, its [`RunSpec`] (its ids, the
//! store as its sink, the approval policy, the [`Hooks`] that ask a person
//! and keep its files durably, its cells), then the run itself: a new
//! turn, a resumption, or one tool invoked. What refuses a run before its
//! loop starts comes back as [`Refused`], with the input to keep.

use std::sync::Arc;
use std::time::Duration;
use talon_protocol::gateway::bounded::ProviderId;

use talon_protocol::gateway::{ApiError, ClientTool, Environment, ErrorCode, Run};
use talon_protocol::{CatalogMode, ExecutionMode, ToolDefinition, ToolEffect, ToolSource};
use talon_runtime::changes::ToolOutputs;
use talon_runtime::{Conversation, RunEmitter, RunHooks, RunIds, RunOutcome, RunSpec, Start, Turn};
use talon_tools::{Approvals, Approver, CancellationToken, ToolExecutor};

use super::Engine;
use super::approvals::DurableApprover;
use super::artifacts::RunFiles;
use super::exec::Prepared;
use super::questions::DurableQuestions;
use super::sink::StoreSink;
use talon_environments::Binding;

/// Where a claimed run's loop starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Resume {
    /// From its input: a run no node started before.
    No,
    /// From its last complete turn (its node died after it).
    From(Turn),
    /// From its input again: its node died before a turn ended.
    FromInput,
}

/// What the loop of a run is started with.
pub(super) struct Loop {
    pub ids: RunIds,
    pub cancel: CancellationToken,
    pub sink: Arc<StoreSink>,
    pub start: Resume,
    /// What the gateway adds ([`super::MoreTools`]), set as it starts.
    pub more: super::More,
}

/// A run's loop, ended.
pub(super) struct Looped {
    pub result: RunOutcome,
    /// What the run added to the session: its input, then the loop's
    /// messages.
    pub added: Conversation,
    /// Where in `added` the model's message that asks the app's client
    /// calls is, when the run left some.
    pub asked: Option<usize>,
    /// The environment it ran in.
    pub environment: Option<(Environment, Binding)>,
}

/// A run refused before its loop started.
pub(super) struct Refused {
    pub error: ApiError,
    /// The input to keep in the session (answers to pending calls, the
    /// messages before the turn, the user's turn).
    pub input: Conversation,
    /// The user's turn, kept too.
    pub message: Option<String>,
}

impl Refused {
    fn before_input(error: ApiError) -> Self {
        Self {
            error,
            input: Conversation::default(),
            message: None,
        }
    }
}

/// The run's ids as its events carry them.
pub(super) fn ids(run: &Run) -> RunIds {
    RunIds {
        agent: run.agent_id.clone(),
        session: run.session_id.clone().unwrap_or_default(),
        run: run.id.clone(),
        session_key: run.session_key.clone().unwrap_or_default(),
        channel: Some("gateway".into()),
    }
}

/// What the gateway plugs into each run: a person asked through the store
/// (approvals, questions), files kept as artifacts.
struct Hooks {
    engine: Engine,
    sink: Arc<StoreSink>,
    policy: Arc<Approvals>,
    /// Redacted from stored files: the gateway's secrets and the run's
    /// bound ones.
    secrets: Vec<String>,
    /// Which commands' output becomes a `log` artifact.
    logs: talon_runtime::KeepLog,
    /// The run's environment, when it has one.
    environment: Option<Environment>,
    /// The tools the gateway adds ([`super::MoreTools`]).
    spawn: Vec<talon_runtime::HostTools>,
}

impl RunHooks for Hooks {
    fn asker(&self, events: &RunEmitter) -> Arc<dyn Approver> {
        Arc::new(DurableApprover {
            store: self.engine.inner.store.clone(),
            policy: self.policy.clone(),
            events: events.clone(),
            sink: self.sink.clone(),
            resolved: self.engine.inner.resolutions.subscribe(),
            engine: self.engine.clone(),
            acted: std::sync::Mutex::default(),
        })
    }

    fn questions(&self, events: &RunEmitter) -> Option<Arc<dyn ToolExecutor>> {
        Some(Arc::new(DurableQuestions {
            store: self.engine.inner.store.clone(),
            events: events.clone(),
            sink: self.sink.clone(),
            resolved: self.engine.inner.resolutions.subscribe(),
            engine: self.engine.clone(),
            settled: std::sync::Mutex::default(),
        }))
    }

    fn changes(&self, events: &RunEmitter) -> Option<Arc<dyn ToolOutputs>> {
        Some(Arc::new(RunFiles {
            engine: self.engine.clone(),
            events: events.clone(),
            secrets: self.secrets.clone(),
            logs: self.logs,
            files: std::sync::Mutex::default(),
        }))
    }

    fn host_tools(&self, events: &RunEmitter) -> Vec<talon_runtime::HostTools> {
        let mut tools: Vec<talon_runtime::HostTools> = self.spawn.clone();
        tools.extend(self.pull_request(events));
        tools
    }
}

impl Hooks {
    /// An environment's `pull_request`, when its provider offers one.
    fn pull_request(&self, events: &RunEmitter) -> Option<talon_runtime::HostTools> {
        let environment = self.environment.as_ref()?;
        let provider = self
            .engine
            .providers()
            .get(environment.provider.as_str())
            .ok()?;
        let state_dir = self.engine.state_dir();
        let settings = environment.settings.clone().unwrap_or_default();
        let target = match provider.pull_request(
            &settings,
            environment.id.as_str(),
            self.engine.environment_context(&state_dir),
        ) {
            Ok(Some(target)) => target,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(environment = %environment.id, error = %error.message,
                               "pull requests asked for, not offered");
                return None;
            }
        };
        Some(talon_runtime::HostTools {
            owner: super::pull_request::OWNER,
            definitions: vec![super::pull_request::definition()],
            executor: Arc::new(super::pull_request::PullRequests {
                engine: self.engine.clone(),
                events: events.clone(),
                environment: environment.clone(),
                provider,
                target,
                secrets: self.secrets.clone(),
            }),
        })
    }
}

/// A client tool as the catalog takes it.
fn client_tool(tool: &ClientTool) -> ToolDefinition {
    ToolDefinition {
        name: tool.name.to_string(),
        label: None,
        description: tool
            .description
            .as_deref()
            .map(str::to_owned)
            .unwrap_or_default(),
        parameters: tool.parameters.clone(),
        source: ToolSource::Client,
        owner: "app".into(),
        // The run decides: cataloged under Code Mode, else by name.
        catalog_mode: CatalogMode::Default,
        execution_mode: ExecutionMode::default(),
        requires_approval: false,
        effect: ToolEffect::default(),
        replay_safe: false,
    }
}

impl Engine {
    /// Starts the loop of `run` and waits for it to end.
    pub(super) async fn run_loop(
        &self,
        run: &Run,
        request: Result<super::RunRequest, talon_store::UnreadableRequest>,
        parts: Loop,
    ) -> Result<Looped, Refused> {
        let policy = self.policy().map_err(Refused::before_input)?;
        let Prepared { request, input } = self
            .prepare_input(run, request)
            .await
            .map_err(Refused::before_input)?;
        let refused = |error: ApiError, added: Conversation, message: Option<String>| Refused {
            error,
            input: added,
            message,
        };
        if let Err(error) = self.answer_cells(&input).await {
            return Err(refused(error, input.added, input.message));
        }
        let talon_runtime::conversation::Prepared {
            history,
            added,
            message,
            resume,
            settled,
            ..
        } = input;
        let environment = match &request.environment_id {
            Some(id) => match self.bind_environment(id.as_str()).await {
                Ok(bound) => Some(bound),
                Err(error) => return Err(refused(error, added, message)),
            },
            None => None,
        };
        let start = match (request.invoke.clone(), parts.start.clone(), message.clone()) {
            (Some(invocation), _, _) => Start::Invoke {
                tool: invocation.tool.to_string(),
                arguments: invocation.arguments,
            },
            (None, Resume::From(turn), _) => Start::Resume(turn),
            (None, Resume::FromInput, message) => Start::Again(message),
            (None, Resume::No, Some(message)) => Start::Message(message),
            (None, Resume::No, None) => Start::Proceed { resume },
        };
        // The tools the gateway adds (the ledger's sub-agent tools, for an
        // agent that may spawn).
        let mut parts = parts;
        if let Some(more) = self.inner.more_tools.get() {
            parts.more = more(run.clone()).await;
        }
        let mut spec = self.spec(
            &parts,
            policy,
            &request,
            environment.as_ref(),
            history,
            start,
        );
        // A run its node resumes announced them on its first attempt.
        if matches!(parts.start, Resume::No) {
            spec.settled = settled;
        }
        let handle = match self.inner.host.start(spec).await {
            Ok(handle) => handle,
            Err(error) => {
                let error = ApiError::new(ErrorCode::InvalidRequest, error.to_string());
                return Err(refused(error, added, message));
            }
        };
        let mut result = handle.finish().await;
        let mut added = added;
        let asked = if result.pending.is_empty() {
            None
        } else {
            result.messages.last_assistant().map(|at| added.len() + at)
        };
        added.extend(std::mem::take(&mut result.messages));
        Ok(Looped {
            result,
            added,
            asked,
            environment,
        })
    }

    /// Where an `ssh` environment's commands run (`None` for others).
    fn remote_host(
        &self,
        environment: &Environment,
        agent: &str,
    ) -> Option<Arc<dyn talon_runtime::RemoteHost>> {
        let ssh = self
            .inner
            .ssh
            .as_ref()
            .filter(|_| environment.provider == ProviderId::new("ssh"))?;
        let dir = talon_environments::dir_of(&self.state_dir(), environment.id.as_str());
        let settings = environment.settings.clone().unwrap_or_default();
        Some(match ssh.remote(&settings, &dir) {
            Ok(shell) => {
                let jail = self.inner.host.jails().of(agent).clone();
                Arc::new(super::remote::SshHost(shell.with_jail(jail)))
            }
            // Never run here instead: every command says why.
            Err(error) => Arc::new(super::remote::Unreachable(error.message)),
        })
    }

    /// The run's spec: its ids, the store as its sink, the policy and the
    /// durable hooks, where its cells go, its environment's workspace,
    /// shell and secrets.
    fn spec(
        &self,
        parts: &Loop,
        policy: Arc<Approvals>,
        request: &super::RunRequest,
        environment: Option<&(Environment, Binding)>,
        history: Conversation,
        start: Start,
    ) -> RunSpec {
        let sink = &parts.sink;
        let mut secrets = self.inner.secrets.clone();
        let (workspace, shell, redact) = match environment {
            Some((environment, binding)) => {
                sink.redact(binding.secrets.clone());
                secrets.extend(binding.secrets.iter().cloned());
                (
                    environment
                        .workspace
                        .as_ref()
                        .map_or(talon_runtime::Workspace::Agent, |at| {
                            talon_runtime::Workspace::Environment(at.into())
                        }),
                    talon_runtime::ShellOptions {
                        env: binding.env.clone(),
                        network: binding.network,
                        remote: self.remote_host(environment, parts.ids.agent.as_str()),
                        ..Default::default()
                    },
                    binding.secrets.clone(),
                )
            }
            None => (
                talon_runtime::Workspace::Agent,
                Default::default(),
                Vec::new(),
            ),
        };
        // Background processes, where the gateway keeps them.
        let shell = talon_runtime::ShellOptions {
            background: parts
                .more
                .background
                .clone()
                .map(|b| talon_runtime::Background {
                    redact: secrets.clone(),
                    ..b
                }),
            ..shell
        };
        RunSpec {
            clock: self.inner.store.clock().clone(),
            ids: parts.ids.clone(),
            cancel: parts.cancel.clone(),
            sink: sink.clone(),
            approvals: policy.clone(),
            hooks: Arc::new(Hooks {
                engine: self.clone(),
                sink: sink.clone(),
                policy,
                secrets,
                logs: match environment {
                    Some(_) => talon_runtime::KeepLog::Always,
                    None => talon_runtime::KeepLog::WhenCut,
                },
                environment: environment.map(|(environment, _)| environment.clone()),
                spawn: parts.more.tools.clone(),
            }),
            cells: self.cells(),
            workspace,
            timeout: request.timeout_ms.map(Duration::from_millis),
            client_tools: request.tools.iter().map(client_tool).collect(),
            shell,
            redact,
            settled: Vec::new(),
            history,
            start,
        }
    }
}
