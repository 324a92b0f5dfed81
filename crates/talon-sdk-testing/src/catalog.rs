//! The methods that answer from what the test set or the runs asked:
//! `approvals.respond` and `questions.respond` (the first answer wins,
//! the others get `conflict` with the winner; a question's answer is
//! checked against its choices first), `tools.invoke` (the result the
//! test set for the tool), and `environments.create`/`delete` (the
//! `local` provider, `ready` at once).

use serde_json::json;
use talon_protocol::gateway::bounded::{EnvironmentId, ProviderId};
use talon_protocol::gateway::params::{
    ApprovalsRespondParams, EnvironmentsCreateParams, EnvironmentsDeleteParams,
    QuestionsRespondParams, ToolsInvokeParams, ToolsInvokeResult,
};
use talon_protocol::gateway::{
    ApiError, Approval, ApprovalDecision, ApprovalStatus, Environment, EnvironmentCapabilities,
    EnvironmentStatus, Question, QuestionStatus,
};

use super::state::{FirstCall, Shared, hash_of, not_found};

use talon_protocol::gateway::caps::MAX_TOOL_REF_BYTES as MAX_TOOL_BYTES;

pub(crate) fn respond_approval(
    shared: &Shared,
    p: ApprovalsRespondParams,
) -> Result<Approval, ApiError> {
    shared.write(|s| {
        let approval = s
            .approvals
            .iter_mut()
            .find(|a| a.id == p.approval_id)
            .ok_or_else(|| not_found("approval", p.approval_id.as_str()))?;
        approval.offers(p.decision)?;
        if approval.status != ApprovalStatus::Pending {
            return Err(
                talon_protocol::gateway::refuse::approval_resolved().with_details(
                    talon_protocol::gateway::ErrorDetails {
                        approval: Some(Box::new(approval.clone())),
                        ..Default::default()
                    },
                ),
            );
        }
        approval.status = if p.decision == ApprovalDecision::Deny {
            ApprovalStatus::Denied
        } else {
            ApprovalStatus::Approved
        };
        approval.decision = Some(p.decision);
        approval.reason = p.reason.map(Into::into);
        approval.resolved_at = Some(s.clock.now_ms());
        Ok(approval.clone())
    })
}

pub(crate) fn answer_question(
    shared: &Shared,
    p: QuestionsRespondParams,
) -> Result<Question, ApiError> {
    shared.write(|s| {
        let question = s
            .questions
            .iter_mut()
            .find(|q| q.id == p.question_id)
            .ok_or_else(|| not_found("question", p.question_id.as_str()))?;
        if question.status == QuestionStatus::Pending
            && let Some(choices) = &question.choices
            && !p
                .answer
                .as_str()
                .is_some_and(|a| choices.iter().any(|c| c == a))
        {
            let errors = vec![format!("the answer must be one of {choices:?}")];
            return Err(
                talon_protocol::gateway::refuse::answer_unfit(&errors.join("; ")).with_details(
                    talon_protocol::gateway::ErrorDetails {
                        errors,
                        ..Default::default()
                    },
                ),
            );
        }
        if question.status != QuestionStatus::Pending {
            return Err(
                talon_protocol::gateway::refuse::question_answered().with_details(
                    talon_protocol::gateway::ErrorDetails {
                        question: Some(Box::new(question.clone())),
                        ..Default::default()
                    },
                ),
            );
        }
        question.status = QuestionStatus::Answered;
        question.answer = Some(p.answer);
        question.answered_at = Some(s.clock.now_ms());
        Ok(question.clone())
    })
}

pub(crate) fn invoke(shared: &Shared, p: ToolsInvokeParams) -> Result<ToolsInvokeResult, ApiError> {
    if p.tool.as_str().trim().is_empty() || p.tool.as_str().len() > MAX_TOOL_BYTES {
        return Err(talon_protocol::gateway::refuse::tool_ref_invalid(
            MAX_TOOL_BYTES as u64,
        ));
    }
    if !matches!(
        p.arguments,
        serde_json::Value::Null | serde_json::Value::Object(_)
    ) {
        return Err(talon_protocol::gateway::refuse::arguments_not_object());
    }
    let hash = {
        let mut keyless = p.clone();
        keyless.idempotency_key = None;
        hash_of("tools.invoke", &keyless)
    };
    shared.write(|s| {
        if let Some(key) = &p.idempotency_key
            && let Some(first) = s.idempotency.get(key.as_str())
        {
            if first.hash != hash {
                return Err(talon_protocol::gateway::refuse::idempotency_reused(
                    key.as_str(),
                ));
            }
            return Ok(ToolsInvokeResult {
                result: first.answer.clone(),
            });
        }
        // The session is the one the gateway would run the call on.
        s.resolve_session(p.session_key.as_str(), None)?;
        let name = s
            .tools
            .iter()
            .find(|t| t.id == p.tool.as_str())
            .map_or_else(|| p.tool.to_string(), |t| t.name.clone());
        let result = s
            .invoke_results
            .get(p.tool.as_str())
            .or_else(|| s.invoke_results.get(&name))
            .cloned()
            .ok_or_else(|| talon_protocol::gateway::refuse::no_direct_tool(p.tool.as_str()))?;
        if let Some(key) = &p.idempotency_key {
            s.idempotency.insert(
                key.to_string(),
                FirstCall {
                    hash: hash.clone(),
                    answer: result.clone(),
                },
            );
        }
        Ok(ToolsInvokeResult { result })
    })
}

fn unknown_provider(id: &str) -> ApiError {
    talon_protocol::gateway::refuse::no_environment_provider(id, "[\"local\"]").with_details(
        talon_protocol::gateway::ErrorDetails {
            providers: vec!["local".to_owned()],
            ..Default::default()
        },
    )
}

pub(crate) fn create_environment(
    shared: &Shared,
    p: EnvironmentsCreateParams,
) -> Result<Environment, ApiError> {
    if p.provider != ProviderId::new("local") {
        return Err(unknown_provider(p.provider.as_str()));
    }
    let settings = p.settings.clone().unwrap_or_else(|| json!({}));
    if !settings.is_object() {
        return Err(talon_protocol::gateway::refuse::settings_not_object());
    }
    shared.write(|s| {
        let id = match &p.idempotency_key {
            Some(key) => {
                let id = format!("env_{}", &hash_of("environments.create", key)[..24]);
                if let Some(first) = s.environments.iter().find(|e| e.id.as_str() == id) {
                    return if first.provider == p.provider
                        && first.settings.as_ref() == Some(&settings)
                    {
                        Ok(first.clone())
                    } else {
                        Err(talon_protocol::gateway::refuse::idempotency_reused(
                            key.as_str(),
                        ))
                    };
                }
                id
            }
            None => s.new_id("env"),
        };
        let environment = Environment {
            subject: None,
            workspace: Some(format!("/fake-gateway/environments/{id}/workspace")),
            id: EnvironmentId::new(id),
            provider: p.provider.clone(),
            status: EnvironmentStatus::Ready,
            capabilities: EnvironmentCapabilities::local(),
            created_at: Some(s.now_ms()),
            settings: Some(settings.clone()),
            detail: None,
        };
        s.environments.push(environment.clone());
        Ok(environment)
    })
}

pub(crate) fn delete_environment(
    shared: &Shared,
    p: EnvironmentsDeleteParams,
) -> Result<Environment, ApiError> {
    shared.write(|s| {
        let environment = s
            .environments
            .iter_mut()
            .find(|e| e.id == p.environment_id)
            .ok_or_else(|| not_found("environment", p.environment_id.as_str()))?;
        if environment.status != EnvironmentStatus::Deleted {
            let retain = environment
                .settings
                .as_ref()
                .and_then(|s| s.get("retain"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            environment.detail = Some(if retain {
                "the workspace was kept (retain)".into()
            } else {
                "the workspace was removed".into()
            });
            environment.status = EnvironmentStatus::Deleted;
        }
        Ok(environment.clone())
    })
}
