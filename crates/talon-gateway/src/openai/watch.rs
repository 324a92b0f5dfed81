//! The approval rule of runs the surface starts (`gateway.openai
//! .onApproval`): an OpenAI client cannot answer an approval, so a run
//! that asks for one either waits for an answer from the SDK or the
//! dashboard up to `approvalWaitMs` and is then denied, or is denied at
//! once. The watcher follows the run's committed events until its end (a
//! node's own follower: it takes none of `maxStreams`);
//! it lives in this node, so after a restart the approval's own policy
//! deadline (`tools.approvals.timeoutMs`) applies instead.

use std::sync::Arc;

use talon_protocol::event_data::EventData;
use talon_protocol::gateway::ApprovalDecision;
use talon_protocol::gateway::params::ApprovalsRespondParams;
use talon_store::EventFilter;

use super::policy::ApprovalRule;
use crate::state::Shared;
use crate::transport::stream::{Ends, Follow};

/// The reason a denial by the rule records.
pub(super) const NO_APPROVER: &str =
    "the OpenAI-compatible endpoint has no approver (gateway.openai.onApproval)";

/// Applies the rule to the run's approvals, in the background.
pub(super) fn watch(shared: Arc<Shared>, run_id: String) {
    let rule = shared.openai.on_approval;
    tokio::spawn(async move {
        let filter = EventFilter {
            run_id: Some(run_id.clone()),
            types: vec![
                talon_protocol::events::EventType::ApprovalRequested,
                talon_protocol::events::EventType::RunCompleted,
                talon_protocol::events::EventType::RunFailed,
                talon_protocol::events::EventType::RunCancelled,
                talon_protocol::events::EventType::RunTimedOut,
            ],
            ..EventFilter::default()
        };
        let follow = Follow::start_with(&shared, filter, None, Ends::AfterTerminal, None).await;
        let mut follow = match follow {
            Ok(follow) => follow,
            Err(error) => {
                tracing::warn!(run = %run_id, %error.message, "openai: cannot watch the run's approvals");
                return;
            }
        };
        while let Some(Ok(delivery)) = follow.next().await {
            let Ok(event) = super::sse::decode(delivery.json()) else {
                continue;
            };
            let Some(EventData::ApprovalRequested(approval)) = event.typed() else {
                continue;
            };
            let shared = shared.clone();
            let deny = async move {
                let params: Result<ApprovalsRespondParams, _> =
                    serde_json::from_value(serde_json::json!({
                        "approvalId": approval.id,
                        "decision": ApprovalDecision::Deny,
                        "reason": NO_APPROVER,
                    }));
                if let Ok(params) = params
                    && let Err(error) = shared
                        .api
                        .decide_approval(crate::api::answers::Authority::Gateway, params)
                        .await
                    && error.code != talon_protocol::gateway::ErrorCode::Conflict
                {
                    tracing::warn!(%error.message, "openai: the approval rule could not deny");
                }
            };
            match rule {
                ApprovalRule::Deny => deny.await,
                ApprovalRule::Wait(wait) => {
                    tokio::spawn(async move {
                        tokio::time::sleep(wait).await;
                        deny.await;
                    });
                }
            }
        }
    });
}
