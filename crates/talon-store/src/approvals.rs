//! Approvals and questions: durable, listed by status, run and session,
//! and resolved exactly once. Resolution is a compare-and-set on
//! `status = 'pending'`, so of concurrent responders (on any node) exactly
//! one wins and the others learn what won.

use serde::Serialize;
use serde::de::DeserializeOwned;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::{
    Approval, ApprovalDecision, ApprovalStatus, Question, QuestionStatus,
};

use crate::Store;
use crate::error::{Result, StoreError};
use crate::records::{doc_of, enum_str, json_text, ms, opt_ms};

/// How an attempt to resolve a pending record ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution<T> {
    /// This call resolved it; the record as stored now.
    Resolved(T),
    /// It was already resolved (by another responder, or expired); the
    /// record as it was resolved.
    AlreadyResolved(T),
}

/// Which approvals or questions to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingFilter {
    /// Only those with this status (`pending`, `approved`, ...).
    pub status: Option<String>,
    /// Only this run's.
    pub run_id: Option<String>,
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only those of this owner's runs.
    pub owner: crate::Owner,
    /// One page of them (all when none).
    pub page: Option<Page>,
}

/// A page of a list in creation order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Only those after the record with this id (a previous page's last):
    /// none when it is unknown.
    pub after: Option<String>,
    /// At most this many.
    pub limit: u32,
}

/// The columns a resolvable record is filed under.
trait Resolvable: Serialize + DeserializeOwned + Clone {
    const TABLE: &'static str;
    const KIND: &'static str;
    fn id(&self) -> &str;
    fn run_id(&self) -> &str;
    fn session_id(&self) -> Option<&str>;
    fn status(&self) -> Result<String>;
    fn expires_at(&self) -> Option<u64>;
    fn created_at(&self) -> u64;
}

impl Resolvable for Approval {
    const TABLE: &'static str = "approvals";
    const KIND: &'static str = "approval";
    fn id(&self) -> &str {
        self.id.as_str()
    }
    fn run_id(&self) -> &str {
        self.run_id.as_str()
    }
    fn session_id(&self) -> Option<&str> {
        self.session_id.as_ref().map(SessionId::as_str)
    }
    fn status(&self) -> Result<String> {
        enum_str(self.status)
    }
    fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }
    fn created_at(&self) -> u64 {
        self.created_at
    }
}

impl Resolvable for Question {
    const TABLE: &'static str = "questions";
    const KIND: &'static str = "question";
    fn id(&self) -> &str {
        self.id.as_str()
    }
    fn run_id(&self) -> &str {
        self.run_id.as_str()
    }
    fn session_id(&self) -> Option<&str> {
        self.session_id.as_ref().map(SessionId::as_str)
    }
    fn status(&self) -> Result<String> {
        enum_str(self.status)
    }
    fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }
    fn created_at(&self) -> u64 {
        self.created_at
    }
}

impl Store {
    /// Stores a new approval request.
    pub async fn create_approval(&self, approval: &Approval) -> Result<()> {
        self.create_resolvable(approval).await
    }

    /// One approval.
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>> {
        self.resolvable(id).await
    }

    /// Approvals matching `filter`, oldest first.
    pub async fn approvals(&self, filter: &PendingFilter) -> Result<Vec<Approval>> {
        self.list_resolvable(filter).await
    }

    /// Resolves a pending approval with `resolve` (which sets its status,
    /// decision, reason and time). Exactly one of concurrent callers gets
    /// [`Resolution::Resolved`].
    /// An approval that grants a remembered decision
    /// (`approve_session`, `approve_always`) files it as a rule (see
    /// [`Store::remembered_approval`]).
    pub async fn resolve_approval(
        &self,
        id: &str,
        resolve: impl FnOnce(&mut Approval),
    ) -> Result<Resolution<Approval>> {
        let outcome = self
            .resolve_resolvable(
                id,
                |a: &Approval| a.status == ApprovalStatus::Pending,
                resolve,
            )
            .await?;
        if let Resolution::Resolved(approval) = &outcome {
            self.file_rule(approval).await?;
        }
        Ok(outcome)
    }

    /// The approval whose remembered decision covers a call of `tool`
    /// (a catalog id, never a bare name: rules are filed by
    /// [`Approval::tool_key`]) in `session_id`: the latest
    /// `approve_always` for the tool (one given for a subject's run holds
    /// for that subject's runs only), or `approve_session` in that
    /// session.
    pub async fn remembered_approval(
        &self,
        tool: &str,
        session_id: Option<&SessionId>,
        subject: Option<&str>,
    ) -> Result<Option<Approval>> {
        // No session (or subject): a scope no rule is filed under.
        let session = session_id.map_or_else(String::new, |s| format!("session:{s}"));
        let subject = subject.map_or_else(String::new, |s| format!("subject:{s}"));
        let row = sqlx::query(sql!(
            "SELECT a.doc FROM approval_rules r JOIN approvals a ON a.id = r.approval_id \
             WHERE r.tool = $1 AND (r.scope = '*' OR r.scope = $2 OR r.scope = $3) \
             ORDER BY r.created_at DESC, r.approval_id DESC LIMIT 1"
        ))
        .bind(tool.to_owned())
        .bind(session)
        .bind(subject)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// Files `approval` as the rule it grants, if it grants one.
    async fn file_rule(&self, approval: &Approval) -> Result<()> {
        let scope = match (approval.status, approval.decision, &approval.session_id) {
            // A subject's `approve_always` is that subject's only.
            (ApprovalStatus::Approved, Some(ApprovalDecision::ApproveAlways), _) => {
                match self.run(&approval.run_id).await?.and_then(|r| r.subject) {
                    Some(subject) => format!("subject:{subject}"),
                    None => "*".to_owned(),
                }
            }
            (ApprovalStatus::Approved, Some(ApprovalDecision::ApproveSession), Some(session)) => {
                format!("session:{session}")
            }
            _ => return Ok(()),
        };
        // By catalog id, also for an approval stored before `toolId`;
        // one that only names its tool grants nothing.
        let Some(tool) = approval.tool_key() else {
            return Ok(());
        };
        sqlx::query(sql!(
            "INSERT INTO approval_rules (tool, scope, approval_id, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (tool, scope) DO UPDATE \
             SET approval_id = excluded.approval_id, created_at = excluded.created_at"
        ))
        .bind(tool.to_owned())
        .bind(scope)
        .bind(approval.id.to_string())
        .bind(ms(approval.resolved_at.unwrap_or(approval.created_at))?)
        .execute(self.writes())
        .await?;
        Ok(())
    }

    /// Pending approvals whose expiry is at or before `now`.
    pub async fn due_approvals(&self, now: u64) -> Result<Vec<Approval>> {
        self.due_resolvable(now).await
    }

    /// Stores a new question.
    pub async fn create_question(&self, question: &Question) -> Result<()> {
        self.create_resolvable(question).await
    }

    /// One question.
    pub async fn question(&self, id: &str) -> Result<Option<Question>> {
        self.resolvable(id).await
    }

    /// Questions matching `filter`, oldest first.
    pub async fn questions(&self, filter: &PendingFilter) -> Result<Vec<Question>> {
        self.list_resolvable(filter).await
    }

    /// Resolves a pending question with `resolve` (its answer, or its
    /// expiry). Exactly one of concurrent callers gets
    /// [`Resolution::Resolved`].
    pub async fn resolve_question(
        &self,
        id: &str,
        resolve: impl FnOnce(&mut Question),
    ) -> Result<Resolution<Question>> {
        self.resolve_resolvable(
            id,
            |q: &Question| q.status == QuestionStatus::Pending,
            resolve,
        )
        .await
    }

    /// Pending questions whose expiry is at or before `now`.
    pub async fn due_questions(&self, now: u64) -> Result<Vec<Question>> {
        self.due_resolvable(now).await
    }

    async fn create_resolvable<T: Resolvable>(&self, record: &T) -> Result<()> {
        let inserted = sqlx::query(sql!(
            "INSERT INTO {} (id, run_id, session_id, status, expires_at, created_at, doc) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            T::TABLE
        ))
        .bind(record.id().to_owned())
        .bind(record.run_id().to_owned())
        .bind(record.session_id().map(str::to_owned))
        .bind(record.status()?)
        .bind(opt_ms(record.expires_at())?)
        .bind(ms(record.created_at())?)
        .bind(json_text(record)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: T::KIND,
                id: record.id().to_owned(),
            })
        }
    }

    async fn resolvable<T: Resolvable>(&self, id: &str) -> Result<Option<T>> {
        let row = sqlx::query(sql!("SELECT doc FROM {} WHERE id = $1", T::TABLE))
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(doc_of).transpose()
    }

    async fn list_resolvable<T: Resolvable>(&self, filter: &PendingFilter) -> Result<Vec<T>> {
        let (subject, agents) = filter.owner.binds()?;
        let rows = sqlx::query(sql!(
            "SELECT doc FROM {} \
             WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR run_id = $2) \
               AND ($3 IS NULL OR session_id = $3) \
               AND (($4 IS NULL AND $5 IS NULL) OR run_id IN (SELECT id FROM runs WHERE {owned})) \
             AND ($6 IS NULL OR (created_at, id) > (SELECT created_at, id FROM {} WHERE id = $6)) \
             ORDER BY created_at, id LIMIT $7",
            T::TABLE,
            T::TABLE,
            owned = crate::Owner::condition(self.backend(), 4, "subject", "agent_id"),
        ))
        .bind(filter.status.clone())
        .bind(filter.run_id.clone())
        .bind(filter.session_id.clone())
        .bind(subject)
        .bind(agents)
        .bind(filter.page.as_ref().and_then(|p| p.after.clone()))
        .bind(
            filter
                .page
                .as_ref()
                .map_or(i64::MAX, |p| i64::from(p.limit)),
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    async fn resolve_resolvable<T: Resolvable>(
        &self,
        id: &str,
        is_pending: impl Fn(&T) -> bool,
        resolve: impl FnOnce(&mut T),
    ) -> Result<Resolution<T>> {
        let not_found = || StoreError::NotFound {
            kind: T::KIND,
            id: id.to_owned(),
        };
        let current: T = self.resolvable(id).await?.ok_or_else(not_found)?;
        if !is_pending(&current) {
            return Ok(Resolution::AlreadyResolved(current));
        }
        let mut resolved = current;
        resolve(&mut resolved);
        if is_pending(&resolved) || resolved.id() != id {
            return Err(StoreError::Corrupt(format!(
                "{} {id:?}: a resolution must leave it resolved, under the same id",
                T::KIND
            )));
        }
        let changed = sqlx::query(sql!(
            "UPDATE {} SET status = $2, doc = $3 WHERE id = $1 AND status = 'pending'",
            T::TABLE
        ))
        .bind(id.to_owned())
        .bind(resolved.status()?)
        .bind(json_text(&resolved)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        if changed == 1 {
            return Ok(Resolution::Resolved(resolved));
        }
        let winner: T = self.resolvable(id).await?.ok_or_else(not_found)?;
        Ok(Resolution::AlreadyResolved(winner))
    }

    async fn due_resolvable<T: Resolvable>(&self, now: u64) -> Result<Vec<T>> {
        let rows = sqlx::query(sql!(
            "SELECT doc FROM {} WHERE status = 'pending' AND expires_at IS NOT NULL \
             AND expires_at <= $1 ORDER BY expires_at, id",
            T::TABLE
        ))
        .bind(ms(now)?)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }
}
