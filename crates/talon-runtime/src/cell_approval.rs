//! The `exec` hook every Code Mode run registers: a cell goes through the
//! run's approval policy (`tools.approvals` rules with `toolKind:
//! "code_mode_exec"`) as the tool [`talon_tools::cell_entry`], before it
//! is checked and run. A rule that allows it (or none) lets it run; one
//! that denies it blocks it with the policy's reason; one that asks waits
//! for a person through the run's approver, like a tool call (its
//! `approval.requested` names `exec` and the cell's code). The hook sees
//! `toolKind: "code_mode_exec"`, which is how a policy tells a cell from
//! the shell `exec` that shares its name.

use std::sync::Arc;

use talon_codemode::{ExecHook, ExecHookEvent};
use talon_tools::{
    ApprovalDecision, Approver, BoxFuture, Caller, CatalogEntry, HookDecision, RunContext,
    ToolCall, cell_entry,
};

/// Asks the run's approver about each cell.
pub(crate) struct CellApproval {
    approver: Arc<dyn Approver>,
    entry: CatalogEntry,
}

impl CellApproval {
    /// A hook asking `approver`.
    pub(crate) fn new(approver: Arc<dyn Approver>) -> Self {
        Self {
            approver,
            entry: cell_entry(),
        }
    }
}

impl ExecHook for CellApproval {
    fn before_exec<'a>(
        &'a self,
        ctx: &'a RunContext,
        event: &'a ExecHookEvent,
    ) -> BoxFuture<'a, HookDecision> {
        Box::pin(async move {
            if event.tool_kind != "code_mode_exec" || !self.approver.needs(&self.entry) {
                return HookDecision::Continue(event.params.clone());
            }
            let call = ToolCall {
                call_id: event.tool_call_id.clone(),
                id: self.entry.id.clone(),
                args: event.params.clone(),
                caller: Caller::Direct,
            };
            match self.approver.decide(ctx, &self.entry, &call).await {
                ApprovalDecision::Approved => HookDecision::Continue(event.params.clone()),
                ApprovalDecision::Denied(reason) => HookDecision::Block(reason),
            }
        })
    }
}
