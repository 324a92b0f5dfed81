//! The artifacts a run leaves and how long they stay. A core `write` or
//! `edit` gives a `file` artifact (the new content) and a `diff` artifact
//! (unified, against the content before), announced in the run's events
//! ([`RunFiles`]); a shell `exec` whose output was over its result's cap
//! gives a `log` artifact with the whole output, redacted like a
//! trajectory, its id in the result as `logArtifact` (in an environment's
//! runs, every command's output is kept so). Every run ends with
//! a `trajectory` artifact: its events (nested calls included, `raw`
//! payloads left out) as JSON, the secrets the gateway knows (the
//! providers' keys) redacted before it is stored, listed in the run's
//! `RunResult.artifacts` (after the tools' artifacts, the first
//! `MAX_RESULT_ARTIFACTS` of them) and announced by `artifact.created` on the
//! session (not in the run's own log, which ends with its terminal
//! event). Artifacts
//! expire after `RunLimits::artifact_max_age`; a background job purges
//! expired ones (files included), which then answer `not_found`.

use std::time::Duration;
use talon_protocol::gateway::bounded::{ArtifactId, RunId, SessionId};

use talon_protocol::gateway::{ArtifactSummary, ArtifactType, Run};
use talon_protocol::{Event, EventData};
use talon_runtime::RunEmitter;
use talon_runtime::changes::{CommandLog, FileChange, ToolOutputs};
use talon_store::{EventFilter, MAX_PAGE, NewArtifact};
use talon_tools::{BoxFuture, RunContext};

use super::{Engine, new_id};

/// The most artifacts a run's tools made that its `RunResult` lists.
const MAX_RESULT_ARTIFACTS: u32 = 100;
/// The largest trajectory stored; a longer run's is cut there, saying so.
const MAX_TRAJECTORY_BYTES: usize = 16 << 20;
/// The longest wait between two purges.
const MAX_PURGE_INTERVAL: Duration = Duration::from_secs(60);
/// The shortest.
const MIN_PURGE_INTERVAL: Duration = Duration::from_millis(100);
pub(crate) use talon_tools::redact::redact_text as redact;

use talon_wire::content::mime_of;

/// A unified diff of a file's change (`/dev/null` for a new file).
pub(crate) fn unified_diff(path: &str, before: Option<&[u8]>, after: &[u8]) -> String {
    let old = before.map(String::from_utf8_lossy).unwrap_or_default();
    let new = String::from_utf8_lossy(after);
    let from = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string()
}

/// The gateway's taker of a run's file changes: a `file` artifact with
/// the new content and a `diff` artifact, each announced in the run's
/// events.
pub(crate) struct RunFiles {
    pub engine: Engine,
    pub events: RunEmitter,
    /// Redacted from what it stores: the gateway's secrets and the run's
    /// bound ones.
    pub secrets: Vec<String>,
    /// Which commands' output becomes a `log` artifact (every one in an
    /// environment's runs).
    pub logs: talon_runtime::KeepLog,
    /// The `file` artifact of each path the run changed: a later change
    /// replaces its content (`artifact.updated`) rather than adding one.
    pub files: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl RunFiles {
    /// The run's `file` artifact of `path`, made or replaced.
    async fn file_artifact(&self, ctx: &RunContext, path: &str, mime: &str, content: Vec<u8>) {
        let known = self
            .files
            .lock()
            .ok()
            .and_then(|files| files.get(path).cloned());
        if let Some(id) = known {
            match self
                .engine
                .inner
                .store
                .replace_artifact(&id, mime, content)
                .await
            {
                Ok(summary) => self.events.emit(EventData::ArtifactUpdated(summary)),
                Err(error) => {
                    tracing::error!(%error, run = %ctx.scope.run_id, "an artifact was not replaced");
                }
            }
            return;
        }
        if let Some(summary) = self
            .engine
            .put(
                ctx.scope.run_id.as_str(),
                ctx.scope.session_id.as_str(),
                ArtifactType::File,
                path.to_owned(),
                mime,
                content,
            )
            .await
        {
            if let Ok(mut files) = self.files.lock() {
                files.insert(path.to_owned(), summary.id.to_string());
            }
            self.events.emit(EventData::ArtifactCreated(summary));
        }
    }
}

impl ToolOutputs for RunFiles {
    fn keep_logs(&self) -> talon_runtime::KeepLog {
        self.logs
    }

    fn command_log<'a>(
        &'a self,
        ctx: &'a RunContext,
        log: CommandLog,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let text = String::from_utf8_lossy(&log.output);
            let text = redact(&text, &self.secrets);
            let mut shown: String = log.command.chars().take(80).collect();
            if shown.len() < log.command.len() {
                shown.push_str("...");
            }
            let summary = self
                .engine
                .put(
                    ctx.scope.run_id.as_str(),
                    ctx.scope.session_id.as_str(),
                    ArtifactType::Log,
                    format!("exec: {}", redact(&shown, &self.secrets)),
                    "text/plain; charset=utf-8",
                    text.into_bytes(),
                )
                .await?;
            let id = summary.id.to_string();
            self.events.emit(EventData::ArtifactCreated(summary));
            Some(id)
        })
    }

    fn file_changed<'a>(&'a self, ctx: &'a RunContext, change: FileChange) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let diff = unified_diff(&change.path, change.before.as_deref(), &change.after);
            let diff = redact(&diff, &self.secrets);
            let file_mime = mime_of(&change.path, &change.after);
            let after = match std::str::from_utf8(&change.after) {
                Ok(text) if self.secrets.iter().any(|s| text.contains(s.as_str())) => {
                    redact(text, &self.secrets).into_bytes()
                }
                _ => change.after,
            };
            self.file_artifact(ctx, &change.path, file_mime, after)
                .await;
            // Each change's diff is an artifact of its own.
            if let Some(summary) = self
                .engine
                .put(
                    ctx.scope.run_id.as_str(),
                    ctx.scope.session_id.as_str(),
                    ArtifactType::Diff,
                    format!("{} ({})", change.path, change.tool),
                    "text/x-diff",
                    diff.into_bytes(),
                )
                .await
            {
                self.events.emit(EventData::ArtifactCreated(summary));
            }
        })
    }
}

impl Engine {
    /// Stores one artifact of a run; its summary, or `None` (logged) when
    /// it could not be stored.
    pub(super) async fn put(
        &self,
        run_id: &str,
        session_id: &str,
        kind: ArtifactType,
        title: String,
        mime: &str,
        content: Vec<u8>,
    ) -> Option<ArtifactSummary> {
        let now = artifact_time(self.inner.store.now_ms());
        let expires = self
            .inner
            .limits
            .artifact_max_age
            .map(|age| now + age.as_millis() as u64);
        let summary = ArtifactSummary {
            id: ArtifactId::new(new_id("art").ok()?),
            run_id: Some(RunId::new(run_id.to_owned())),
            session_id: (!session_id.is_empty())
                .then(|| session_id.to_owned())
                .map(SessionId::new),
            kind,
            title: Some(title),
            mime_type: Some(mime.to_owned()),
            size_bytes: None,
            created_at: now,
            expires_at: expires,
        };
        match self
            .inner
            .store
            .put_artifact(NewArtifact { summary, content })
            .await
        {
            Ok(summary) => Some(summary),
            Err(error) => {
                tracing::error!(%error, run = %run_id, "an artifact was not stored");
                None
            }
        }
    }

    /// Stores an artifact of `run` after its end and announces it on the
    /// session (the run's own log ends with its terminal event).
    pub(super) async fn after_run(
        &self,
        run: &Run,
        kind: ArtifactType,
        title: String,
        mime: &str,
        content: Vec<u8>,
    ) -> Option<ArtifactSummary> {
        let summary = self
            .put(
                run.id.as_str(),
                run.session_id
                    .as_ref()
                    .map(SessionId::as_str)
                    .unwrap_or_default(),
                kind,
                title,
                mime,
                content,
            )
            .await?;
        let mut event = self.run_event(run, EventData::ArtifactCreated(summary.clone()));
        event.run_id = None;
        if let Err(error) = self.append(vec![event]).await {
            tracing::error!(%error, run = %run.id, "artifact.created was not stored");
        }
        Some(summary)
    }

    /// The environment's workspace changes since its baseline, after a
    /// run in it: a `diff` artifact and the same changes as a `patch` (a
    /// one-patch git-format series; none when nothing changed) announced
    /// with `git.diff`, for a checkout `git.branch`, and the workspace
    /// itself as a `workspace` artifact; all on the session, as
    /// `artifact.created` is.
    pub(super) async fn workspace_diff(
        &self,
        run: &Run,
        environment: &talon_protocol::gateway::Environment,
        bound: &[String],
    ) -> Option<ArtifactSummary> {
        let provider = self.providers().get(environment.provider.as_str()).ok()?;
        let dir = talon_environments::dir_of(&self.state_dir(), environment.id.as_str());
        let collected = match provider.collect(&dir).await {
            Ok(collected) => collected,
            Err(error) => {
                tracing::warn!(run = %run.id, error = %error.message, "an environment's changes could not be collected");
                return None;
            }
        };
        let mut secrets = self.inner.secrets.clone();
        secrets.extend(bound.iter().cloned());
        let redactor = talon_tools::redact::Redactor::new(&secrets);
        let session_event = |data: EventData| {
            let mut event = self.run_event(run, data);
            event.run_id = None;
            event
        };
        let mut announced = Vec::new();
        if let Some(branch) = collected.branch {
            announced.push(session_event(EventData::GitBranch(branch)));
        }
        let mut artifact = None;
        if let (Some(diff), Some(mut summary)) = (collected.diff, collected.summary) {
            let diff = redactor.text(&diff);
            let patch = talon_environments::snapshot::patch(
                &diff,
                &format!(
                    "Changes of run {} in environment {}",
                    run.id, environment.id
                ),
                self.inner.store.now_ms(),
            );
            artifact = self
                .after_run(
                    run,
                    ArtifactType::Diff,
                    format!("Workspace of environment {}", environment.id),
                    "text/x-diff",
                    diff.into_bytes(),
                )
                .await;
            self.after_run(
                run,
                ArtifactType::Patch,
                format!("Patch of run {} (git am)", run.id),
                "application/mbox",
                patch.into_bytes(),
            )
            .await;
            summary.artifact_id = artifact.as_ref().map(|a| a.id.clone());
            summary.files = summary.files.iter().map(|f| redactor.text(f)).collect();
            announced.push(session_event(EventData::GitDiff(summary)));
        }
        self.workspace_snapshot(run, environment, &secrets).await;
        if !announced.is_empty()
            && let Err(error) = self.append(announced).await
        {
            tracing::error!(%error, run = %run.id, "git.branch and git.diff were not stored");
        }
        artifact
    }

    /// The environment's workspace at the end of `run` as a `workspace`
    /// artifact (a `.tar.gz`, text files redacted); none, logged, when the
    /// workspace is over the snapshot's caps.
    async fn workspace_snapshot(
        &self,
        run: &Run,
        environment: &talon_protocol::gateway::Environment,
        secrets: &[String],
    ) {
        let Some(workspace) = environment.workspace.clone() else {
            return;
        };
        let secrets = secrets.to_vec();
        let made = tokio::task::spawn_blocking(move || {
            let redactor = talon_tools::redact::Redactor::new(&secrets);
            let rewrite = |bytes: &[u8]| -> Option<Vec<u8>> {
                let text = std::str::from_utf8(bytes).ok()?;
                let redacted = redactor.text(text);
                (redacted != text).then(|| redacted.into_bytes())
            };
            talon_environments::snapshot::workspace(
                std::path::Path::new(&workspace),
                talon_environments::snapshot::SnapshotCaps::default(),
                &rewrite,
            )
        })
        .await;
        match made {
            Ok(Ok(snapshot)) => {
                self.after_run(
                    run,
                    ArtifactType::Workspace,
                    format!(
                        "Workspace of environment {} after run {} ({} files)",
                        environment.id, run.id, snapshot.files
                    ),
                    "application/gzip",
                    snapshot.bytes,
                )
                .await;
            }
            Ok(Err(error)) => {
                tracing::warn!(run = %run.id, environment = %environment.id, %error, "no workspace artifact");
            }
            Err(error) => {
                tracing::error!(run = %run.id, %error, "the workspace snapshot failed");
            }
        }
    }

    /// The artifacts `run`'s tools made (files, diffs, logs), in the order
    /// they were made ([`artifact_time`]),
    /// at most [`MAX_RESULT_ARTIFACTS`]: the head of its `RunResult.artifacts`
    /// (`artifacts.list` pages through all of them).
    pub(super) async fn made(&self, run: &Run) -> Vec<ArtifactSummary> {
        let now = self.inner.store.now_ms();
        match self
            .inner
            .store
            .artifacts(
                (Some(run.id.as_str()), None),
                &talon_store::Owner::default(),
                None,
                MAX_RESULT_ARTIFACTS,
                now,
            )
            .await
        {
            Ok(made) => made,
            Err(error) => {
                tracing::error!(%error, run = %run.id, "a run's artifacts could not be listed for its result");
                Vec::new()
            }
        }
    }

    /// Stores `run`'s trajectory (once its events are durable) and
    /// announces it; its summary, or `None` when it could not be stored.
    /// `ending` (its terminal event) is not stored yet: it is stored with
    /// the run's end, whose result lists the trajectory, so it comes last
    /// in the trajectory without its id.
    pub(super) async fn trajectory(&self, run: &Run, ending: &[Event]) -> Option<ArtifactSummary> {
        let store = &self.inner.store;
        let filter = EventFilter {
            run_id: Some(run.id.clone().into_string()),
            ..EventFilter::default()
        };
        // The envelopes go in as the store holds them: read as text, never
        // parsed and written again.
        let mut events = Vec::new();
        let mut size = 0;
        let mut truncated = false;
        let mut after = None;
        'pages: loop {
            let page = match store.after_json(after, &filter, MAX_PAGE).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(%error, run = %run.id, "a run's events could not be read for its trajectory");
                    return None;
                }
            };
            let full = page.len() as u32 == MAX_PAGE;
            after = page.last().map(|e| e.id);
            for event in page {
                size += event.json.len() + 1;
                if size > MAX_TRAJECTORY_BYTES {
                    truncated = true;
                    break 'pages;
                }
                match serde_json::value::RawValue::from_string(event.json) {
                    Ok(json) => events.push(json),
                    Err(error) => {
                        tracing::error!(%error, run = %run.id, event = event.id, "a stored event is not JSON; left out of the trajectory");
                    }
                }
            }
            if !full {
                break;
            }
        }
        for event in ending {
            if truncated {
                break;
            }
            let Ok(mut value) = serde_json::to_value(event) else {
                continue;
            };
            if let Some(fields) = value.as_object_mut() {
                fields.remove("id");
            }
            let Ok(json) = serde_json::value::to_raw_value(&value) else {
                continue;
            };
            size += json.get().len() + 1;
            if size > MAX_TRAJECTORY_BYTES {
                truncated = true;
                break;
            }
            events.push(json);
        }
        let document = Trajectory {
            agent_id: &run.agent_id,
            events: &events,
            run_id: &run.id,
            session_id: &run.session_id,
            status: run.status,
            truncated,
        };
        let text = match serde_json::to_string(&document) {
            Ok(text) => redact(&text, &self.inner.secrets),
            Err(error) => {
                tracing::error!(%error, run = %run.id, "a run's trajectory could not be written");
                return None;
            }
        };
        self.after_run(
            run,
            ArtifactType::Trajectory,
            format!("Trajectory of run {}", run.id),
            "application/json",
            text.into_bytes(),
        )
        .await
    }

    /// Purges expired artifacts until the engine is dropped.
    pub(super) async fn purge_artifacts(self) {
        let Some(age) = self.inner.limits.artifact_max_age else {
            return;
        };
        let every = (age / 2).clamp(MIN_PURGE_INTERVAL, MAX_PURGE_INTERVAL);
        self.purge_every(every, "expired artifacts", |store, now| async move {
            store.purge_artifacts(now).await
        })
        .await;
    }
}

/// A run's trajectory document: its keys in this order, each event as
/// the store holds it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Trajectory<'a> {
    agent_id: &'a talon_protocol::gateway::bounded::AgentId,
    events: &'a [Box<serde_json::value::RawValue>],
    run_id: &'a talon_protocol::gateway::bounded::RunId,
    session_id: &'a Option<talon_protocol::gateway::bounded::SessionId>,
    status: talon_protocol::gateway::RunStatus,
    truncated: bool,
}

/// The creation time of a new artifact: the clock, but always after the
/// last artifact this process made, so that the store's order (time, then
/// random id) is the order they were made (a file and its diff are made in
/// one millisecond) and a run's result and listings read alike every time.
fn artifact_time(now: u64) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}
