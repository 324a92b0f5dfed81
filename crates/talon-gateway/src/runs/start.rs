//! Starting a claimed run's loop: its context, its input made ready, its
//! environment bound, its [`RunSpec`] (the durable approver and question
//! asker, the files it writes, its cells), then the loop itself: a new
//! turn, a resumption, or one tool invoked. What refuses a run before its
//! loop starts comes back as [`Refused`], with the input to keep.

use std::sync::Arc;
use std::time::Duration;

use talon_agent::{Checkpoint, RunEvents, RunResult};
use talon_protocol::gateway::{ApiError, ClientTool, Environment, ErrorCode, Run};
use talon_protocol::{CatalogMode, ExecutionMode, ToolDefinition, ToolEffect, ToolSource};
use talon_provider::Message as ModelMessage;
use talon_runtime::{PreparedRun, RunSpec};
use talon_tools::{Approvals, NoUpdates, PolicyGate, RunContext, RunScope};

use super::approvals::DurableApprover;
use super::artifacts::RunFiles;
use super::exec::{Prepared, invocation_error};
use super::questions::DurableQuestions;
use super::sink::StoreSink;
use super::{Active, Engine};
use crate::environments::Binding;

/// Where a claimed run's loop starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Resume {
    /// From its input: a run no node started before.
    No,
    /// From its last complete turn (its node died after it).
    From(Checkpoint),
    /// From its input again: its node died before a turn ended.
    FromInput,
}

/// What the loop of a run is started with.
pub(super) struct Loop {
    pub ctx: RunContext,
    pub events: Arc<RunEvents>,
    pub sink: Arc<StoreSink>,
    pub start: Resume,
}

/// A run's loop, ended.
pub(super) struct Looped {
    pub result: RunResult,
    /// What the run added to the session: its input, then the loop's
    /// messages.
    pub added: Vec<ModelMessage>,
    /// The error of the one tool a `tools.invoke` run called.
    pub invoked_error: Option<ApiError>,
    /// The environment it ran in.
    pub environment: Option<(Environment, Binding)>,
}

/// A run refused before its loop started.
pub(super) struct Refused {
    pub error: ApiError,
    /// The input to keep in the session (answers to pending calls, the
    /// messages before the turn).
    pub input: Vec<ModelMessage>,
    /// The user's turn, kept too.
    pub message: Option<String>,
}

impl Refused {
    fn before_input(error: ApiError) -> Self {
        Self {
            error,
            input: Vec::new(),
            message: None,
        }
    }
}

/// The run's context: its ids, its node's cancellation.
pub(super) fn context(run: &Run, active: &Active) -> RunContext {
    RunContext {
        scope: RunScope {
            agent_id: run.agent_id.clone().into(),
            session_id: run.session_id.clone().unwrap_or_default().into(),
            run_id: run.id.clone().into(),
        },
        session_key: run.session_key.clone().unwrap_or_default().into(),
        sender: None,
        channel: Some("gateway".into()),
        cancel: active.cancel.clone(),
        updates: Arc::new(NoUpdates),
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
        catalog_mode: CatalogMode::DirectOnly,
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
        request: Option<serde_json::Value>,
        parts: Loop,
    ) -> Result<Looped, Refused> {
        let policy = self.policy().map_err(Refused::before_input)?;
        let prepared = self
            .prepare_input(run, request)
            .await
            .map_err(Refused::before_input)?;
        let Prepared {
            request,
            history,
            added,
            message,
        } = prepared;
        let refused =
            |error: ApiError, added: Vec<ModelMessage>, message: Option<String>| Refused {
                error,
                input: added,
                message,
            };
        let environment = match &request.environment_id {
            Some(id) => match self.bind_environment(id).await {
                Ok(bound) => Some(bound),
                Err(error) => return Err(refused(error, added, message)),
            },
            None => None,
        };
        let spec = self.spec(run, &parts, policy, &request, environment.as_ref());
        let prepared = match self.inner.host.prepare(spec).await {
            Ok(prepared) => prepared,
            Err(error) => {
                let error = ApiError::new(ErrorCode::InvalidRequest, error.to_string());
                return Err(refused(error, added, message));
            }
        };
        if let Some(invocation) = request.invoke {
            let (result, outcome) = prepared
                .invoke(&invocation.tool, invocation.arguments)
                .await;
            return Ok(Looped {
                result,
                added,
                invoked_error: invocation_error(&invocation.tool, &outcome),
                environment,
            });
        }
        let result = turn(prepared, history, parts.start, message).await;
        let mut added = added;
        added.extend(result.messages.iter().cloned());
        Ok(Looped {
            result,
            added,
            invoked_error: None,
            environment,
        })
    }

    /// The run's spec: the durable approver and question asker, where its
    /// files and cells go, its environment's workspace, shell and secrets.
    fn spec(
        &self,
        run: &Run,
        parts: &Loop,
        policy: Arc<Approvals>,
        request: &super::RunRequest,
        environment: Option<&(Environment, Binding)>,
    ) -> RunSpec {
        let store = &self.inner.store;
        let events = &parts.events;
        let sink = &parts.sink;
        let mut secrets = self.inner.secrets.clone();
        let (workspace, shell, redact) = match environment {
            Some((environment, binding)) => {
                sink.redact(binding.secrets.clone());
                secrets.extend(binding.secrets.iter().cloned());
                (
                    environment.workspace.as_ref().map(std::path::PathBuf::from),
                    binding.shell.clone(),
                    binding.secrets.clone(),
                )
            }
            None => (None, Default::default(), Vec::new()),
        };
        RunSpec {
            agent: run.agent_id.clone().into(),
            ctx: parts.ctx.clone(),
            events: events.clone(),
            approver: Arc::new(PolicyGate::new(
                policy.clone(),
                Arc::new(DurableApprover {
                    store: store.clone(),
                    policy,
                    events: events.clone(),
                    sink: sink.clone(),
                    resolved: self.inner.resolutions.subscribe(),
                    engine: self.clone(),
                }),
            )),
            questions: Some(Arc::new(DurableQuestions {
                store: store.clone(),
                events: events.clone(),
                sink: sink.clone(),
                resolved: self.inner.resolutions.subscribe(),
                engine: self.clone(),
            })),
            changes: Some(Arc::new(RunFiles {
                engine: self.clone(),
                events: events.clone(),
                secrets,
            })),
            shell,
            redact,
            cells: self.cells(),
            workspace,
            timeout: request.timeout_ms.map(Duration::from_millis),
            client_tools: request.tools.iter().map(client_tool).collect(),
        }
    }
}

/// The loop from where the run starts: a new turn of `message`, a
/// resumption, or (no message) the model going on from the app's answers.
async fn turn(
    prepared: PreparedRun,
    history: Vec<ModelMessage>,
    start: Resume,
    message: Option<String>,
) -> RunResult {
    match (start, message) {
        (Resume::From(from), _) => prepared.resume(history, from).await,
        (Resume::FromInput, message) => {
            let from = Checkpoint::input(message.as_deref());
            prepared.resume(history, from).await
        }
        (Resume::No, Some(message)) => prepared.run(history, &message).await,
        (Resume::No, None) => prepared.proceed(history).await,
    }
}
