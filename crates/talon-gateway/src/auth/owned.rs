//! Ownership: what a caller may see. A token bound to a subject sees
//! only that subject's sessions and what their runs made (runs, events,
//! approvals, questions, artifacts) and its environments; one bound to
//! agents sees only theirs. Unbound tokens see every subject's; `admin`
//! tokens see everything (they cannot be bound). A record a caller may
//! not see is `not_found`, as if it did not exist: no existence oracle.
//! Every route looks records up through here ([`run_for`],
//! [`session_for`], ...), and lists pass [`Caller::owner`] to the store.

use talon_protocol::gateway::bounded::Subject;
use talon_protocol::gateway::{ApiError, ArtifactSummary, Environment, Run, Session};
use talon_store::{Owner, Store};

use crate::auth::identity::Caller;
use crate::error::api_error;

pub(crate) fn not_found(kind: &str, id: &str) -> ApiError {
    talon_protocol::gateway::refuse::not_found(kind, id)
}

impl Caller {
    /// Whose records the caller's lists hold.
    pub(crate) fn owner(&self) -> Owner {
        if self.is_admin() {
            return Owner::default();
        }
        Owner {
            subject: self.binding.subject.clone().map(Subject::into_string),
            agents: self
                .binding
                .agents
                .as_ref()
                .map(|agents| agents.iter().map(|a| a.to_string()).collect()),
        }
    }

    /// Whether the caller may see a record of `subject` (`None`: an
    /// unbound token's) and `agent` (`None`: no agent's).
    pub(crate) fn sees(&self, subject: Option<&str>, agent: Option<&str>) -> bool {
        self.sees_subject(subject)
            && match agent {
                Some(agent) => self.may_use_agent(agent),
                None => self.is_admin() || self.binding.agents.is_none(),
            }
    }

    /// Whether the caller may see a record of `subject`, whatever its
    /// agent (an environment is no agent's).
    pub(crate) fn sees_subject(&self, subject: Option<&str>) -> bool {
        self.is_admin()
            || match &self.binding.subject {
                None => true,
                Some(mine) => subject == Some(mine.as_str()),
            }
    }

    /// Whether the caller may see, run and read `agent`.
    pub(crate) fn may_use_agent(&self, agent: &str) -> bool {
        self.is_admin()
            || self
                .binding
                .agents
                .as_ref()
                .is_none_or(|allowed| allowed.iter().any(|a| a.as_str() == agent))
    }

    /// Whose the caller's streams are, for their caps.
    pub(crate) fn holder(&self) -> crate::limits::Holder<'_> {
        crate::limits::Holder {
            token: &self.token_id,
            subject: self.subject(),
        }
    }

    /// The subject whose session keys the caller names (`None`: those of
    /// no subject), and that what it creates belongs to.
    pub(crate) fn subject(&self) -> Option<&str> {
        self.binding.subject.as_ref().map(Subject::as_str)
    }
}

/// `id`'s run, if the caller may see it.
pub(crate) async fn run_for(store: &Store, caller: &Caller, id: &str) -> Result<Run, ApiError> {
    store
        .run(&talon_protocol::gateway::bounded::RunId::new(id))
        .await
        .map_err(api_error)?
        .filter(|run| {
            caller.sees(
                run.subject.as_ref().map(Subject::as_str),
                Some(run.agent_id.as_str()),
            )
        })
        .ok_or_else(|| not_found("run", id))
}

/// Whether the caller may see what run `id` made (an approval, a
/// question): an unrestricted caller sees it even when the run is gone.
pub(crate) async fn sees_run_of(
    store: &Store,
    caller: &Caller,
    id: &str,
) -> Result<bool, ApiError> {
    if caller.owner() == Owner::default() {
        return Ok(true);
    }
    Ok(run_for(store, caller, id).await.is_ok())
}

/// `id`'s session, if the caller may see it.
pub(crate) async fn session_for(
    store: &Store,
    caller: &Caller,
    id: &str,
) -> Result<Session, ApiError> {
    store
        .session(&talon_protocol::gateway::bounded::SessionId::new(id))
        .await
        .map_err(api_error)?
        .filter(|s| {
            caller.sees(
                s.subject.as_ref().map(Subject::as_str),
                Some(s.agent_id.as_str()),
            )
        })
        .ok_or_else(|| not_found("session", id))
}

/// Whether the caller may see `artifact`: its run's, or (made outside a
/// run) its session's; one of neither is an unrestricted caller's only.
pub(crate) async fn sees_artifact(
    store: &Store,
    caller: &Caller,
    artifact: &ArtifactSummary,
) -> Result<bool, ApiError> {
    if caller.owner() == Owner::default() {
        return Ok(true);
    }
    if let Some(run) = &artifact.run_id {
        return sees_run_of(store, caller, run.as_str()).await;
    }
    if let Some(session) = &artifact.session_id {
        return Ok(session_for(store, caller, session.as_str()).await.is_ok());
    }
    Ok(false)
}

/// `id`'s artifact (unexpired at `now`), if the caller may see it.
pub(crate) async fn artifact_for(
    store: &Store,
    caller: &Caller,
    id: &str,
    now: u64,
) -> Result<ArtifactSummary, ApiError> {
    let artifact = store
        .artifact(id, now)
        .await
        .map_err(api_error)?
        .ok_or_else(|| not_found("artifact", id))?;
    if sees_artifact(store, caller, &artifact).await? {
        Ok(artifact)
    } else {
        Err(not_found("artifact", id))
    }
}

/// `id`'s environment, if the caller may see it.
pub(crate) async fn environment_for(
    store: &Store,
    caller: &Caller,
    id: &str,
) -> Result<Environment, ApiError> {
    store
        .environment::<Environment>(id)
        .await
        .map_err(api_error)?
        .filter(|e| caller.sees_subject(e.subject.as_ref().map(Subject::as_str)))
        .ok_or_else(|| not_found("environment", id))
}
