//! Waiting on a person: the one loop a run uses to wait for an approval
//! or a question to be resolved. It reads the stored request, returns it
//! once it is no longer pending, expires it itself (compare-and-set, so a
//! late answer and the expiry cannot both win) at its deadline, and
//! otherwise sleeps on this node's resolution watch, or at most [`POLL`]
//! so that an answer given through another node is seen.

use std::future::Future;
use std::time::Duration;

use talon_protocol::gateway::{Approval, ApprovalStatus, Question, QuestionStatus};
use talon_store::{Resolution, Store, StoreError};

/// How often a waiting run looks for an answer given on another node.
pub(super) const POLL: Duration = Duration::from_secs(1);

/// A request for a person: its identity, state and deadline, and how the
/// store reads and expires it.
pub(super) trait PersonRequest: Clone + Send + Sync + Sized {
    fn id(&self) -> &str;
    fn pending(&self) -> bool;
    fn expires_at(&self) -> Option<u64>;
    fn read(
        store: &Store,
        id: &str,
    ) -> impl Future<Output = Result<Option<Self>, StoreError>> + Send;
    /// Resolves it expired, unless something resolved it first; returns
    /// the winner.
    fn expire(store: &Store, id: &str) -> impl Future<Output = Result<Self, StoreError>> + Send;
}

impl PersonRequest for Approval {
    fn id(&self) -> &str {
        self.id.as_str()
    }
    fn pending(&self) -> bool {
        self.status == ApprovalStatus::Pending
    }
    fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }
    async fn read(store: &Store, id: &str) -> Result<Option<Self>, StoreError> {
        store.approval(id).await
    }
    async fn expire(store: &Store, id: &str) -> Result<Self, StoreError> {
        let outcome = store
            .resolve_approval(id, |a| {
                a.status = ApprovalStatus::Expired;
                a.resolved_at = Some(store.now_ms());
            })
            .await?;
        Ok(match outcome {
            Resolution::Resolved(a) | Resolution::AlreadyResolved(a) => a,
        })
    }
}

impl PersonRequest for Question {
    fn id(&self) -> &str {
        self.id.as_str()
    }
    fn pending(&self) -> bool {
        self.status == QuestionStatus::Pending
    }
    fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }
    async fn read(store: &Store, id: &str) -> Result<Option<Self>, StoreError> {
        store.question(id).await
    }
    async fn expire(store: &Store, id: &str) -> Result<Self, StoreError> {
        let outcome = store
            .resolve_question(id, |q| {
                q.status = QuestionStatus::Expired;
                q.answered_at = Some(store.now_ms());
            })
            .await?;
        Ok(match outcome {
            Resolution::Resolved(q) | Resolution::AlreadyResolved(q) => q,
        })
    }
}

/// Waits until `request` is resolved (or expires), and returns it as
/// resolved. `resolved` ticks when this node resolves any request.
pub(super) async fn wait<R: PersonRequest>(
    store: &Store,
    resolved: &tokio::sync::watch::Receiver<u64>,
    request: R,
) -> Result<R, StoreError> {
    let mut resolved = resolved.clone();
    let expires = request.expires_at();
    loop {
        resolved.borrow_and_update();
        let current = R::read(store, request.id())
            .await?
            .unwrap_or_else(|| request.clone());
        if !current.pending() {
            return Ok(current);
        }
        let now = store.now_ms();
        if let Some(at) = expires
            && now >= at
        {
            return R::expire(store, request.id()).await;
        }
        let until_expiry = expires.map_or(POLL, |at| Duration::from_millis(at - now));
        tokio::select! {
            _ = resolved.changed() => {}
            () = tokio::time::sleep(POLL.min(until_expiry)) => {}
        }
    }
}

/// Resolves every request of `run_id` still pending as cancelled: a run
/// that ended waits on nobody. Called before the run's end is stored, so
/// a client that sees the end (`runs.wait`) never finds its requests
/// pending (the waits' drop guards resolve them too, but race with it).
pub(super) async fn close_requests(store: &Store, run_id: &str) {
    let pending = talon_store::PendingFilter {
        status: Some("pending".into()),
        run_id: Some(run_id.to_owned()),
        session_id: None,
        owner: talon_store::Owner::default(),
        page: None,
    };
    let now = store.now_ms();
    match store.approvals(&pending).await {
        Ok(approvals) => {
            for approval in approvals {
                let closed = store
                    .resolve_approval(approval.id.as_str(), |a| {
                        a.status = ApprovalStatus::Cancelled;
                        a.reason = Some("the run ended".into());
                        a.resolved_at = Some(now);
                    })
                    .await;
                if let Err(error) = closed {
                    tracing::warn!(%error, approval = %approval.id, "an ended run's approval was left pending");
                }
            }
        }
        Err(error) => {
            tracing::warn!(%error, run = %run_id, "an ended run's approvals were not read")
        }
    }
    match store.questions(&pending).await {
        Ok(questions) => {
            for question in questions {
                let closed = store
                    .resolve_question(question.id.as_str(), |q| {
                        q.status = QuestionStatus::Cancelled;
                        q.answered_at = Some(now);
                    })
                    .await;
                if let Err(error) = closed {
                    tracing::warn!(%error, question = %question.id, "an ended run's question was left pending");
                }
            }
        }
        Err(error) => {
            tracing::warn!(%error, run = %run_id, "an ended run's questions were not read")
        }
    }
}
