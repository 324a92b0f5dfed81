//! `schedules.*`: schedules as callers make, read, change, fire and
//! delete them (the scheduler itself is [`crate::schedules`]).
//!
//! A schedule runs its agent as the subject of the token that made it,
//! again and again with no caller present, so making, changing or firing
//! one needs `agent.run` beside `schedule.write`, and an agent the token
//! may use. A bound token sees the schedules its subject made; another's
//! are `not_found`. Each token keeps at most [`MAX_SCHEDULES_PER_TOKEN`].

use talon_protocol::gateway::bounded::{AgentId, ScheduleId, Subject, TaskId};
use talon_protocol::gateway::schedules::{
    CatchUp, Schedule, ScheduleAction, ScheduleRef, ScheduleSpec, ScheduleState,
    SchedulesCreateParams, SchedulesListParams, SchedulesListResult, SchedulesUpdateParams,
};
use talon_protocol::gateway::tasks::Task;
use talon_protocol::gateway::{ApiError, Scope, refuse};

use crate::auth::identity::Caller;
use crate::error::api_error;
use crate::schedules::{Trigger, first_slot};
use crate::state::Api;

use super::{DEFAULT_AGENT, new_id, not_found};

/// Most schedules one token keeps.
pub(crate) const MAX_SCHEDULES_PER_TOKEN: u64 = 1_000;

/// `spec` with an `every` schedule's anchor filled in (`now`), so that its
/// slots stay put whatever node computes them.
fn anchored(spec: ScheduleSpec, now: u64) -> ScheduleSpec {
    match spec {
        ScheduleSpec::Every {
            every_ms,
            anchor_ms: None,
        } => ScheduleSpec::Every {
            every_ms,
            anchor_ms: Some(now),
        },
        other => other,
    }
}

/// The first slot of `spec` from `now`, or the refusal naming what is
/// wrong with it.
fn slot(spec: &ScheduleSpec, now: u64) -> Result<Option<u64>, ApiError> {
    first_slot(spec, now).map_err(|why| refuse::bad_schedule(&why))
}

impl Api {
    /// The schedule `id`, if the caller may see it.
    async fn schedule_for(&self, caller: &Caller, id: &ScheduleId) -> Result<Schedule, ApiError> {
        self.store
            .schedule(id, &caller.owner())
            .await
            .map_err(api_error)?
            .ok_or_else(|| not_found("schedule", id.as_str()))
    }

    /// What running an agent on a schedule needs beyond `schedule.write`.
    async fn may_schedule(&self, caller: &Caller, agent: &str) -> Result<(), ApiError> {
        caller.require(Scope::AgentRun)?;
        if self.agent_for(caller, agent).await?.is_none() {
            return Err(not_found("agent", agent));
        }
        Ok(())
    }

    pub(super) async fn list_schedules(
        &self,
        caller: &Caller,
        p: SchedulesListParams,
    ) -> Result<SchedulesListResult, ApiError> {
        let cursor = match p.cursor.as_ref().map(|c| c.as_str()) {
            None => None,
            Some(id) => {
                let at = self
                    .store
                    .schedule(&ScheduleId::new(id), &caller.owner())
                    .await
                    .ok()
                    .flatten()
                    .ok_or_else(|| refuse::cursor_not_a_schedule(id))?;
                Some((at.id, at.created_at))
            }
        };
        let limit = super::limit(p.limit);
        let after = cursor
            .as_ref()
            .map(|(id, created_at)| talon_store::ScheduleCursor {
                id: id.as_str(),
                created_at: *created_at,
            });
        let schedules = self
            .store
            .list_schedules(
                &caller.owner(),
                p.agent_id.as_ref().map(|a| a.as_str()),
                after,
                limit + 1,
            )
            .await
            .map_err(api_error)?;
        let (schedules, next_cursor) =
            super::runs::page_of(schedules, limit, |s| s.id.clone().into());
        Ok(SchedulesListResult {
            schedules,
            next_cursor,
        })
    }

    pub(super) async fn get_schedule(
        &self,
        caller: &Caller,
        p: ScheduleRef,
    ) -> Result<Schedule, ApiError> {
        self.schedule_for(caller, &p.schedule_id).await
    }

    pub(super) async fn create_schedule(
        &self,
        caller: &Caller,
        p: SchedulesCreateParams,
    ) -> Result<Schedule, ApiError> {
        let agent = p
            .agent_id
            .clone()
            .unwrap_or_else(|| AgentId::new(DEFAULT_AGENT));
        self.may_schedule(caller, agent.as_str()).await?;
        if p.catch_up == Some(CatchUp::Unknown) {
            return Err(refuse::unknown_catch_up());
        }
        let at = matches!(p.schedule, ScheduleSpec::At { .. });
        if p.delete_after_run == Some(true) && !at {
            return Err(refuse::delete_after_run_not_at());
        }
        let now = self.store.now_ms();
        let spec = anchored(p.schedule.clone(), now);
        let next = slot(&spec, now)?;
        if let Some(key) = &p.session_key
            && let Some(session) = self
                .store
                .session_by_key(caller.subject(), key.as_str())
                .await
                .map_err(api_error)?
            && session.agent_id != agent
        {
            return Err(refuse::session_of_other_agent(
                key.as_str(),
                session.agent_id.as_str(),
                agent.as_str(),
            ));
        }
        let id = match &p.idempotency_key {
            Some(key) => {
                let id = ScheduleId::new(caller.keyed_id("schedule", key.as_str(), "sch"));
                // In the caller's namespace: the schedule is its own
                // whenever it exists.
                if let Some(first) = self
                    .store
                    .schedule(&id, &talon_store::Owner::default())
                    .await
                    .map_err(api_error)?
                {
                    return if first.agent_id == agent
                        && first.name == p.name
                        && first.payload == p.payload
                        && first.session_key == p.session_key
                    {
                        Ok(first)
                    } else {
                        Err(refuse::idempotency_reused(key.as_str()))
                    };
                }
                id
            }
            None => ScheduleId::new(new_id("sch")?),
        };
        let token = (!caller.is_admin()).then_some(caller.token_id.as_str());
        if self.store.schedule_count(token).await.map_err(api_error)? >= MAX_SCHEDULES_PER_TOKEN {
            return Err(refuse::too_many_schedules(MAX_SCHEDULES_PER_TOKEN));
        }
        let enabled = p.enabled.unwrap_or(true);
        let schedule = Schedule {
            id,
            agent_id: agent,
            name: p.name,
            description: p.description,
            enabled,
            schedule: spec,
            payload: p.payload,
            session_key: p.session_key,
            catch_up: p.catch_up.unwrap_or_default(),
            delete_after_run: p.delete_after_run.unwrap_or(at),
            subject: caller.subject().map(Subject::new),
            state: ScheduleState {
                next_run_at: next.filter(|_| enabled),
                ..ScheduleState::default()
            },
            created_at: now,
            updated_at: now,
        };
        self.store
            .create_schedule(&schedule, token)
            .await
            .map_err(api_error)?;
        tracing::info!(schedule = %schedule.id, agent = %schedule.agent_id, "schedule made");
        self.schedules.changed();
        Ok(schedule)
    }

    pub(super) async fn update_schedule(
        &self,
        caller: &Caller,
        p: SchedulesUpdateParams,
    ) -> Result<Schedule, ApiError> {
        if p.catch_up == Some(CatchUp::Unknown) {
            return Err(refuse::unknown_catch_up());
        }
        for _ in 0..8 {
            let read = self.schedule_for(caller, &p.schedule_id).await?;
            self.may_schedule(caller, read.agent_id.as_str()).await?;
            let now = self.store.now_ms();
            let mut next = read.clone();
            if let Some(name) = &p.name {
                next.name = name.clone();
            }
            if let Some(description) = &p.description {
                next.description = Some(description.clone());
            }
            if let Some(payload) = &p.payload {
                next.payload = payload.clone();
            }
            if let Some(catch_up) = p.catch_up {
                next.catch_up = catch_up;
            }
            let retimed = p.schedule.is_some();
            if let Some(spec) = &p.schedule {
                if next.delete_after_run && !matches!(spec, ScheduleSpec::At { .. }) {
                    next.delete_after_run = false;
                }
                next.schedule = anchored(spec.clone(), now);
            }
            let resumed = p.enabled == Some(true) && !read.enabled;
            if let Some(enabled) = p.enabled {
                next.enabled = enabled;
            }
            if !next.enabled {
                next.state.next_run_at = None;
            } else if retimed || resumed {
                // From now: no catch-up for the time it was paused.
                next.state.next_run_at = slot(&next.schedule, now)?;
            }
            next.updated_at = now.max(read.updated_at.saturating_add(1));
            if self
                .store
                .update_schedule(&next, read.updated_at)
                .await
                .map_err(api_error)?
            {
                self.schedules.changed();
                return Ok(next);
            }
        }
        Err(refuse::schedule_busy(p.schedule_id.as_str()))
    }

    pub(super) async fn run_schedule(
        &self,
        caller: &Caller,
        p: ScheduleAction,
    ) -> Result<Task, ApiError> {
        // Under a key, the firing's task id is made from it: a retry
        // answers the firing the first call made.
        let id = p
            .idempotency_key
            .as_ref()
            .map(|key| TaskId::new(caller.keyed_id("schedule-run", key.as_str(), "task")));
        for _ in 0..8 {
            let read = self.schedule_for(caller, &p.schedule_id).await?;
            self.may_schedule(caller, read.agent_id.as_str()).await?;
            if let Some(id) = &id
                && let Some(first) = self
                    .store
                    .task(id, &talon_store::Owner::default())
                    .await
                    .map_err(api_error)?
            {
                return if first.schedule_id.as_ref() == Some(&read.id) {
                    Ok(first)
                } else {
                    Err(refuse::idempotency_reused(
                        p.idempotency_key.as_ref().map_or("", |k| k.as_str()),
                    ))
                };
            }
            if let Some(task) = self.schedules.fire(read, Trigger::Now, id.clone()).await? {
                return Ok(task);
            }
        }
        Err(refuse::schedule_busy(p.schedule_id.as_str()))
    }

    pub(super) async fn delete_schedule(
        &self,
        caller: &Caller,
        p: ScheduleAction,
    ) -> Result<Schedule, ApiError> {
        let schedule = self.schedule_for(caller, &p.schedule_id).await?;
        if !self
            .store
            .delete_schedule(&schedule.id)
            .await
            .map_err(api_error)?
        {
            return Err(not_found("schedule", schedule.id.as_str()));
        }
        tracing::info!(schedule = %schedule.id, "schedule deleted");
        Ok(schedule)
    }
}
