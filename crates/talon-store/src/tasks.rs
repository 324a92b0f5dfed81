//! Background tasks: the ledger's records, each the protocol's `Task` as a
//! document beside the columns lists filter by. A change is a
//! compare-and-set on the status it moves from, so of several nodes (or a
//! cancel and an ending) exactly one moves a task out of a status, and a
//! terminal task never moves again.
//!
//! A background process lives in one node's memory: its task records that
//! node and a lease the node renews while it lives ([`Store::renew_task_leases`]),
//! so that a restarted node finds its own dead processes and any node finds
//! those of a node that died ([`Store::orphaned_process_tasks`]).

use talon_protocol::gateway::bounded::{RunId, TaskId};
use talon_protocol::gateway::tasks::{Task, TaskKind, TaskStatus};

use crate::error::{Result, StoreError};
use crate::records::{doc_of, enum_str, json_text, ms};
use crate::{Owner, Store};

/// Which tasks [`Store::list_tasks`] returns; every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// In one of these states (none: any).
    pub statuses: Vec<TaskStatus>,
    /// Of this kind.
    pub kind: Option<TaskKind>,
    /// Started by a run in this session.
    pub session_id: Option<String>,
    /// Started by this run.
    pub run_id: Option<String>,
    /// Whose (every task when unrestricted).
    pub owner: Owner,
}

/// Where a page of [`Store::list_tasks`] starts: the last task of the
/// previous page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskCursor<'a> {
    /// Its id.
    pub id: &'a str,
    /// When it was created.
    pub created_at: u64,
}

/// Who a new task belongs to: the subject, agent and token of the run that
/// started it (what a bound token's reads and a token's quota go by).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskOwner<'a> {
    /// The subject of the token whose run started it.
    pub subject: Option<&'a str>,
    /// The agent of that run.
    pub agent_id: Option<&'a str>,
    /// The token that started that run.
    pub token_id: Option<&'a str>,
}

/// The insert of a new task (nothing when its id is taken), for a write
/// of its own or a transaction's.
pub(crate) fn insert_task<'q>(
    task: &'q Task,
    owner: TaskOwner<'q>,
) -> Result<sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>> {
    Ok(sqlx::query(
        "INSERT INTO tasks (id, kind, status, session_id, run_id, child_run_id, subject, owner_agent_id, token_id, created_at, updated_at, doc, delivery_status, schedule_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING",
    )
    .bind(task.id.to_string())
    .bind(enum_str(task.kind)?)
    .bind(enum_str(task.status)?)
    .bind(task.session_id.as_ref().map(ToString::to_string))
    .bind(task.run_id.as_ref().map(ToString::to_string))
    .bind(task.child_run_id.as_ref().map(ToString::to_string))
    .bind(owner.subject.map(str::to_owned))
    .bind(owner.agent_id.map(str::to_owned))
    .bind(owner.token_id.map(str::to_owned))
    .bind(ms(task.created_at)?)
    .bind(ms(task.updated_at)?)
    .bind(json_text(task)?)
    .bind(enum_str(task.delivery_status)?)
    .bind(task.schedule_id.as_ref().map(ToString::to_string)))
}

impl Store {
    /// Stores a new task; [`StoreError::Exists`] when its id is taken.
    pub async fn create_task(&self, task: &Task, owner: TaskOwner<'_>) -> Result<()> {
        let inserted = insert_task(task, owner)?
            .execute(self.writes())
            .await?
            .rows_affected();
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: "task",
                id: task.id.to_string(),
            })
        }
    }

    /// One task, if `owner` may see it.
    pub async fn task(&self, id: &TaskId, owner: &Owner) -> Result<Option<Task>> {
        let (subject, agents) = owner.binds()?;
        let row = sqlx::query(sql!(
            "SELECT doc FROM tasks WHERE id = $1 AND {owned}",
            owned = Owner::condition(self.backend(), 2, "subject", "owner_agent_id"),
        ))
        .bind(id.to_string())
        .bind(subject)
        .bind(agents)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// The task tracking run `child` (a sub-agent's), if any.
    pub async fn task_of_child_run(&self, child: &RunId) -> Result<Option<Task>> {
        let row = sqlx::query("SELECT doc FROM tasks WHERE child_run_id = $1")
            .bind(child.to_string())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// At most `limit` tasks that `filter` lets through, newest first
    /// (ties by id, descending), after `cursor`.
    pub async fn list_tasks(
        &self,
        filter: &TaskFilter,
        cursor: Option<TaskCursor<'_>>,
        limit: u32,
    ) -> Result<Vec<Task>> {
        let (subject, agents) = filter.owner.binds()?;
        // One placeholder per status: the values are bound, never spliced.
        let statuses = if filter.statuses.is_empty() {
            String::new()
        } else {
            let marks: Vec<String> = (0..filter.statuses.len())
                .map(|i| format!("${}", i + 9))
                .collect();
            format!("AND status IN ({}) ", marks.join(", "))
        };
        let mut query = sqlx::query(sql!(
            "SELECT doc FROM tasks \
             WHERE ($1 IS NULL OR kind = $1) \
               AND ($2 IS NULL OR session_id = $2) \
               AND ($3 IS NULL OR run_id = $3) \
               AND ($4 IS NULL OR created_at < $4 OR (created_at = $4 AND id < $5)) \
               AND {owned} \
               {statuses}\
             ORDER BY created_at DESC, id DESC LIMIT $6",
            owned = Owner::condition(self.backend(), 7, "subject", "owner_agent_id"),
        ))
        .bind(filter.kind.map(enum_str).transpose()?)
        .bind(filter.session_id.clone())
        .bind(filter.run_id.clone())
        .bind(cursor.map(|c| ms(c.created_at)).transpose()?)
        .bind(cursor.map(|c| c.id.to_owned()))
        .bind(i64::from(limit))
        .bind(subject)
        .bind(agents);
        for status in &filter.statuses {
            query = query.bind(enum_str(*status)?);
        }
        query
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(doc_of)
            .collect()
    }

    /// Records that `node` holds the work of task `id` (a background
    /// process), vouching for it until `lease_until`.
    pub async fn hold_task(&self, id: &TaskId, node: &str, lease_until: u64) -> Result<()> {
        sqlx::query("UPDATE tasks SET node = $2, lease_until = $3 WHERE id = $1")
            .bind(id.to_string())
            .bind(node.to_owned())
            .bind(ms(lease_until)?)
            .execute(self.writes())
            .await?;
        Ok(())
    }

    /// Extends the lease of the unfinished tasks `ids` whose work `node`
    /// holds (what it still runs); returns how many. A task whose work
    /// ended here without its end being written is not renewed, so it
    /// cannot stay `running` past its lease.
    pub async fn renew_task_leases(
        &self,
        node: &str,
        ids: &[String],
        lease_until: u64,
    ) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let marks: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 3)).collect();
        let mut query = sqlx::query(sql!(
            "UPDATE tasks SET lease_until = $2 WHERE node = $1 AND status IN ('queued', 'running') AND id IN ({})",
            marks.join(", ")
        ))
        .bind(node.to_owned())
        .bind(ms(lease_until)?);
        for id in ids {
            query = query.bind(id.clone());
        }
        Ok(query.execute(self.writes()).await?.rows_affected())
    }

    /// Unfinished tasks of `kind` held by a node whose lease ended before
    /// `now` (it died), or, with `node`, every one that node held (it
    /// restarted): their work died with it. A task no node ever took
    /// (its node died between recording it and taking it) counts once it
    /// is older than `unheld_before`.
    pub async fn orphaned_process_tasks(
        &self,
        kind: TaskKind,
        now: u64,
        node: Option<&str>,
        unheld_before: u64,
    ) -> Result<Vec<Task>> {
        let rows = sqlx::query(
            "SELECT doc FROM tasks WHERE kind = $1 AND status IN ('queued', 'running') \
               AND (lease_until < $2 OR node = $3 OR (node IS NULL AND created_at < $4)) \
             ORDER BY created_at, id",
        )
        .bind(enum_str(kind)?)
        .bind(ms(now)?)
        .bind(node.map(str::to_owned))
        .bind(ms(unheld_before)?)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// Replaces task `task.id` with `task` if it has not changed since it
    /// was read (its stored `updatedAt` is still `read_at`) and the change
    /// keeps a terminal task's status: `false` otherwise (another node,
    /// sweep or caller got there first), and nothing is written.
    pub async fn update_task(&self, task: &Task, read_at: u64) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE tasks SET status = $2, child_run_id = $3, updated_at = $4, doc = $5, delivery_status = $6 \
             WHERE id = $1 AND updated_at = $7 AND (status = $2 OR status IN ('queued', 'running'))",
        )
        .bind(task.id.to_string())
        .bind(enum_str(task.status)?)
        .bind(task.child_run_id.as_ref().map(ToString::to_string))
        .bind(ms(task.updated_at)?)
        .bind(json_text(task)?)
        .bind(enum_str(task.delivery_status)?)
        .bind(ms(read_at)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Tasks in one of `statuses` (oldest first, at most `limit`): what a
    /// node looks over after a restart.
    pub async fn tasks_in(&self, statuses: &[TaskStatus], limit: u32) -> Result<Vec<Task>> {
        if statuses.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (0..statuses.len()).map(|i| format!("${}", i + 2)).collect();
        let mut query = sqlx::query(sql!(
            "SELECT doc FROM tasks WHERE status IN ({}) ORDER BY created_at, id LIMIT $1",
            marks.join(", ")
        ))
        .bind(i64::from(limit));
        for status in statuses {
            query = query.bind(enum_str(*status)?);
        }
        let rows = query.fetch_all(self.pool()).await?;
        rows.iter().map(doc_of).collect()
    }

    /// Ended tasks whose policy's last message is still due (oldest first,
    /// at most `limit`): what a node posts again after a failed try or
    /// another node's death.
    pub async fn tasks_undelivered(&self, limit: u32) -> Result<Vec<Task>> {
        let rows = sqlx::query(
            "SELECT doc FROM tasks WHERE delivery_status = 'pending' \
               AND status IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'lost') \
             ORDER BY updated_at, id LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// Unfinished tasks (`queued` or `running`) that run `run_id` started,
    /// oldest first.
    pub async fn live_tasks_of_run(&self, run_id: &RunId) -> Result<Vec<Task>> {
        let rows = sqlx::query(
            "SELECT doc FROM tasks WHERE run_id = $1 AND status IN ('queued', 'running') \
             ORDER BY created_at, id",
        )
        .bind(run_id.to_string())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// How many tasks of `kind` have not ended, across every node.
    pub async fn live_task_count(&self, kind: TaskKind) -> Result<u64> {
        use sqlx::Row as _;
        let row = sqlx::query(
            "SELECT COUNT(*) FROM tasks WHERE kind = $1 AND status IN ('queued', 'running')",
        )
        .bind(enum_str(kind)?)
        .fetch_one(self.pool())
        .await?;
        Ok(u64::try_from(row.try_get::<i64, _>(0)?).unwrap_or(0))
    }
}
