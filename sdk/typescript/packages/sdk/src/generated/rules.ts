// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// How a run's events fold into its status, and its status into its result:
// the protocol's `EventType::ended_status` and `RunResultStatus::of`.

import type { EventType, NotifyPolicy, RunResultStatus, RunStatus, Scope, ScopePreset, TaskKind, TaskStatus } from "./types.js";

/** Each event type that ends a run, and the run's status after it. */
export const RUN_ENDS: Readonly<Partial<Record<EventType, RunStatus>>> = {
  "run.completed": "completed",
  "run.failed": "failed",
  "run.cancelled": "cancelled",
  "run.timed_out": "timed_out",
};

/** The event types that end a run. */
export const TERMINAL_TYPES: readonly EventType[] = ["run.completed", "run.failed", "run.cancelled", "run.timed_out"];

/** The statuses a run ends in. */
export const TERMINAL_STATUSES: readonly RunStatus[] = ["completed", "failed", "cancelled", "timed_out"];

/** A run's status as its `RunResult` says it: `accepted` until it ends. */
export const RESULT_STATUS: Readonly<Record<RunStatus, RunResultStatus>> = {
  "queued": "accepted",
  "running": "accepted",
  "waiting": "accepted",
  "completed": "completed",
  "failed": "failed",
  "cancelled": "cancelled",
  "timed_out": "timed_out",
  "unknown": "accepted",
};

/** Every status a run has (not a newer server's). */
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "waiting", "completed", "failed", "cancelled", "timed_out"];

/** Every status a task has (not a newer server's). */
export const TASK_STATUSES: readonly TaskStatus[] = ["queued", "running", "succeeded", "failed", "timed_out", "cancelled", "lost"];

/** The statuses a task ends in. */
export const TASK_TERMINAL_STATUSES: readonly TaskStatus[] = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

/** Every kind of task (not a newer server's). */
export const TASK_KINDS: readonly TaskKind[] = ["subagent", "cron", "process"];

/** Every notification policy (not a newer server's). */
export const NOTIFY_POLICIES: readonly NotifyPolicy[] = ["done_only", "state_changes", "silent"];

/** The scopes each preset grants (`tokens.create`'s `preset`). */
export const SCOPE_PRESETS: Readonly<Record<ScopePreset, readonly Scope[]>> = {
  app: ["agent.read", "agent.run", "session.read", "session.write", "task.read", "schedule.read", "approval.respond", "artifacts.read"],
  viewer: ["agent.read", "session.read", "task.read", "schedule.read", "artifacts.read"],
  observer: ["agent.read", "session.read", "task.read", "schedule.read", "artifacts.read", "metrics.read"],
  admin: ["admin"],
};
