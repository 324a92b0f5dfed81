//! `sessions.delete` and `runs.delete` over the fake's memory: the
//! session (or ended run) goes with its runs' approvals, questions and
//! artifacts; `conflict` while a run of it has not ended. The events stay
//! in the fake's log, whose cursor is an index (a deliberate difference).

use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::{ApiError, Run};

use crate::state::{State, not_found};

fn busy(kind: &str, id: &str) -> ApiError {
    talon_protocol::gateway::refuse::has_live_run(kind, id)
}

/// Removes the runs `ids` and what they made.
fn drop_runs(s: &mut State, ids: &[RunId]) {
    s.runs.retain(|id, _| !ids.contains(id));
    s.approvals.retain(|a| !ids.contains(&a.run_id));
    s.questions.retain(|q| !ids.contains(&q.run_id));
    s.artifacts
        .retain(|a| a.summary.run_id.as_ref().is_none_or(|r| !ids.contains(r)));
}

/// Deletes session `id`: the ids of its runs, deleted with it.
pub(crate) fn session(s: &mut State, id: &str) -> Result<Vec<RunId>, ApiError> {
    s.session(id)?;
    let mut runs: Vec<&Run> = s
        .runs
        .values()
        .map(|r| &r.run)
        .filter(|r| r.session_id.as_ref().map(SessionId::as_str) == Some(id))
        .collect();
    if runs.iter().any(|r| !r.status.is_terminal()) {
        return Err(busy("session", id));
    }
    runs.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<RunId> = runs.into_iter().map(|r| r.id.clone()).collect();
    drop_runs(s, &ids);
    s.sessions.retain(|x| x.id != SessionId::new(id));
    s.messages.retain(|k, _| k.as_str() != id);
    s.artifacts
        .retain(|a| a.summary.session_id.as_ref().map(SessionId::as_str) != Some(id));
    Ok(ids)
}

/// Deletes ended run `id`: the run as it was.
pub(crate) fn run(s: &mut State, id: &str) -> Result<Run, ApiError> {
    let run = s
        .runs
        .get(id)
        .ok_or_else(|| not_found("run", id))?
        .run
        .clone();
    if !run.status.is_terminal() {
        return Err(busy("run", id));
    }
    drop_runs(s, std::slice::from_ref(&run.id));
    Ok(run)
}
