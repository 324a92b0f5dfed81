// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// The method table: what each method needs, does and returns.

import type * as T from "./types.js";

/** What a method does: `read` is safe to retry; `write` acts. */
export type Effect = "read" | "write";

/** Whether a method is served: `unsupported` ones answer `unsupported`. */
export type Stability = "stable" | "experimental" | "unsupported";

/** One method's row of the table. */
export interface MethodInfo {
  /** The scope a token needs. */
  readonly scope: T.Scope;
  /** Whether it reads or writes. */
  readonly effect: Effect;
  /** Whether it is served. */
  readonly stability: Stability;
  /** Whether its params take an `idempotencyKey`. */
  readonly idempotencyKey: boolean;
  /** Its params' schema name. */
  readonly params: string;
  /** Its result's schema name. */
  readonly result: string;
  /** Every error code it may return. */
  readonly errors: readonly T.ErrorCode[];
}

/** The method table. */
export const METHODS = {
  "agents.list": {
    scope: "agent.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "AgentsListParams",
    result: "AgentsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "agents.get": {
    scope: "agent.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "AgentRef",
    result: "Agent",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "agents.create": {
    scope: "admin",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "AgentsCreateParams",
    result: "Agent",
    errors: ["invalid_request", "unauthenticated", "forbidden", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "agents.update": {
    scope: "admin",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "AgentsUpdateParams",
    result: "Agent",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.list": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "SessionsListParams",
    result: "SessionsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "sessions.create": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionsCreateParams",
    result: "Session",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.resolve": {
    scope: "session.write",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "SessionsResolveParams",
    result: "Session",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "sessions.update": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionsUpdateParams",
    result: "Session",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "sessions.send": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionsSendParams",
    result: "RunAccepted",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.messages": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "SessionsMessagesParams",
    result: "SessionsMessagesResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "sessions.fork": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionsForkParams",
    result: "Session",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.compact": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionActionParams",
    result: "Session",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.abort": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionActionParams",
    result: "SessionsAbortResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "sessions.delete": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "SessionActionParams",
    result: "SessionsDeleteResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "runs.create": {
    scope: "agent.run",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "RunsCreateParams",
    result: "RunAccepted",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "runs.list": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "RunsListParams",
    result: "RunsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "usage.summary": {
    scope: "session.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "UsageSummaryParams",
    result: "UsageSummary",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "runs.get": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "RunRef",
    result: "Run",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "runs.events": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "RunsEventsParams",
    result: "RunsEventsResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "runs.wait": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "RunsWaitParams",
    result: "RunResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "runs.cancel": {
    scope: "agent.run",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "RunsCancelParams",
    result: "Run",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "runs.delete": {
    scope: "session.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "RunsDeleteParams",
    result: "Run",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "tasks.list": {
    scope: "task.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "TasksListParams",
    result: "TasksListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "tasks.get": {
    scope: "task.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "TaskRef",
    result: "Task",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "tasks.cancel": {
    scope: "task.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "TasksCancelParams",
    result: "Task",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "tasks.notify": {
    scope: "task.write",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "TasksNotifyParams",
    result: "Task",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "tasks.events": {
    scope: "task.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "TasksEventsParams",
    result: "TasksEventsResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "schedules.list": {
    scope: "schedule.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "SchedulesListParams",
    result: "SchedulesListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "schedules.get": {
    scope: "schedule.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "ScheduleRef",
    result: "Schedule",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "schedules.create": {
    scope: "schedule.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "SchedulesCreateParams",
    result: "Schedule",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal", "quota_exceeded"],
  },
  "schedules.update": {
    scope: "schedule.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "SchedulesUpdateParams",
    result: "Schedule",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "schedules.run": {
    scope: "schedule.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "ScheduleAction",
    result: "Task",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "schedules.delete": {
    scope: "schedule.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "ScheduleAction",
    result: "Schedule",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "models.list": {
    scope: "agent.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ModelsListParams",
    result: "ModelsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "models.status": {
    scope: "agent.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "Empty",
    result: "ModelsStatusResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "tools.list": {
    scope: "agent.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ToolsListParams",
    result: "ToolsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "tools.invoke": {
    scope: "tools.invoke",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "ToolsInvokeParams",
    result: "ToolsInvokeResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "timeout", "internal"],
  },
  "artifacts.list": {
    scope: "artifacts.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ArtifactsListParams",
    result: "ArtifactsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "artifacts.get": {
    scope: "artifacts.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ArtifactRef",
    result: "ArtifactSummary",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "artifacts.download": {
    scope: "artifacts.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ArtifactRef",
    result: "ArtifactsDownloadResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "approvals.list": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "ApprovalsListParams",
    result: "ApprovalsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "approvals.get": {
    scope: "session.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "ApprovalRef",
    result: "Approval",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "approvals.respond": {
    scope: "approval.respond",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "ApprovalsRespondParams",
    result: "Approval",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "questions.list": {
    scope: "session.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "QuestionsListParams",
    result: "QuestionsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "questions.respond": {
    scope: "approval.respond",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "QuestionsRespondParams",
    result: "Question",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "environments.list": {
    scope: "agent.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "EnvironmentsListParams",
    result: "EnvironmentsListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "environments.create": {
    scope: "environment.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "EnvironmentsCreateParams",
    result: "Environment",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"],
  },
  "environments.status": {
    scope: "agent.read",
    effect: "read",
    stability: "experimental",
    idempotencyKey: false,
    params: "EnvironmentRef",
    result: "Environment",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "environments.delete": {
    scope: "environment.write",
    effect: "write",
    stability: "experimental",
    idempotencyKey: true,
    params: "EnvironmentsDeleteParams",
    result: "Environment",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "events.subscribe": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "EventsSubscribeParams",
    result: "EventsSubscribeResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "cursor_expired", "internal"],
  },
  "events.unsubscribe": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "EventsUnsubscribeParams",
    result: "Empty",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
  "tokens.ticket": {
    scope: "session.read",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "TokensTicketParams",
    result: "StreamTicket",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "tokens.create": {
    scope: "admin",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "TokensCreateParams",
    result: "CreatedToken",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "tokens.list": {
    scope: "admin",
    effect: "read",
    stability: "stable",
    idempotencyKey: false,
    params: "TokensListParams",
    result: "TokensListResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "rate_limited", "unavailable", "internal"],
  },
  "tokens.revoke": {
    scope: "admin",
    effect: "write",
    stability: "stable",
    idempotencyKey: true,
    params: "TokensRevokeParams",
    result: "TokensRevokeResult",
    errors: ["invalid_request", "unauthenticated", "forbidden", "not_found", "rate_limited", "unavailable", "internal"],
  },
} as const satisfies Record<string, MethodInfo>;

/** A method's name. */
export type MethodName = keyof typeof METHODS;

/** Each method's params and result types. */
export interface MethodTypes {
  "agents.list": { params: T.AgentsListParams; result: T.AgentsListResult };
  "agents.get": { params: T.AgentRef; result: T.Agent };
  "agents.create": { params: T.AgentsCreateParams; result: T.Agent };
  "agents.update": { params: T.AgentsUpdateParams; result: T.Agent };
  "sessions.list": { params: T.SessionsListParams; result: T.SessionsListResult };
  "sessions.create": { params: T.SessionsCreateParams; result: T.Session };
  "sessions.resolve": { params: T.SessionsResolveParams; result: T.Session };
  "sessions.update": { params: T.SessionsUpdateParams; result: T.Session };
  "sessions.send": { params: T.SessionsSendParams; result: T.RunAccepted };
  "sessions.messages": { params: T.SessionsMessagesParams; result: T.SessionsMessagesResult };
  "sessions.fork": { params: T.SessionsForkParams; result: T.Session };
  "sessions.compact": { params: T.SessionActionParams; result: T.Session };
  "sessions.abort": { params: T.SessionActionParams; result: T.SessionsAbortResult };
  "sessions.delete": { params: T.SessionActionParams; result: T.SessionsDeleteResult };
  "runs.create": { params: T.RunsCreateParams; result: T.RunAccepted };
  "runs.list": { params: T.RunsListParams; result: T.RunsListResult };
  "usage.summary": { params: T.UsageSummaryParams; result: T.UsageSummary };
  "runs.get": { params: T.RunRef; result: T.Run };
  "runs.events": { params: T.RunsEventsParams; result: T.RunsEventsResult };
  "runs.wait": { params: T.RunsWaitParams; result: T.RunResult };
  "runs.cancel": { params: T.RunsCancelParams; result: T.Run };
  "runs.delete": { params: T.RunsDeleteParams; result: T.Run };
  "tasks.list": { params: T.TasksListParams; result: T.TasksListResult };
  "tasks.get": { params: T.TaskRef; result: T.Task };
  "tasks.cancel": { params: T.TasksCancelParams; result: T.Task };
  "tasks.notify": { params: T.TasksNotifyParams; result: T.Task };
  "tasks.events": { params: T.TasksEventsParams; result: T.TasksEventsResult };
  "schedules.list": { params: T.SchedulesListParams; result: T.SchedulesListResult };
  "schedules.get": { params: T.ScheduleRef; result: T.Schedule };
  "schedules.create": { params: T.SchedulesCreateParams; result: T.Schedule };
  "schedules.update": { params: T.SchedulesUpdateParams; result: T.Schedule };
  "schedules.run": { params: T.ScheduleAction; result: T.Task };
  "schedules.delete": { params: T.ScheduleAction; result: T.Schedule };
  "models.list": { params: T.ModelsListParams; result: T.ModelsListResult };
  "models.status": { params: T.Empty; result: T.ModelsStatusResult };
  "tools.list": { params: T.ToolsListParams; result: T.ToolsListResult };
  "tools.invoke": { params: T.ToolsInvokeParams; result: T.ToolsInvokeResult };
  "artifacts.list": { params: T.ArtifactsListParams; result: T.ArtifactsListResult };
  "artifacts.get": { params: T.ArtifactRef; result: T.ArtifactSummary };
  "artifacts.download": { params: T.ArtifactRef; result: T.ArtifactsDownloadResult };
  "approvals.list": { params: T.ApprovalsListParams; result: T.ApprovalsListResult };
  "approvals.get": { params: T.ApprovalRef; result: T.Approval };
  "approvals.respond": { params: T.ApprovalsRespondParams; result: T.Approval };
  "questions.list": { params: T.QuestionsListParams; result: T.QuestionsListResult };
  "questions.respond": { params: T.QuestionsRespondParams; result: T.Question };
  "environments.list": { params: T.EnvironmentsListParams; result: T.EnvironmentsListResult };
  "environments.create": { params: T.EnvironmentsCreateParams; result: T.Environment };
  "environments.status": { params: T.EnvironmentRef; result: T.Environment };
  "environments.delete": { params: T.EnvironmentsDeleteParams; result: T.Environment };
  "events.subscribe": { params: T.EventsSubscribeParams; result: T.EventsSubscribeResult };
  "events.unsubscribe": { params: T.EventsUnsubscribeParams; result: T.Empty };
  "tokens.ticket": { params: T.TokensTicketParams; result: T.StreamTicket };
  "tokens.create": { params: T.TokensCreateParams; result: T.CreatedToken };
  "tokens.list": { params: T.TokensListParams; result: T.TokensListResult };
  "tokens.revoke": { params: T.TokensRevokeParams; result: T.TokensRevokeResult };
}
