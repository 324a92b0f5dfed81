//! Sub-agents: `sessions_spawn` (OpenClaw's name and argument names)
//! starts a child run of an agent in a session of its own, detached, and
//! records the task that follows it; `subagents` lists the run's children,
//! waits for them, or cancels one. A run is offered both only when its
//! agent has a `subagents` section and it is shallower than
//! `maxSpawnDepth`.
//!
//! A child inherits no more than its parent: the parent's subject (so the
//! same tokens see it), no environment (its agent's own workspace, in the
//! agent's sandbox), its agent's tool policy, and no spawning beyond the
//! depth. Depth, children per run and sub-agents across every node are
//! bounded by the agent's section; a refusal says which bound and how to
//! raise it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey, TaskId};
use talon_protocol::gateway::tasks::{Task, TaskKind, TaskStatus};
use talon_protocol::gateway::{MultitaskStrategy, Run, RunInput, Session};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_runtime::HostTools;
use talon_runtime::SubagentsSection;
use talon_store::TaskOwner;
use talon_tools::{
    BoxFuture, CatalogEntry, RunContext, ToolCall, ToolError, ToolErrorCode, ToolExecutor,
};

use super::Ledger;
use crate::runs::{RunRequest, Submit, new_id};

/// The tools' owner in the catalog.
pub(crate) const OWNER: &str = "subagents";
/// The longest `task` taken.
const MAX_TASK_BYTES: usize = 64 << 10;
/// The longest `label` taken.
const MAX_LABEL_CHARS: usize = 256;
/// The longest a `subagents` wait may block.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// The defaults of a `subagents` section's keys (OpenClaw's).
const DEFAULT_MAX_DEPTH: u32 = 1;
const DEFAULT_MAX_CHILDREN: u32 = 5;
const DEFAULT_MAX_CONCURRENT: u32 = 8;

fn definitions() -> Vec<ToolDefinition> {
    let tool =
        |name: &str, label: &str, description: &str, parameters: Value, effect| ToolDefinition {
            name: name.into(),
            label: Some(label.into()),
            description: description.into(),
            parameters,
            source: ToolSource::Openclaw,
            owner: OWNER.into(),
            catalog_mode: Default::default(),
            execution_mode: Default::default(),
            requires_approval: false,
            effect,
            replay_safe: false,
        };
    vec![
        tool(
            "sessions_spawn",
            "Spawn a sub-agent",
            "Start a sub-agent on a task in a session of its own, in the background: this returns at once \
             with its taskId and runId, and its result is posted to this session when it ends. \
             Use subagents (action wait) to gather results in this turn.",
            json!({
                "type": "object",
                "properties": {
                    "task": {"type": "string", "description": "What the sub-agent should do: its whole instruction"},
                    "label": {"type": "string", "description": "A short name for it, shown in lists"},
                    "agentId": {"type": "string", "description": "The agent to run (default: this one)"},
                    "runTimeoutSeconds": {"type": "integer", "minimum": 0, "description": "Its time limit (0: the default)"}
                },
                "required": ["task"]
            }),
            ToolEffect::Writes,
        ),
        tool(
            "subagents",
            "Follow sub-agents",
            "The sub-agents this run spawned: list them, wait for some to end (their results), or cancel one.",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "wait", "cancel"], "description": "What to do (default list)"},
                    "taskIds": {"type": "array", "items": {"type": "string"}, "maxItems": 32, "description": "wait: these (default: every unfinished one); cancel: the one to cancel"},
                    "timeoutSeconds": {"type": "integer", "minimum": 0, "maximum": 60, "description": "wait: at most this long (default 30)"}
                }
            }),
            ToolEffect::Writes,
        ),
    ]
}

/// The `subagents` section of a run's agent, if it has one.
fn section_of(ledger: &Ledger, parent: &Run) -> Option<SubagentsSection> {
    let document = ledger.engine().host().config().document().ok()?;
    document.agents.subagents(parent.agent_id.as_str())
}

/// The sub-agent tools of a run of `parent` at `depth` (0: a top-level
/// run) under its agent's `section`, if it may spawn deeper.
fn spawn_tools(
    ledger: &Ledger,
    parent: &Run,
    depth: u32,
    section: SubagentsSection,
) -> Option<HostTools> {
    if depth >= section.max_spawn_depth.unwrap_or(DEFAULT_MAX_DEPTH) {
        return None;
    }
    Some(HostTools {
        owner: OWNER,
        definitions: definitions(),
        executor: Arc::new(Spawner {
            ledger: ledger.clone(),
            parent: parent.clone(),
            depth,
            section,
            gate: tokio::sync::Mutex::new(()),
        }),
    })
}

/// Runs the sub-agent tools for one parent run.
struct Spawner {
    ledger: Ledger,
    parent: Run,
    depth: u32,
    section: SubagentsSection,
    /// Spawns of this run take turns, so that parallel calls cannot both
    /// pass the bound on its children.
    gate: tokio::sync::Mutex<()>,
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCode::PermissionDenied, message)
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCode::InvalidArgument, message)
}

fn internal(error: impl std::fmt::Display) -> ToolError {
    ToolError::new(ToolErrorCode::Unavailable, error.to_string())
}

/// What the model sees of a task.
fn view(task: &Task) -> Value {
    json!({
        "taskId": task.id,
        "label": task.label,
        "agentId": task.agent_id,
        "status": task.status.as_str(),
        "runId": task.child_run_id,
        "result": task.result,
        "error": task.error.as_ref().map(|e| e.message.clone()),
    })
}

impl Spawner {
    async fn spawn(&self, args: &Value) -> Result<Value, ToolError> {
        let text = args["task"].as_str().map(str::trim).unwrap_or_default();
        if text.is_empty() || text.len() > MAX_TASK_BYTES {
            return Err(invalid(format!(
                "sessions_spawn: task must be 1 to {MAX_TASK_BYTES} bytes of instruction"
            )));
        }
        let label = args["label"]
            .as_str()
            .map(str::trim)
            .filter(|l| !l.is_empty());
        if label.is_some_and(|l| l.chars().count() > MAX_LABEL_CHARS) {
            return Err(invalid(format!(
                "sessions_spawn: label must be at most {MAX_LABEL_CHARS} characters"
            )));
        }
        let agent = match args.get("agentId").and_then(Value::as_str) {
            Some(id) => id.trim().to_owned(),
            None => self.parent.agent_id.as_str().to_owned(),
        };
        let _turn = self.gate.lock().await;
        self.may_spawn(&agent).await?;
        let timeout_s = args
            .get("runTimeoutSeconds")
            .and_then(Value::as_u64)
            .filter(|s| *s > 0)
            .or(self.section.run_timeout_seconds.filter(|s| *s > 0));
        let engine = self.ledger.engine();
        let store = engine.store();
        let now = store.now_ms();
        let task_id = TaskId::new(new_id("task").map_err(|e| internal(e.message))?);
        let session = Session {
            id: SessionId::new(new_id("sess").map_err(|e| internal(e.message))?),
            key: SessionKey::new(format!("{agent}:subagent:{task_id}")),
            agent_id: AgentId::new(agent.clone()),
            subject: self.parent.subject.clone(),
            parent_id: None,
            forked_at_message_id: None,
            metadata: Default::default(),
            created_at: now,
            updated_at: now,
        };
        store.create_session(&session).await.map_err(internal)?;
        let task = Task {
            label: label.map(str::to_owned),
            description: Some(text.to_owned()),
            agent_id: Some(session.agent_id.clone()),
            session_id: self.parent.session_id.clone(),
            session_key: self.parent.session_key.clone(),
            run_id: Some(self.parent.id.clone()),
            subject: self.parent.subject.clone(),
            child_session_id: Some(session.id.clone()),
            child_session_key: Some(session.key.clone()),
            depth: self.depth + 1,
            ..Task::queued(task_id.clone(), TaskKind::Subagent, now)
        };
        let owner = TaskOwner {
            subject: self.parent.subject.as_ref().map(|s| s.as_str()),
            agent_id: Some(self.parent.agent_id.as_str()),
            token_id: None,
        };
        self.ledger.create(&task, owner).await.map_err(internal)?;
        let mut request = RunRequest::of_input(RunInput::Text(text.to_owned()));
        request.timeout_ms = timeout_s.map(|s| s.saturating_mul(1_000));
        request.task_id = Some(task_id.clone());
        let child = engine
            .submit(Submit {
                agent_id: session.agent_id.clone(),
                session: session.clone(),
                request,
                strategy: MultitaskStrategy::Reject,
                idempotency: None,
            })
            .await;
        let child = match child {
            Ok(child) => child,
            Err(error) => {
                // The task never had a run: it ends failed, saying why.
                let failed = Task {
                    status: TaskStatus::Failed,
                    ended_at: Some(store.now_ms()),
                    error: Some(error.clone()),
                    ..task.clone()
                };
                let _ = self.ledger.moved(failed, &task).await;
                return Err(ToolError::new(
                    ToolErrorCode::Unavailable,
                    format!("sessions_spawn: {}", error.message),
                ));
            }
        };
        self.ledger.link(task, &child.id, None).await;
        Ok(json!({
            "status": "accepted",
            "taskId": task_id,
            "runId": child.id,
            "childSessionKey": session.key,
        }))
    }

    /// Whether this run may spawn a run of `agent` now: the agent allowed
    /// and known, and every bound kept.
    async fn may_spawn(&self, agent: &str) -> Result<(), ToolError> {
        let own = self.parent.agent_id.as_str();
        let allowed = match &self.section.allow_agents {
            None => agent == own,
            Some(list) => list.iter().any(|a| a.0 == "*" || a.0 == agent),
        };
        if !allowed {
            return Err(refused(format!(
                "sessions_spawn: agent {agent:?} is not in this agent's subagents.allowAgents (it may spawn {})",
                match &self.section.allow_agents {
                    None => format!("only itself, {own:?}"),
                    Some(list) => list
                        .iter()
                        .map(|a| format!("{:?}", a.0))
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            )));
        }
        let engine = self.ledger.engine();
        let known = agent == crate::api::DEFAULT_AGENT
            || engine
                .host()
                .config()
                .document()
                .is_ok_and(|d| d.agents.list.iter().any(|a| a.id.as_deref() == Some(agent)))
            || engine
                .store()
                .agent(&AgentId::new(agent))
                .await
                .map_err(internal)?
                .is_some();
        if !known {
            return Err(invalid(format!("sessions_spawn: no agent {agent:?}")));
        }
        let max_depth = self.section.max_spawn_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        if self.depth + 1 > max_depth {
            return Err(refused(format!(
                "sessions_spawn: sub-agents nest at most {max_depth} deep (agents.*.subagents.maxSpawnDepth)"
            )));
        }
        let store = engine.store();
        let children = store
            .live_tasks_of_run(&self.parent.id)
            .await
            .map_err(internal)?
            .len();
        let max_children = self
            .section
            .max_children_per_agent
            .unwrap_or(DEFAULT_MAX_CHILDREN);
        if children >= max_children as usize {
            return Err(refused(format!(
                "sessions_spawn: this run has {children} unfinished sub-agents, the most it may have \
                 (agents.*.subagents.maxChildrenPerAgent); wait for one with subagents"
            )));
        }
        let live = store
            .live_task_count(TaskKind::Subagent)
            .await
            .map_err(internal)?;
        let max_live = self
            .section
            .max_concurrent
            .unwrap_or(DEFAULT_MAX_CONCURRENT);
        if live >= u64::from(max_live) {
            return Err(refused(format!(
                "sessions_spawn: {live} sub-agents are unfinished on this gateway, the most it runs \
                 (agents.*.subagents.maxConcurrent); try again when one ends"
            )));
        }
        Ok(())
    }

    async fn follow(&self, ctx: &RunContext, args: &Value) -> Result<Value, ToolError> {
        let store = self.ledger.engine().store();
        let action = args["action"].as_str().unwrap_or("list");
        let ids: Vec<&str> = args["taskIds"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let filter = talon_store::TaskFilter {
            run_id: Some(self.parent.id.as_str().to_owned()),
            ..Default::default()
        };
        let mine = || async {
            store
                .list_tasks(&filter, None, talon_protocol::gateway::caps::MAX_LIMIT)
                .await
                .map_err(internal)
        };
        match action {
            "list" => Ok(json!({"subagents": mine().await?.iter().map(view).collect::<Vec<_>>()})),
            "cancel" => {
                let [id] = ids.as_slice() else {
                    return Err(invalid("subagents: cancel takes one id in taskIds"));
                };
                let task = mine()
                    .await?
                    .into_iter()
                    .find(|t| t.id.as_str() == *id)
                    .ok_or_else(|| {
                        invalid(format!("subagents: this run spawned no task {id:?}"))
                    })?;
                let cancelled = self
                    .ledger
                    .cancel(task, Some("its parent cancelled it"))
                    .await
                    .map_err(|e| ToolError::new(ToolErrorCode::InvalidArgument, e.message))?;
                Ok(view(&cancelled))
            }
            "wait" => {
                let limit = args["timeoutSeconds"].as_u64().unwrap_or(30);
                let deadline =
                    tokio::time::Instant::now() + Duration::from_secs(limit).min(MAX_WAIT);
                let mut ended = self.ledger.engine().ended();
                loop {
                    let tasks: Vec<Task> = mine()
                        .await?
                        .into_iter()
                        .filter(|t| ids.is_empty() || ids.contains(&t.id.as_str()))
                        .collect();
                    let done = tasks.iter().all(|t| t.status.is_terminal());
                    if done || tokio::time::Instant::now() >= deadline {
                        return Ok(json!({
                            "reason": if done { "completed" } else { "timeout" },
                            "subagents": tasks.iter().map(view).collect::<Vec<_>>(),
                        }));
                    }
                    tokio::select! {
                        () = ctx.cancel.cancelled() => {
                            return Err(ToolError::new(ToolErrorCode::Aborted, "subagents: the run was cancelled"));
                        }
                        _ = ended.changed() => {}
                        () = tokio::time::sleep(Duration::from_millis(250)) => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                    // A child that ended here is moved by the follower;
                    // sweep now rather than wait for it.
                    self.ledger.sweep().await;
                }
            }
            other => Err(invalid(format!(
                "subagents: action {other:?} is not one of list, wait, cancel"
            ))),
        }
    }
}

impl ToolExecutor for Spawner {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            match entry.tool.name.as_str() {
                "sessions_spawn" => self.spawn(&call.args).await,
                _ => self.follow(ctx, &call.args).await,
            }
        })
    }
}

/// The engine's [`crate::runs::MoreTools`]: each run's sub-agent tools,
/// at its depth (a run whose agent has no `subagents` section costs no
/// store read), and its background processes (`process`, and where its
/// `exec` detaches to).
pub(crate) fn more_tools(ledger: Ledger) -> crate::runs::MoreTools {
    Arc::new(move |run: Run| {
        let ledger = ledger.clone();
        Box::pin(async move {
            let mut more = crate::runs::More::default();
            if let Some(section) = section_of(&ledger, &run) {
                let depth = depth_of(&ledger, &run.id).await;
                more.tools
                    .extend(spawn_tools(&ledger, &run, depth, section));
            }
            if let Some((tool, background)) = super::process::for_run(&ledger, &run) {
                more.tools.push(tool);
                more.background = Some(background);
            }
            more
        })
    })
}

/// The depth of a run: 0 for a top-level run, its task's for a child.
async fn depth_of(ledger: &Ledger, child: &RunId) -> u32 {
    ledger
        .engine()
        .store()
        .task_of_child_run(child)
        .await
        .ok()
        .flatten()
        .map_or(0, |t| t.depth)
}
