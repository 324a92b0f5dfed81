//! The approval policy for runs that cannot ask anyone: approve every call
//! that needs approval, or deny every one. Calls that need no approval
//! (read-only core tools, most plugin tools) never reach an approver; the
//! runner's gate decides that, not this module.

use talon_tools::{ApprovalDecision, Approver, BoxFuture, CatalogEntry, RunContext, ToolCall};

/// An approver that answers by policy: approve everything or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyApprover {
    /// Approve every call.
    AllowAll,
    /// Deny every call that needs approval.
    DenyAll,
}

impl Approver for PolicyApprover {
    fn decide<'a>(
        &'a self,
        _: &'a RunContext,
        entry: &'a CatalogEntry,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, ApprovalDecision> {
        let decision = match self {
            Self::AllowAll => ApprovalDecision::Approved,
            Self::DenyAll => ApprovalDecision::Denied(format!(
                "{} needs approval and this run cannot ask (denied by policy)",
                entry.id
            )),
        };
        Box::pin(async move { decision })
    }
}
