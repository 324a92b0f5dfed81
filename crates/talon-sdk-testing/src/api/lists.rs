//! The filtered, paged lists answered from memory: `artifacts.list`
//! (newest first), `approvals.list` and `questions.list` (in creation
//! order, filtered by status, run and session).

use talon_protocol::gateway::bounded::{Cursor, RunId, SessionId};
use talon_protocol::gateway::params::*;
use talon_protocol::gateway::*;

use crate::runs;
use crate::state::Shared;

/// `artifacts.list`: newest first, by run and session.
pub(crate) fn artifacts(
    shared: &Shared,
    p: ArtifactsListParams,
) -> Result<ArtifactsListResult, ApiError> {
    let mut artifacts: Vec<ArtifactSummary> = shared.read(|s| {
        s.artifacts
            .iter()
            .rev()
            .map(|a| &a.summary)
            .filter(|a| {
                p.run_id.is_none()
                    || a.run_id.as_ref().map(RunId::as_str) == p.run_id.as_ref().map(RunId::as_str)
            })
            .filter(|a| {
                p.session_id.is_none()
                    || a.session_id.as_ref().map(SessionId::as_str)
                        == p.session_id.as_ref().map(SessionId::as_str)
            })
            .cloned()
            .collect()
    });
    if let Some(cursor) = &p.cursor {
        let at = artifacts
            .iter()
            .position(|a| a.id.as_str() == cursor.as_str());
        artifacts.drain(..at.map_or(artifacts.len(), |at| at + 1));
    }
    let limit = runs::limit(p.limit);
    let more = artifacts.len() > limit;
    artifacts.truncate(limit);
    let next_cursor = more
        .then(|| artifacts.last().map(|a| a.id.clone().into()))
        .flatten();
    Ok(ArtifactsListResult {
        artifacts,
        next_cursor,
    })
}

/// `approvals.list`: in creation order, by status, run and session.
pub(crate) fn approvals(
    shared: &Shared,
    p: ApprovalsListParams,
) -> Result<ApprovalsListResult, ApiError> {
    let status = p.status.as_ref().map(wire);
    let approvals: Vec<Approval> = shared.read(|s| {
        s.approvals
            .iter()
            .filter(|a| status.is_none() || status == Some(wire(&a.status)))
            .filter(|a| p.run_id.as_ref().is_none_or(|r| *r == a.run_id))
            .filter(|a| {
                p.session_id.is_none()
                    || a.session_id.as_ref().map(SessionId::as_str)
                        == p.session_id.as_ref().map(SessionId::as_str)
            })
            .cloned()
            .collect()
    });
    let (approvals, next_cursor) = page(
        approvals,
        p.cursor.as_ref().map(|c| c.as_str()),
        p.limit,
        |a| a.id.as_str(),
    );
    Ok(ApprovalsListResult {
        approvals,
        next_cursor,
    })
}

/// `questions.list`: in creation order, by status and run.
pub(crate) fn questions(
    shared: &Shared,
    p: QuestionsListParams,
) -> Result<QuestionsListResult, ApiError> {
    let status = p.status.as_ref().map(wire);
    let questions: Vec<Question> = shared.read(|s| {
        s.questions
            .iter()
            .filter(|q| status.is_none() || status == Some(wire(&q.status)))
            .filter(|q| p.run_id.as_ref().is_none_or(|r| *r == q.run_id))
            .cloned()
            .collect()
    });
    let (questions, next_cursor) = page(
        questions,
        p.cursor.as_ref().map(|c| c.as_str()),
        p.limit,
        |q| q.id.as_str(),
    );
    Ok(QuestionsListResult {
        questions,
        next_cursor,
    })
}

/// A unit enum's wire spelling.
fn wire<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// One page of `items` (in their order) after the item whose id is
/// `cursor` (none when it is unknown), as the gateway pages in creation
/// order: the page and the next page's cursor.
fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    limit: Option<u32>,
    id: impl Fn(&T) -> &str,
) -> (Vec<T>, Option<talon_protocol::gateway::bounded::Cursor>) {
    let mut items = items;
    if let Some(cursor) = cursor {
        let at = items.iter().position(|x| id(x) == cursor);
        items.drain(..at.map_or(items.len(), |at| at + 1));
    }
    let limit = runs::limit(limit);
    let more = items.len() > limit;
    items.truncate(limit);
    let next = more
        .then(|| items.last().map(|x| Cursor::new(id(x).to_owned())))
        .flatten();
    (items, next)
}
