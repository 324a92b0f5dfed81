//! Approvals as durable resources. A call the policy (`talon_tools::approvals`)
//! sends to a person becomes an [`Approval`] in the store and an
//! `approval.requested` event; the run waits on the engine's resolution
//! watch (no thread held) until `approvals.respond` resolves it, its
//! expiry passes (resolved `expired` here), or the run ends (resolved
//! `cancelled`). Before it waits, the run's state as the turn's calls
//! started is stored, so a node that dies during the wait leaves a run
//! that resumes inside the turn: the same call finds its approval (by
//! call id with the same tool and arguments, else by tool and arguments
//! among the run's pending ones) and waits again. An approval the run has
//! acted on is used up: a later call (even one a provider gave the same
//! id) asks anew.
//!
//! The run itself reports every resolution it acts on (`approval.resolved`)
//! and, for a call that is not replay-safe, that event is durable before
//! the tool runs (the runner's start record waits for it): so an approval
//! with no `approved` resolution in the log was never acted on, and
//! resuming past it repeats nothing ([`super::resume`]).
//!
//! A decision to `approve_session` or `approve_always` is remembered:
//! later calls of the same tool (in the same session, or anywhere) are
//! approved without asking, each with a resolved approval of its own and
//! an `approval.resolved` event saying it was reused. "The same tool" is
//! the same catalog id ([`Approval::tool_key`]), never the same name: an
//! approval names its tool as the model does (`toolName`) and identifies
//! it by id (`toolId`).

use std::sync::Arc;
use talon_protocol::gateway::bounded::{ApprovalId, Subject};

use talon_protocol::EventData;
use talon_protocol::event_data::ApprovalResolvedData;
use talon_protocol::gateway::{
    Approval, ApprovalDecision as Decision, ApprovalKind, ApprovalStatus,
};
use talon_runtime::RunEmitter;
use talon_store::{PendingFilter, Store};
use talon_tools::{ApprovalDecision, Approver, BoxFuture, CatalogEntry, RunContext, ToolCall};

use super::new_id;
use super::sink::StoreSink;
use talon_tools::approvals::{Approvals, risk};

/// The decisions every tool approval offers.
const DECISIONS: [Decision; 4] = [
    Decision::ApproveOnce,
    Decision::ApproveSession,
    Decision::ApproveAlways,
    Decision::Deny,
];

/// Asks a person, through the store, about a run's calls the policy says
/// `ask` of; its `policy` gives the request its expiry.
pub(crate) struct DurableApprover {
    pub store: Store,
    pub policy: Arc<Approvals>,
    pub events: RunEmitter,
    pub sink: Arc<StoreSink>,
    /// Bumped whenever this node resolves an approval.
    pub resolved: tokio::sync::watch::Receiver<u64>,
    /// The engine, which counts the run as waiting on a person.
    pub engine: super::Engine,
    /// The approvals this run acted on (in this process): each decided one
    /// call, and a later call with the same id is another call.
    pub acted: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Asks through the store about the calls the policy sends to a person
/// (`talon_tools::PolicyGate` decides the others before it is asked).
impl Approver for DurableApprover {
    fn decide<'a>(
        &'a self,
        ctx: &'a RunContext,
        entry: &'a CatalogEntry,
        call: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            match self.ask(ctx, entry, call).await {
                Ok(decision) => decision,
                Err(error) => {
                    tracing::error!(%error, run = %ctx.scope.run_id, "an approval could not be kept");
                    ApprovalDecision::Denied(format!(
                        "{} needs approval and the request could not be stored: {error}",
                        entry.tool.name
                    ))
                }
            }
        })
    }
}

impl DurableApprover {
    async fn ask(
        &self,
        ctx: &RunContext,
        entry: &CatalogEntry,
        call: &ToolCall,
    ) -> Result<ApprovalDecision, talon_store::StoreError> {
        let run_id = &ctx.scope.run_id;
        let mine = self
            .store
            .approvals(&PendingFilter {
                run_id: Some(run_id.clone().into_string()),
                ..PendingFilter::default()
            })
            .await?;
        // A resumed run's call finds the approval it asked for before: the
        // same call (id, tool and arguments; a provider may number every
        // turn's calls alike, so an id alone is not the call), or a pending
        // request for the same tool and arguments. One this run has acted
        // on already was used up: a later call asks anew.
        let acted = self.acted.lock().map(|a| a.clone()).unwrap_or_default();
        let same = |a: &&Approval| {
            !acted.contains(a.id.as_str())
                && a.tool_key() == Some(entry.id.as_str())
                && a.arguments.as_ref() == Some(&call.args)
        };
        let earlier = mine
            .iter()
            .filter(same)
            .find(|a| a.tool_call_id.as_deref() == Some(call.call_id.as_str()))
            .or_else(|| {
                mine.iter()
                    .filter(same)
                    .find(|a| a.status == ApprovalStatus::Pending)
            });
        let (approval, fresh) = match earlier {
            Some(approval) => (approval.clone(), false),
            None => {
                if let Some(reused) = self.remembered(ctx, entry, call).await? {
                    return Ok(reused);
                }
                let approval = self.request(ctx, entry, call)?;
                // A node that dies while this waits leaves a run that
                // resumes inside this turn and finds the request.
                self.sink.keep_turn().await;
                self.store.create_approval(&approval).await?;
                self.events
                    .emit(EventData::ApprovalRequested(approval.clone()));
                (approval, true)
            }
        };
        // From here on a cancelled run resolves the request `cancelled`,
        // even one cancelled while the request is made durable: an app may
        // see it pending in the store (and cancel the run) before then.
        let mut guard = Cancelled {
            store: self.store.clone(),
            events: self.events.clone(),
            id: Some(approval.id.clone().into_string()),
            wait: self.engine.waiting_on_person(ctx.scope.run_id.as_str()),
        };
        if fresh {
            // Durable before anyone waits on it (a stopping node leaves
            // the run to the next start).
            self.sink.flush().await;
        }
        tracing::info!(
            target: "talon::run",
            run_id = %ctx.scope.run_id,
            approval_id = %approval.id,
            tool = %entry.id,
            approve = %approval.page(),
            "run waiting for approval (answer it on the dashboard at {})",
            approval.page()
        );
        let resolved = self.wait(approval).await?;
        guard.id = None;
        tracing::info!(
            target: "talon::run",
            run_id = %ctx.scope.run_id,
            approval_id = %resolved.id,
            status = ?resolved.status,
            "approval resolved"
        );
        Ok(self.act_on(entry, &resolved, false))
    }

    /// A new request for `call`.
    fn request(
        &self,
        ctx: &RunContext,
        entry: &CatalogEntry,
        call: &ToolCall,
    ) -> Result<Approval, talon_store::StoreError> {
        let id = new_id("appr").map_err(|e| talon_store::StoreError::Corrupt(e.message.clone()))?;
        let now = self.store.now_ms();
        let arguments = call.args.to_string();
        let summary = Approval::summary_of(&entry.tool.name, &arguments);
        Ok(Approval {
            id: ApprovalId::new(id),
            run_id: ctx.scope.run_id.clone(),
            session_id: (!ctx.scope.session_id.as_str().is_empty())
                .then(|| ctx.scope.session_id.clone()),
            kind: if entry.tool.owner == super::pull_request::OWNER {
                ApprovalKind::Environment
            } else {
                ApprovalKind::Tool
            },
            summary,
            tool_name: Some(entry.tool.name.clone()),
            tool_id: Some(entry.id.clone()),
            tool_call_id: Some(call.call_id.clone()),
            arguments: Some(call.args.clone()),
            environment_action: (entry.tool.owner == super::pull_request::OWNER)
                .then(|| super::pull_request::ACTION.to_owned()),
            risk: risk(entry),
            decisions: DECISIONS.to_vec(),
            expires_at: Some(now + self.policy.timeout.as_millis() as u64),
            reusable: true,
            status: ApprovalStatus::Pending,
            decision: None,
            reason: None,
            created_at: now,
            resolved_at: None,
        })
    }

    /// Approves `call` by a remembered decision, if one covers it: an
    /// `approve_always` for its tool, or an `approve_session` for its tool
    /// in this session.
    async fn remembered(
        &self,
        ctx: &RunContext,
        entry: &CatalogEntry,
        call: &ToolCall,
    ) -> Result<Option<ApprovalDecision>, talon_store::StoreError> {
        let session = Some(&ctx.scope.session_id).filter(|s| !s.as_str().is_empty());
        // A subject's `approve_always` holds within that subject.
        let subject = match session {
            Some(id) => self.store.session(id).await?.and_then(|s| s.subject),
            None => None,
        };
        let Some(rule) = self
            .store
            .remembered_approval(&entry.id, session, subject.as_ref().map(Subject::as_str))
            .await?
        else {
            return Ok(None);
        };
        let mut reused = self.request(ctx, entry, call)?;
        reused.status = ApprovalStatus::Approved;
        reused.decision = rule.decision;
        reused.reason = Some(format!("remembered from approval {}", rule.id));
        reused.resolved_at = Some(reused.created_at);
        reused.expires_at = None;
        self.store.create_approval(&reused).await?;
        Ok(Some(self.act_on(entry, &reused, true)))
    }

    /// Waits until `approval` is resolved (expiring it when its time
    /// passes), and returns it resolved.
    async fn wait(&self, approval: Approval) -> Result<Approval, talon_store::StoreError> {
        super::person::wait(&self.store, &self.resolved, approval).await
    }

    /// Reports a resolution the run acts on, and what it means for the
    /// call.
    fn act_on(&self, entry: &CatalogEntry, approval: &Approval, reused: bool) -> ApprovalDecision {
        if let Ok(mut acted) = self.acted.lock() {
            acted.insert(approval.id.to_string());
        }
        self.events
            .emit(EventData::ApprovalResolved(ApprovalResolvedData {
                approval_id: approval.id.clone(),
                status: approval.status,
                decision: approval.decision,
                reason: approval.reason.clone(),
                reused,
            }));
        let name = &entry.tool.name;
        match approval.status {
            ApprovalStatus::Approved => ApprovalDecision::Approved,
            ApprovalStatus::Denied => ApprovalDecision::Denied(match &approval.reason {
                Some(reason) => format!("the call of {name} was denied: {reason}"),
                None => format!("the call of {name} was denied"),
            }),
            ApprovalStatus::Expired => ApprovalDecision::Denied(format!(
                "the call of {name} was not made: its approval ({}) expired before anyone answered",
                approval.id
            )),
            _ => ApprovalDecision::Denied(format!(
                "the call of {name} was not made: its approval ({}) was cancelled",
                approval.id
            )),
        }
    }
}

/// Resolves a request `cancelled` when the run stops waiting for it (it
/// was cancelled or timed out): the event at once, the store behind it;
/// not when the node stops and leaves the run to its next start.
struct Cancelled {
    store: Store,
    events: RunEmitter,
    id: Option<String>,
    /// Counts the run as waiting on a person meanwhile.
    wait: super::PersonWait,
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        if self.wait.suspended() {
            // The node stops and leaves the run to its next start.
            return;
        }
        self.events
            .emit(EventData::ApprovalResolved(ApprovalResolvedData {
                approval_id: ApprovalId::new(id.clone()),
                status: ApprovalStatus::Cancelled,
                decision: None,
                reason: Some("the run stopped waiting".into()),
                reused: false,
            }));
        let store = self.store.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = cancel(&store, &id).await {
                    tracing::warn!(%error, approval = %id, "a cancelled approval was left pending");
                }
            });
        }
    }
}

/// Resolves a pending approval `cancelled`.
pub(crate) async fn cancel(store: &Store, id: &str) -> Result<(), talon_store::StoreError> {
    store
        .resolve_approval(id, |a| {
            a.status = ApprovalStatus::Cancelled;
            a.resolved_at = Some(store.now_ms());
        })
        .await
        .map(|_| ())
}
