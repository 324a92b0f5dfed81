//! `artifacts.list` and `artifacts.get`: a run's or a session's
//! artifacts the caller may see, unexpired, a page at a time.

use talon_protocol::gateway::bounded::{RunId, SessionId};
use talon_protocol::gateway::page::limit;
use talon_protocol::gateway::params::ArtifactsListResult;
use talon_protocol::gateway::params::{ArtifactRef, ArtifactsListParams};
use talon_protocol::gateway::{ApiError, ArtifactSummary};

use super::{Api, next_page};
use crate::auth::identity::Caller;
use crate::error::api_error;

impl Api {
    /// `artifacts.list`.
    pub(super) async fn list_artifacts(
        &self,
        caller: &Caller,
        p: ArtifactsListParams,
    ) -> Result<ArtifactsListResult, ApiError> {
        let limit = limit(p.limit);
        let mut artifacts = self
            .store
            .artifacts(
                (
                    p.run_id.as_ref().map(RunId::as_str),
                    p.session_id.as_ref().map(SessionId::as_str),
                ),
                &caller.owner(),
                p.cursor.as_ref().map(|c| c.as_str()),
                limit + 1,
                self.store.now_ms(),
            )
            .await
            .map_err(api_error)?;
        let next_cursor = next_page(&mut artifacts, limit, |a| a.id.to_string());
        Ok(ArtifactsListResult {
            artifacts,
            next_cursor,
        })
    }

    /// `artifacts.get`: one the caller may see; of `p.runId` when named.
    pub(super) async fn artifact(
        &self,
        caller: &Caller,
        p: ArtifactRef,
    ) -> Result<ArtifactSummary, ApiError> {
        let artifact = crate::auth::owned::artifact_for(
            &self.store,
            caller,
            p.artifact_id.as_str(),
            self.store.now_ms(),
        )
        .await?;
        if p.run_id.is_some() && artifact.run_id != p.run_id {
            return Err(crate::auth::owned::not_found(
                "artifact",
                p.artifact_id.as_str(),
            ));
        }
        Ok(artifact)
    }
}
