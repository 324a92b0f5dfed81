//! `sessions.delete` and `runs.delete`: what the caller may see, deleted
//! with everything it made (talon-store's `deletes`), so that the
//! store's quota recovers; the node's live tail forgets what it held, so
//! no stream serves a deleted event from memory. A deleted session's
//! background processes are killed.

use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::params::{
    RunsDeleteParams, SessionActionParams, SessionsDeleteResult,
};
use talon_protocol::gateway::{ApiError, Run};

use super::Api;
use crate::auth::identity::Caller;
use crate::error::api_error;

impl Api {
    pub(super) async fn delete_session(
        &self,
        caller: &Caller,
        p: SessionActionParams,
    ) -> Result<SessionsDeleteResult, ApiError> {
        let session = self.session_of(caller, p.session_id.as_str()).await?;
        let deleted = self
            .store
            .delete_session(session.id.as_str())
            .await
            .map_err(api_error)?;
        self.forget();
        // Its background processes die with it (on this node now; on
        // another at that node's next sweep).
        self.engine
            .processes()
            .kill_session(session.id.as_str(), "killed: its session was deleted");
        tracing::info!(session = %session.id, runs = deleted.run_ids.len(), events = deleted.events, "session deleted");
        Ok(SessionsDeleteResult {
            session_id: session.id,
            deleted_run_ids: deleted.run_ids.into_iter().map(RunId::new).collect(),
        })
    }

    pub(super) async fn delete_run(
        &self,
        caller: &Caller,
        p: RunsDeleteParams,
    ) -> Result<Run, ApiError> {
        let run = crate::auth::owned::run_for(&self.store, caller, p.run_id.as_str()).await?;
        let deleted = self
            .store
            .delete_run(run.id.as_str())
            .await
            .map_err(api_error)?;
        self.forget();
        tracing::info!(run = %run.id, events = deleted.events, "run deleted");
        Ok(run)
    }

    fn forget(&self) {
        if let Some(tail) = &self.tail {
            tail.forget();
        }
    }
}
