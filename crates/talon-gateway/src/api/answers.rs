//! `approvals.list` and `questions.list` (pending or answered, of runs the
//! caller may see, a page at a time); `approvals.respond` and
//! `questions.respond`: the first answer wins
//! (a compare-and-set in the store; the others get `conflict` with what
//! won), and the node's waiting runs are woken to read it. An answer to a
//! question is checked against its choices and schema first; a wrong one
//! leaves it open.

use talon_protocol::gateway::bounded::{Cursor, RunId, SessionId};
use talon_protocol::gateway::page::limit;
use talon_protocol::gateway::params::{
    ApprovalRef, ApprovalsListParams, ApprovalsListResult, ApprovalsRespondParams,
    QuestionsListParams, QuestionsListResult, QuestionsRespondParams,
};
use talon_protocol::gateway::{
    ApiError, Approval, ApprovalDecision, ApprovalStatus, Question, QuestionStatus,
};
use talon_store::{Page, PendingFilter, Resolution};

use super::{Api, next_page, not_found, wire_name};
use crate::auth::identity::Caller;
use crate::error::api_error;

/// On whose authority an approval is decided.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Authority<'a> {
    /// A caller's: only approvals of runs it may see.
    Caller(&'a Caller),
    /// The gateway's own (the OpenAI surface's approval rule).
    Gateway,
}

impl Api {
    /// `approvals.list`.
    pub(super) async fn list_approvals(
        &self,
        caller: &Caller,
        p: ApprovalsListParams,
    ) -> Result<ApprovalsListResult, ApiError> {
        let limit = limit(p.limit);
        let filter = PendingFilter {
            status: p.status.and_then(wire_name),
            run_id: p.run_id.map(RunId::into_string),
            session_id: p.session_id.map(SessionId::into_string),
            owner: caller.owner(),
            page: Some(Page {
                after: p.cursor.map(Cursor::into_string),
                limit: limit + 1,
            }),
        };
        let mut approvals = self.store.approvals(&filter).await.map_err(api_error)?;
        let next_cursor = next_page(&mut approvals, limit, |a| a.id.to_string());
        Ok(ApprovalsListResult {
            approvals,
            next_cursor,
        })
    }

    /// `questions.list`.
    pub(super) async fn list_questions(
        &self,
        caller: &Caller,
        p: QuestionsListParams,
    ) -> Result<QuestionsListResult, ApiError> {
        let limit = limit(p.limit);
        let filter = PendingFilter {
            status: p.status.and_then(wire_name),
            run_id: p.run_id.map(RunId::into_string),
            session_id: None,
            owner: caller.owner(),
            page: Some(Page {
                after: p.cursor.map(Cursor::into_string),
                limit: limit + 1,
            }),
        };
        let mut questions = self.store.questions(&filter).await.map_err(api_error)?;
        let next_cursor = next_page(&mut questions, limit, |q| q.id.to_string());
        Ok(QuestionsListResult {
            questions,
            next_cursor,
        })
    }

    /// `approvals.respond`: an approval of a run the caller may see.
    /// `approvals.get`: one approval of a run the caller may see (the
    /// others, as if they did not exist).
    pub(super) async fn get_approval(
        &self,
        caller: &Caller,
        p: ApprovalRef,
    ) -> Result<Approval, ApiError> {
        self.approval_for(Authority::Caller(caller), p.approval_id.as_str())
            .await
    }

    /// The approval `id`, as `by` may see it: a caller, an approval of a
    /// run it may see (the others, as if they did not exist); the gateway,
    /// any.
    async fn approval_for(&self, by: Authority<'_>, id: &str) -> Result<Approval, ApiError> {
        let approval = self
            .store
            .approval(id)
            .await
            .map_err(api_error)?
            .ok_or_else(|| not_found("approval", id))?;
        if let Authority::Caller(caller) = by
            && !crate::auth::owned::sees_run_of(&self.store, caller, approval.run_id.as_str())
                .await?
        {
            return Err(not_found("approval", id));
        }
        Ok(approval)
    }

    pub(super) async fn respond_approval(
        &self,
        caller: &Caller,
        p: ApprovalsRespondParams,
    ) -> Result<Approval, ApiError> {
        self.decide_approval(Authority::Caller(caller), p).await
    }

    /// Decides an approval: as `by` may (a caller, an approval of a run
    /// it may see, with no existence oracle for the others; the gateway,
    /// the OpenAI surface's approval rule, any).
    pub(crate) async fn decide_approval(
        &self,
        by: Authority<'_>,
        p: ApprovalsRespondParams,
    ) -> Result<Approval, ApiError> {
        let approval = self.approval_for(by, p.approval_id.as_str()).await?;
        approval.offers(p.decision)?;
        let decision = p.decision;
        let reason = p.reason;
        let resolved = self
            .store
            .resolve_approval(p.approval_id.as_str(), move |a| {
                a.status = if decision == ApprovalDecision::Deny {
                    ApprovalStatus::Denied
                } else {
                    ApprovalStatus::Approved
                };
                a.decision = Some(decision);
                a.reason = reason.map(Into::into);
                a.resolved_at = Some(self.store.now_ms());
            })
            .await
            .map_err(api_error)?;
        match resolved {
            Resolution::Resolved(approval) => {
                self.engine.resolved();
                Ok(approval)
            }
            Resolution::AlreadyResolved(winner) => Err(
                talon_protocol::gateway::refuse::approval_resolved().with_details(
                    talon_protocol::gateway::ErrorDetails {
                        approval: Some(Box::new(winner)),
                        ..Default::default()
                    },
                ),
            ),
        }
    }

    pub(super) async fn answer_question(
        &self,
        caller: &Caller,
        p: QuestionsRespondParams,
    ) -> Result<Question, ApiError> {
        let question = self
            .store
            .question(p.question_id.as_str())
            .await
            .map_err(api_error)?
            .ok_or_else(|| not_found("question", p.question_id.as_str()))?;
        if !crate::auth::owned::sees_run_of(&self.store, caller, question.run_id.as_str()).await? {
            return Err(not_found("question", p.question_id.as_str()));
        }
        // A wrong answer leaves the question open for a right one.
        if question.status == QuestionStatus::Pending {
            crate::runs::questions::check_answer(&question, &p.answer)?;
        }
        let answer = p.answer;
        let resolved = self
            .store
            .resolve_question(p.question_id.as_str(), move |q| {
                q.status = QuestionStatus::Answered;
                q.answer = Some(answer);
                q.answered_at = Some(self.store.now_ms());
            })
            .await
            .map_err(api_error)?;
        match resolved {
            Resolution::Resolved(question) => {
                self.engine.resolved();
                Ok(question)
            }
            Resolution::AlreadyResolved(winner) => Err(
                talon_protocol::gateway::refuse::question_answered().with_details(
                    talon_protocol::gateway::ErrorDetails {
                        question: Some(Box::new(winner)),
                        ..Default::default()
                    },
                ),
            ),
        }
    }
}
