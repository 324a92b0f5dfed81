//! Schedules: each the protocol's `Schedule` as a document beside the
//! columns lists and the scheduler go by. `next_at` is set only while a
//! schedule is enabled and has a slot to come, so the due ones are an
//! index range.
//!
//! A firing is claimed by [`Store::claim_firing`]: in one transaction, the
//! schedule moves to its next slot if nobody moved it since it was read
//! (a compare-and-set on `updated_at`) and the firing's task is stored.
//! Of several nodes seeing one slot due, exactly one claims it, and a
//! claimed firing always has its task, whose run is then started once
//! (by its idempotency key) by whichever node gets to it.

use talon_protocol::gateway::bounded::ScheduleId;
use talon_protocol::gateway::schedules::Schedule;
use talon_protocol::gateway::tasks::Task;

use crate::error::{Result, StoreError};
use crate::records::{doc_of, json_text, ms};
use crate::tasks::insert_task;
use crate::{Owner, Store, TaskOwner};

/// Where a page of [`Store::list_schedules`] starts: the last schedule of
/// the previous page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleCursor<'a> {
    /// Its id.
    pub id: &'a str,
    /// When it was made.
    pub created_at: u64,
}

/// The slot the scheduler looks for: set while enabled and not spent.
fn next_at(schedule: &Schedule) -> Option<u64> {
    schedule
        .enabled
        .then_some(schedule.state.next_run_at)
        .flatten()
}

impl Store {
    /// Stores a new schedule made by token `token_id`;
    /// [`StoreError::Exists`] when its id is taken.
    pub async fn create_schedule(&self, schedule: &Schedule, token_id: Option<&str>) -> Result<()> {
        let inserted = sqlx::query(
            "INSERT INTO schedules (id, agent_id, subject, token_id, next_at, created_at, updated_at, doc) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
        )
        .bind(schedule.id.to_string())
        .bind(schedule.agent_id.to_string())
        .bind(schedule.subject.as_ref().map(ToString::to_string))
        .bind(token_id.map(str::to_owned))
        .bind(next_at(schedule).map(ms).transpose()?)
        .bind(ms(schedule.created_at)?)
        .bind(ms(schedule.updated_at)?)
        .bind(json_text(schedule)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: "schedule",
                id: schedule.id.to_string(),
            })
        }
    }

    /// One schedule, if `owner` may see it.
    pub async fn schedule(&self, id: &ScheduleId, owner: &Owner) -> Result<Option<Schedule>> {
        let (subject, agents) = owner.binds()?;
        let row = sqlx::query(sql!(
            "SELECT doc FROM schedules WHERE id = $1 AND {owned}",
            owned = Owner::condition(self.backend(), 2, "subject", "agent_id"),
        ))
        .bind(id.to_string())
        .bind(subject)
        .bind(agents)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// At most `limit` schedules `owner` may see (only `agent_id`'s when
    /// given), oldest first (ties by id), after `cursor`.
    pub async fn list_schedules(
        &self,
        owner: &Owner,
        agent_id: Option<&str>,
        cursor: Option<ScheduleCursor<'_>>,
        limit: u32,
    ) -> Result<Vec<Schedule>> {
        let (subject, agents) = owner.binds()?;
        let rows = sqlx::query(sql!(
            "SELECT doc FROM schedules \
             WHERE ($1 IS NULL OR agent_id = $1) \
               AND ($2 IS NULL OR created_at > $2 OR (created_at = $2 AND id > $3)) \
               AND {owned} \
             ORDER BY created_at, id LIMIT $4",
            owned = Owner::condition(self.backend(), 5, "subject", "agent_id"),
        ))
        .bind(agent_id.map(str::to_owned))
        .bind(cursor.map(|c| ms(c.created_at)).transpose()?)
        .bind(cursor.map(|c| c.id.to_owned()))
        .bind(i64::from(limit))
        .bind(subject)
        .bind(agents)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// How many schedules token `token_id` made (and has not deleted).
    pub async fn schedule_count(&self, token_id: Option<&str>) -> Result<u64> {
        use sqlx::Row as _;
        let row = sqlx::query(
            "SELECT COUNT(*) FROM schedules WHERE ($1 IS NULL AND token_id IS NULL) OR token_id = $1",
        )
        .bind(token_id.map(str::to_owned))
        .fetch_one(self.pool())
        .await?;
        Ok(u64::try_from(row.try_get::<i64, _>(0)?).unwrap_or(0))
    }

    /// Replaces schedule `schedule.id` with `schedule` if it has not
    /// changed since it was read (its stored `updatedAt` is still
    /// `read_at`): `false` otherwise, and nothing is written.
    pub async fn update_schedule(&self, schedule: &Schedule, read_at: u64) -> Result<bool> {
        let changed = update(schedule, read_at)?
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// Moves `schedule` on (as [`Self::update_schedule`]) and, if that
    /// won, stores `firing`'s task, both or neither: `false` when another
    /// node (or a caller) changed the schedule first.
    pub async fn claim_firing(
        &self,
        schedule: &Schedule,
        read_at: u64,
        firing: Option<(&Task, TaskOwner<'_>)>,
    ) -> Result<bool> {
        let mut tx = self.backend().begin_write(self.writes()).await?;
        let moved = update(schedule, read_at)?
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if moved != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        if let Some((task, owner)) = firing
            && insert_task(task, owner)?
                .execute(&mut *tx)
                .await?
                .rows_affected()
                != 1
        {
            tx.rollback().await?;
            return Err(StoreError::Exists {
                kind: "task",
                id: task.id.to_string(),
            });
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes schedule `id`; whether it was there.
    pub async fn delete_schedule(&self, id: &ScheduleId) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM schedules WHERE id = $1")
            .bind(id.to_string())
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(deleted == 1)
    }

    /// Enabled schedules whose next slot is at or before `now`, soonest
    /// first, at most `limit`.
    pub async fn due_schedules(&self, now: u64, limit: u32) -> Result<Vec<Schedule>> {
        let rows = sqlx::query(
            "SELECT doc FROM schedules WHERE next_at <= $1 ORDER BY next_at, id LIMIT $2",
        )
        .bind(ms(now)?)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// The soonest slot of any enabled schedule.
    pub async fn next_slot(&self) -> Result<Option<u64>> {
        use sqlx::Row as _;
        let row = sqlx::query("SELECT MIN(next_at) FROM schedules")
            .fetch_one(self.pool())
            .await?;
        let at: Option<i64> = row.try_get(0)?;
        Ok(at.and_then(|at| u64::try_from(at).ok()))
    }
}

/// The compare-and-set of a schedule on its `updated_at`.
fn update(
    schedule: &Schedule,
    read_at: u64,
) -> Result<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>> {
    Ok(sqlx::query(
        "UPDATE schedules SET next_at = $2, updated_at = $3, doc = $4 WHERE id = $1 AND updated_at = $5",
    )
    .bind(schedule.id.to_string())
    .bind(next_at(schedule).map(ms).transpose()?)
    .bind(ms(schedule.updated_at)?)
    .bind(json_text(schedule)?)
    .bind(ms(read_at)?))
}
