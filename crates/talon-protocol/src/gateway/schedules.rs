//! Schedules: runs of an agent started by the clock ([`Schedule`]), in
//! OpenClaw's `cron` job shape where it maps: a `schedule` that is once
//! `at` a time, `every` so many milliseconds, or a `cron` expression in a
//! time zone; a `payload` (`agentTurn`: the message the run takes); and
//! the schedule's `state`. Each firing is a background task of kind
//! `cron` (`Task.scheduleId`), `silent` by default as OpenClaw's are.
//!
//! A slot is fired at most once across every node (the store claims it),
//! never while the schedule's previous firing is still live, and a slot
//! missed while no node was up is caught up by [`CatchUp`]: at most one
//! run, never one per missed tick.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::{
    AgentId, Cursor, IdempotencyKey, ScheduleId, SessionKey, Subject, TaskId, Text,
};
use super::bounded::{INSTRUCTIONS_MAX, NAME_MAX, TEXT_MAX};

/// The longest cron expression taken.
pub const EXPR_MAX: usize = 256;
/// The longest time zone name taken.
pub const TZ_MAX: usize = 64;
/// The shortest interval of an `every` schedule (one second).
pub const EVERY_MIN_MS: u64 = 1_000;
/// The longest interval of an `every` schedule (a year).
pub const EVERY_MAX_MS: u64 = 366 * 24 * 3_600 * 1_000;

/// When a schedule fires (OpenClaw's `schedule`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduleSpec {
    /// Once, at a time (RFC 3339; without an offset, UTC).
    At {
        /// The time, e.g. `2026-12-24T18:00:00+01:00`.
        at: Text<64>,
    },
    /// Every `everyMs` milliseconds, counted from `anchorMs` (default: when
    /// the schedule was created or last changed its `schedule`).
    Every {
        /// The interval, at least a second.
        #[serde(rename = "everyMs")]
        every_ms: u64,
        /// The epoch millisecond the intervals are counted from.
        #[serde(rename = "anchorMs", default, skip_serializing_if = "Option::is_none")]
        anchor_ms: Option<u64>,
    },
    /// At the times a cron expression names (5 fields, or 6 with seconds
    /// first), in a time zone.
    Cron {
        /// The expression, e.g. `0 3 * * *` (every night at 03:00).
        expr: Text<EXPR_MAX>,
        /// An IANA time zone, e.g. `Europe/Berlin` (default UTC).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tz: Option<Text<TZ_MAX>>,
    },
}

/// What a firing runs (OpenClaw's `payload`): one kind, `agentTurn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulePayload {
    /// `agentTurn`: a run of the schedule's agent.
    pub kind: PayloadKind,
    /// The run's input.
    pub message: Text<INSTRUCTIONS_MAX>,
    /// The run's time limit in seconds (default: the agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// The kinds of payload (OpenClaw's `systemEvent` and others are not
/// served: a schedule's firing is always a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PayloadKind {
    /// A run of the schedule's agent taking `message` as its input.
    #[serde(rename = "agentTurn")]
    AgentTurn,
}

/// What a node does with a slot that passed while no node was up to fire
/// it (more than [`CATCH_UP_AFTER_MS`] late).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CatchUp {
    /// Fire once for all the slots missed, then go on from now (the
    /// default).
    #[default]
    RunOnce,
    /// Fire none of them; go on from now.
    Skip,
    /// A policy this client does not know.
    #[serde(other)]
    Unknown,
}

/// How late a slot may be fired as on time; a later one was missed and
/// goes by the schedule's [`CatchUp`].
pub const CATCH_UP_AFTER_MS: u64 = 60_000;

/// Where a schedule is (OpenClaw's `state`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleState {
    /// When it fires next (epoch milliseconds); absent when it is paused
    /// or will not fire again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<u64>,
    /// When it last fired (epoch milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<u64>,
    /// The task of its last firing (its status is that firing's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_task_id: Option<TaskId>,
    /// How many times it fired.
    pub firings: u64,
    /// How many slots it let pass without firing: its previous firing was
    /// still live, or they were missed under `catchUp: skip`.
    pub skipped: u64,
}

/// A schedule: an agent's run started by the clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// Its id.
    pub id: ScheduleId,
    /// The agent each firing runs.
    pub agent_id: AgentId,
    /// Its name, shown in lists.
    pub name: Text<NAME_MAX>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text<TEXT_MAX>>,
    /// Whether it fires (`false`: paused).
    pub enabled: bool,
    /// When it fires.
    pub schedule: ScheduleSpec,
    /// What a firing runs.
    pub payload: SchedulePayload,
    /// The session every firing runs in; absent: each in a session of its
    /// own (`cron:<scheduleId>:<taskId>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// What a node does with slots missed while none was up.
    pub catch_up: CatchUp,
    /// Whether an `at` schedule is deleted once it fired.
    pub delete_after_run: bool,
    /// The subject of the token that made it: its firings' runs are that
    /// subject's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Where it is.
    pub state: ScheduleState,
    /// When it was made (epoch milliseconds).
    pub created_at: u64,
    /// When it last changed (epoch milliseconds).
    pub updated_at: u64,
}

/// `schedules.create`: OpenClaw's `cron.add` job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulesCreateParams {
    /// The agent each firing runs (default: `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Its name.
    pub name: Text<NAME_MAX>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text<TEXT_MAX>>,
    /// Whether it fires (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// When it fires.
    pub schedule: ScheduleSpec,
    /// What a firing runs.
    pub payload: SchedulePayload,
    /// The session every firing runs in (default: one each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// Missed slots (default `run_once`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    /// Delete an `at` schedule once it fired (default `true` for `at`, as
    /// OpenClaw's; refused for the other kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_after_run: Option<bool>,
    /// Makes a retried call safe: the same key with the same params
    /// returns the first call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// `schedules.update`: the fields given replace the schedule's; `enabled:
/// false` pauses it and `true` resumes it from now (no catch-up for the
/// time it was paused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulesUpdateParams {
    /// The schedule.
    pub schedule_id: ScheduleId,
    /// A new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Text<NAME_MAX>>,
    /// A new description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text<TEXT_MAX>>,
    /// Pause (`false`) or resume (`true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A new time (its next slot is counted from now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleSpec>,
    /// A new payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<SchedulePayload>,
    /// A new catch-up policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    /// Makes a retried call safe: the same key with the same params
    /// returns the first call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// `schedules.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleRef {
    /// The schedule.
    pub schedule_id: ScheduleId,
}

/// `schedules.delete` and `schedules.run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleAction {
    /// The schedule.
    pub schedule_id: ScheduleId,
    /// Makes a retried call safe: the same key with the same params
    /// returns the first call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// `schedules.list`: oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulesListParams {
    /// Only this agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// At most this many (the gateway's default and cap apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// `schedules.list`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulesListResult {
    /// Oldest first.
    pub schedules: Vec<Schedule>,
    /// The next page's cursor (absent on the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
}
