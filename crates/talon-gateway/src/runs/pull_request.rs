//! `pull_request`: the tool a run in an environment whose settings ask for
//! pull requests (`{pullRequest: {forge, base?, branch?, draft?}}`) is
//! offered. The model calls it when its work is ready; the gateway (never
//! the sandboxed run) turns the environment's changes since the baseline
//! into a patch (secrets redacted), pushes it as the environment's branch
//! and opens or updates the pull request on the admin's forge
//! (`talon_environments::forge`). The run sees `git.pr` with its URL and
//! number, and a `pull_request` artifact.
//!
//! The call needs approval by default, and is asked as an `environment`
//! approval with the action `pull_request` (an approval policy can allow,
//! deny or ask for it like any tool: `openclaw:environment:pull_request`).

use std::sync::Arc;

use serde_json::{Value, json};
use talon_environments::forge::{PullRequestSpec, publish};
use talon_environments::{EnvironmentProvider, PullRequestTarget};
use talon_protocol::event_data::GitPrData;
use talon_protocol::gateway::{ArtifactType, Environment};
use talon_protocol::{EventData, ToolDefinition, ToolEffect, ToolSource};
use talon_runtime::RunEmitter;
use talon_tools::{
    BoxFuture, CatalogEntry, RunContext, ToolCall, ToolError, ToolErrorCode, ToolExecutor,
};

use super::{Engine, new_id};

/// The tools' owner (their ids are `openclaw:environment:<name>`).
pub(crate) const OWNER: &str = "environment";
/// The tool's name.
pub(crate) const NAME: &str = "pull_request";
/// What an `environment` approval names as its action.
pub(crate) const ACTION: &str = "pull_request";

/// The longest title and description taken.
const MAX_TITLE_CHARS: usize = 256;
const MAX_BODY_BYTES: usize = 64 << 10;

/// The tool's definition.
pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: NAME.into(),
        label: Some("Open a pull request".into()),
        description: "Propose this environment's changes: the gateway pushes them as a branch and opens \
                      (or updates) a pull request on the project's forge. Call it when the work is ready."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The pull request's title"},
                "body": {"type": "string", "description": "What changed and why"}
            },
            "required": ["title"]
        }),
        source: ToolSource::Openclaw,
        owner: OWNER.into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: true,
        effect: ToolEffect::Writes,
        replay_safe: false,
    }
}

/// Runs `pull_request` for one run in one environment.
pub(crate) struct PullRequests {
    pub engine: Engine,
    pub events: RunEmitter,
    pub environment: Environment,
    pub provider: Arc<dyn EnvironmentProvider>,
    pub target: PullRequestTarget,
    /// Redacted from the patch pushed: the gateway's and the run's secrets.
    pub secrets: Vec<String>,
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCode::InvalidArgument, message)
}

impl PullRequests {
    async fn run(&self, ctx: &RunContext, args: &Value) -> Result<Value, ToolError> {
        let title = args["title"].as_str().map(str::trim).unwrap_or_default();
        if title.is_empty() || title.chars().count() > MAX_TITLE_CHARS {
            return Err(invalid(format!(
                "pull_request: title must be 1 to {MAX_TITLE_CHARS} characters"
            )));
        }
        let body = args["body"].as_str().unwrap_or_default();
        if body.len() > MAX_BODY_BYTES {
            return Err(invalid(format!(
                "pull_request: body is over {MAX_BODY_BYTES} bytes"
            )));
        }
        let state_dir = self.engine.state_dir();
        let dir = talon_environments::dir_of(&state_dir, self.environment.id.as_str());
        let collected = self
            .provider
            .collect(&dir)
            .await
            .map_err(|e| ToolError::new(ToolErrorCode::Unavailable, e.message))?;
        let Some(diff) = collected.diff else {
            return Err(ToolError::new(
                ToolErrorCode::Failed,
                "pull_request: the workspace has no changes since it was prepared",
            ));
        };
        let redactor = talon_tools::redact::Redactor::new(&self.secrets);
        let patch = talon_environments::snapshot::patch(
            &redactor.text(&diff),
            title,
            self.engine.inner.store.now_ms(),
        );
        let scratch = state_dir
            .join("scratch")
            .join(new_id("pr").map_err(|e| ToolError::new(ToolErrorCode::Internal, e.message))?);
        tokio::fs::create_dir_all(&scratch)
            .await
            .map_err(|e| ToolError::new(ToolErrorCode::IoError, format!("pull_request: {e}")))?;
        let spec = PullRequestSpec {
            base: self.target.base.clone(),
            branch: self.target.branch.clone(),
            title: title.to_owned(),
            body: body.to_owned(),
            draft: self.target.draft,
        };
        let published = publish(
            &self.target.forge,
            &self.target.token,
            &patch,
            &spec,
            &scratch,
        )
        .await;
        let _ = tokio::fs::remove_dir_all(&scratch).await;
        let published = published.map_err(|e| {
            ToolError::new(
                ToolErrorCode::Failed,
                format!("pull_request: {}", e.message),
            )
        })?;
        self.events.emit(EventData::GitPr(GitPrData {
            url: published.url.clone(),
            number: Some(published.number),
            title: Some(title.to_owned()),
            action: published.action.to_owned(),
        }));
        let record = json!({"url": published.url, "number": published.number, "action": published.action,
                            "repository": self.target.forge.repository, "branch": spec.branch,
                            "base": spec.base, "head": published.head, "title": title});
        if let Some(summary) = self
            .engine
            .put(
                ctx.scope.run_id.as_str(),
                ctx.scope.session_id.as_str(),
                ArtifactType::PullRequest,
                format!(
                    "Pull request #{} ({})",
                    published.number, self.target.forge.repository
                ),
                "application/json",
                record.to_string().into_bytes(),
            )
            .await
        {
            self.events.emit(EventData::ArtifactCreated(summary));
        }
        Ok(record)
    }
}

impl ToolExecutor for PullRequests {
    fn execute<'a>(
        &'a self,
        ctx: &'a RunContext,
        _entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(ctx, &call.args))
    }
}
