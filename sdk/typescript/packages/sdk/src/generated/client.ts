// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// The low-level client: one namespace per resource, one function per method
// of the table.

import { PagePromise } from "../pages.js";
import type { MethodName, MethodTypes } from "./methods.js";
import type * as T from "./types.js";

/** Per-call options: cancellation, a deadline, retries. */
export interface CallOptions {
  /** Aborts the call (and its retries). */
  signal?: AbortSignal;
  /** Gives up after this many milliseconds, retries included. */
  timeoutMs?: number;
  /** How many times a retryable failure is tried again (default: the client's). */
  maxRetries?: number;
}

/** What sends a call: the SDK's transport. */
export interface Caller {
  call<M extends MethodName>(
    method: M,
    params: MethodTypes[M]["params"],
    options?: CallOptions,
  ): Promise<MethodTypes[M]["result"]>;
}

/** The `agents.*` methods. */
export interface AgentsMethods {
  /**
   * The agents the token may see.
   *
   * `agents.list`: needs `agent.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.AgentsListParams, options?: CallOptions): PagePromise<T.AgentsListResult, T.AgentsListResult["agents"][number]>;
  /**
   * One agent.
   *
   * `agents.get`: needs `agent.read`; reads, retried on a retryable error; stable.
   */
  get(agentId: T.AgentRef["agentId"], options?: CallOptions): Promise<T.Agent>;
  /**
   * Creates an agent (beside the config file's).
   *
   * `agents.create`: needs `admin`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  create(params: T.AgentsCreateParams, options?: CallOptions): Promise<T.Agent>;
  /**
   * Changes an agent created through the API.
   *
   * `agents.update`: needs `admin`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  update(agentId: T.AgentsUpdateParams["agentId"], params?: Omit<T.AgentsUpdateParams, "agentId">, options?: CallOptions): Promise<T.Agent>;
}

/** The `sessions.*` methods. */
export interface SessionsMethods {
  /**
   * Sessions, most recently updated first.
   *
   * `sessions.list`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.SessionsListParams, options?: CallOptions): PagePromise<T.SessionsListResult, T.SessionsListResult["sessions"][number]>;
  /**
   * Creates a session.
   *
   * `sessions.create`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  create(params: T.SessionsCreateParams, options?: CallOptions): Promise<T.Session>;
  /**
   * The session with a key (created if absent).
   *
   * `sessions.resolve`: needs `session.write`; reads, retried on a retryable error; stable.
   */
  resolve(params: T.SessionsResolveParams, options?: CallOptions): Promise<T.Session>;
  /**
   * Changes a session's metadata (`session.updated` on the log).
   *
   * `sessions.update`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  update(sessionId: T.SessionsUpdateParams["sessionId"], params: Omit<T.SessionsUpdateParams, "sessionId">, options?: CallOptions): Promise<T.Session>;
  /**
   * Sends a user message, starting a run.
   *
   * `sessions.send`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  send(sessionId: T.SessionsSendParams["sessionId"], params: Omit<T.SessionsSendParams, "sessionId">, options?: CallOptions): Promise<T.RunAccepted>;
  /**
   * A session's messages, oldest first.
   *
   * `sessions.messages`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  messages(sessionId: T.SessionsMessagesParams["sessionId"], params?: Omit<T.SessionsMessagesParams, "sessionId">, options?: CallOptions): Promise<T.SessionsMessagesResult>;
  /**
   * Forks a session at a message.
   *
   * `sessions.fork`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  fork(sessionId: T.SessionsForkParams["sessionId"], params?: Omit<T.SessionsForkParams, "sessionId">, options?: CallOptions): Promise<T.Session>;
  /**
   * Compacts a session's history.
   *
   * `sessions.compact`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  compact(sessionId: T.SessionActionParams["sessionId"], params?: Omit<T.SessionActionParams, "sessionId">, options?: CallOptions): Promise<T.Session>;
  /**
   * Cancels a session's running runs.
   *
   * `sessions.abort`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  abort(sessionId: T.SessionActionParams["sessionId"], params?: Omit<T.SessionActionParams, "sessionId">, options?: CallOptions): Promise<T.SessionsAbortResult>;
  /**
   * Deletes a session: its messages, its runs and everything they made (events, approvals, questions, artifacts, cells), so that the store's quota recovers. `conflict` while one of its runs has not ended.
   *
   * `sessions.delete`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  delete(sessionId: T.SessionActionParams["sessionId"], params?: Omit<T.SessionActionParams, "sessionId">, options?: CallOptions): Promise<T.SessionsDeleteResult>;
}

/** The `runs.*` methods. */
export interface RunsMethods {
  /**
   * Starts a run.
   *
   * `runs.create`: needs `agent.run`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  create(params: T.RunsCreateParams, options?: CallOptions): Promise<T.RunAccepted>;
  /**
   * Runs, newest first, filtered by status, agent, session and creation time, a page at a time.
   *
   * `runs.list`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.RunsListParams, options?: CallOptions): PagePromise<T.RunsListResult, T.RunsListResult["runs"][number]>;
  /**
   * One run.
   *
   * `runs.get`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  get(runId: T.RunRef["runId"], options?: CallOptions): Promise<T.Run>;
  /**
   * A run's events after a cursor.
   *
   * `runs.events`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  events(runId: T.RunsEventsParams["runId"], params?: Omit<T.RunsEventsParams, "runId">, options?: CallOptions): Promise<T.RunsEventsResult>;
  /**
   * Waits for a run to end (or for the deadline: `accepted`).
   *
   * `runs.wait`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  wait(runId: T.RunsWaitParams["runId"], params?: Omit<T.RunsWaitParams, "runId">, options?: CallOptions): Promise<T.RunResult>;
  /**
   * Cancels a run.
   *
   * `runs.cancel`: needs `agent.run`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  cancel(runId: T.RunsCancelParams["runId"], params?: Omit<T.RunsCancelParams, "runId">, options?: CallOptions): Promise<T.Run>;
  /**
   * Deletes an ended run with its events, approvals, questions, artifacts and cells (its messages stay in its session's conversation); answers the run as it was. `conflict` while it has not ended.
   *
   * `runs.delete`: needs `session.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  delete(runId: T.RunsDeleteParams["runId"], params?: Omit<T.RunsDeleteParams, "runId">, options?: CallOptions): Promise<T.Run>;
}

/** The `usage.*` methods. */
export interface UsageMethods {
  /**
   * The tokens and cost of the runs the caller may read, by UTC day, agent and model, over a window of at most 366 days.
   *
   * `usage.summary`: needs `session.read`; reads, retried on a retryable error; experimental.
   */
  summary(params?: T.UsageSummaryParams, options?: CallOptions): Promise<T.UsageSummary>;
}

/** The `tasks.*` methods. */
export interface TasksMethods {
  /**
   * Background tasks, newest first: sub-agents a run spawned and the firings of schedules. A bound token sees its subject's.
   *
   * `tasks.list`: needs `task.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.TasksListParams, options?: CallOptions): PagePromise<T.TasksListResult, T.TasksListResult["tasks"][number]>;
  /**
   * One task.
   *
   * `tasks.get`: needs `task.read`; reads, retried on a retryable error; stable.
   */
  get(taskId: T.TaskRef["taskId"], options?: CallOptions): Promise<T.Task>;
  /**
   * Cancels a task that has not ended (and the run it tracks); answers it `cancelled`. `conflict` once it has ended.
   *
   * `tasks.cancel`: needs `task.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  cancel(taskId: T.TasksCancelParams["taskId"], params?: Omit<T.TasksCancelParams, "taskId">, options?: CallOptions): Promise<T.Task>;
  /**
   * Changes how a task's result reaches the session that started it. `conflict` once it has ended.
   *
   * `tasks.notify`: needs `task.write`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  notify(taskId: T.TasksNotifyParams["taskId"], params: Omit<T.TasksNotifyParams, "taskId">, options?: CallOptions): Promise<T.Task>;
  /**
   * A task's events after a cursor: its `task.updated` events and the events of the run it tracks.
   *
   * `tasks.events`: needs `task.read`; reads, retried on a retryable error; stable.
   */
  events(taskId: T.TasksEventsParams["taskId"], params?: Omit<T.TasksEventsParams, "taskId">, options?: CallOptions): Promise<T.TasksEventsResult>;
}

/** The `schedules.*` methods. */
export interface SchedulesMethods {
  /**
   * Schedules, oldest first: runs of an agent the clock starts. A bound token sees the schedules its subject made.
   *
   * `schedules.list`: needs `schedule.read`; reads, retried on a retryable error; experimental.
   */
  list(params?: T.SchedulesListParams, options?: CallOptions): PagePromise<T.SchedulesListResult, T.SchedulesListResult["schedules"][number]>;
  /**
   * One schedule.
   *
   * `schedules.get`: needs `schedule.read`; reads, retried on a retryable error; experimental.
   */
  get(params: T.ScheduleRef, options?: CallOptions): Promise<T.Schedule>;
  /**
   * Makes a schedule (OpenClaw's `cron.add` job): its firings run the agent as the calling token's subject.
   *
   * `schedules.create`: needs `schedule.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  create(params: T.SchedulesCreateParams, options?: CallOptions): Promise<T.Schedule>;
  /**
   * Changes a schedule: pauses it (`enabled: false`), resumes it, or replaces its time, payload, name or catch-up policy.
   *
   * `schedules.update`: needs `schedule.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  update(params: T.SchedulesUpdateParams, options?: CallOptions): Promise<T.Schedule>;
  /**
   * Fires a schedule now, paused or not; answers the firing's task. `conflict` while its last firing is still live.
   *
   * `schedules.run`: needs `schedule.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  run(params: T.ScheduleAction, options?: CallOptions): Promise<T.Task>;
  /**
   * Deletes a schedule (its firings' tasks and runs stay); answers it as it was.
   *
   * `schedules.delete`: needs `schedule.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  delete(params: T.ScheduleAction, options?: CallOptions): Promise<T.Schedule>;
}

/** The `models.*` methods. */
export interface ModelsMethods {
  /**
   * The configured models.
   *
   * `models.list`: needs `agent.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.ModelsListParams, options?: CallOptions): PagePromise<T.ModelsListResult, T.ModelsListResult["models"][number]>;
  /**
   * Providers' credentials (the gateway's `models.authStatus`).
   *
   * `models.status`: needs `agent.read`; reads, retried on a retryable error; stable.
   */
  status(options?: CallOptions): Promise<T.ModelsStatusResult>;
}

/** The `tools.*` methods. */
export interface ToolsMethods {
  /**
   * The ToolSpace of an agent.
   *
   * `tools.list`: needs `agent.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.ToolsListParams, options?: CallOptions): PagePromise<T.ToolsListResult, T.ToolsListResult["tools"][number]>;
  /**
   * Calls one tool directly, through policy and approvals.
   *
   * `tools.invoke`: needs `tools.invoke`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  invoke(tool: T.ToolsInvokeParams["tool"], params: Omit<T.ToolsInvokeParams, "tool">, options?: CallOptions): Promise<T.ToolsInvokeResult>;
}

/** The `artifacts.*` methods. */
export interface ArtifactsMethods {
  /**
   * Artifacts of a run or session.
   *
   * `artifacts.list`: needs `artifacts.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.ArtifactsListParams, options?: CallOptions): PagePromise<T.ArtifactsListResult, T.ArtifactsListResult["artifacts"][number]>;
  /**
   * One artifact's summary.
   *
   * `artifacts.get`: needs `artifacts.read`; reads, retried on a retryable error; stable.
   */
  get(artifactId: T.ArtifactRef["artifactId"], params?: Omit<T.ArtifactRef, "artifactId">, options?: CallOptions): Promise<T.ArtifactSummary>;
  /**
   * Where to download an artifact's bytes.
   *
   * `artifacts.download`: needs `artifacts.read`; reads, retried on a retryable error; stable.
   */
  download(artifactId: T.ArtifactRef["artifactId"], params?: Omit<T.ArtifactRef, "artifactId">, options?: CallOptions): Promise<T.ArtifactsDownloadResult>;
}

/** The `approvals.*` methods. */
export interface ApprovalsMethods {
  /**
   * Approvals, filtered.
   *
   * `approvals.list`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  list(params?: T.ApprovalsListParams, options?: CallOptions): PagePromise<T.ApprovalsListResult, T.ApprovalsListResult["approvals"][number]>;
  /**
   * One approval, pending or resolved (what the dashboard's `/approve/{id}` page shows).
   *
   * `approvals.get`: needs `session.read`; reads, retried on a retryable error; experimental.
   */
  get(approvalId: T.ApprovalRef["approvalId"], options?: CallOptions): Promise<T.Approval>;
  /**
   * Decides an approval (the first decision wins).
   *
   * `approvals.respond`: needs `approval.respond`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  respond(approvalId: T.ApprovalsRespondParams["approvalId"], params: Omit<T.ApprovalsRespondParams, "approvalId">, options?: CallOptions): Promise<T.Approval>;
}

/** The `questions.*` methods. */
export interface QuestionsMethods {
  /**
   * Questions, filtered.
   *
   * `questions.list`: needs `session.read`; reads, retried on a retryable error; experimental.
   */
  list(params?: T.QuestionsListParams, options?: CallOptions): PagePromise<T.QuestionsListResult, T.QuestionsListResult["questions"][number]>;
  /**
   * Answers a question.
   *
   * `questions.respond`: needs `approval.respond`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  respond(questionId: T.QuestionsRespondParams["questionId"], params: Omit<T.QuestionsRespondParams, "questionId">, options?: CallOptions): Promise<T.Question>;
}

/** The `environments.*` methods. */
export interface EnvironmentsMethods {
  /**
   * Managed environments.
   *
   * `environments.list`: needs `agent.read`; reads, retried on a retryable error; experimental.
   */
  list(params?: T.EnvironmentsListParams, options?: CallOptions): PagePromise<T.EnvironmentsListResult, T.EnvironmentsListResult["environments"][number]>;
  /**
   * Creates an environment: its provider prepares the workspace.
   *
   * `environments.create`: needs `environment.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  create(params: T.EnvironmentsCreateParams, options?: CallOptions): Promise<T.Environment>;
  /**
   * One environment's state.
   *
   * `environments.status`: needs `agent.read`; reads, retried on a retryable error; experimental.
   */
  status(environmentId: T.EnvironmentRef["environmentId"], options?: CallOptions): Promise<T.Environment>;
  /**
   * Deletes an environment, its workspace removed or kept by policy.
   *
   * `environments.delete`: needs `environment.write`; writes, given an idempotency key when none is passed and retried with it; experimental.
   */
  delete(environmentId: T.EnvironmentsDeleteParams["environmentId"], params?: Omit<T.EnvironmentsDeleteParams, "environmentId">, options?: CallOptions): Promise<T.Environment>;
}

/** The `events.*` methods. */
export interface EventsMethods {
  /**
   * Live events on this connection (WebSocket), after a replay.
   *
   * `events.subscribe`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  subscribe(params?: T.EventsSubscribeParams, options?: CallOptions): Promise<T.EventsSubscribeResult>;
  /**
   * Ends a subscription.
   *
   * `events.unsubscribe`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  unsubscribe(params: T.EventsUnsubscribeParams, options?: CallOptions): Promise<T.Empty>;
}

/** The `tokens.*` methods. */
export interface TokensMethods {
  /**
   * Mints a short-lived, single-use ticket that opens one event stream or WebSocket in place of the bearer token (`?ticket=`), for browsers, which cannot set headers on `EventSource` or `WebSocket`. Each call mints a new one, so a retry is safe.
   *
   * `tokens.ticket`: needs `session.read`; reads, retried on a retryable error; stable.
   */
  ticket(params?: T.TokensTicketParams, options?: CallOptions): Promise<T.StreamTicket>;
  /**
   * Mints a token with a name, scopes (or a preset) and a lifetime of at most 30 days: an app's backend makes one for its browser. The secret is in the answer only.
   *
   * `tokens.create`: needs `admin`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  create(params: T.TokensCreateParams, options?: CallOptions): Promise<T.CreatedToken>;
  /**
   * Tokens by id, a page at a time: never a secret or its hash; each with the token that minted it (`parentId`). Revoked ones only when asked.
   *
   * `tokens.list`: needs `admin`; reads, retried on a retryable error; stable.
   */
  list(params?: T.TokensListParams, options?: CallOptions): PagePromise<T.TokensListResult, T.TokensListResult["tokens"][number]>;
  /**
   * Revokes a token and every token minted under it (theirs too): each stops working at once, and its streams and sockets end within a second on every node. A retry answers the same tokens.
   *
   * `tokens.revoke`: needs `admin`; writes, given an idempotency key when none is passed and retried with it; stable.
   */
  revoke(params: T.TokensRevokeParams, options?: CallOptions): Promise<T.TokensRevokeResult>;
}

/** The whole method table as namespaces over one [`Caller`]. */
export class GatewayClient {
  readonly agents: AgentsMethods;
  readonly sessions: SessionsMethods;
  readonly runs: RunsMethods;
  readonly usage: UsageMethods;
  readonly tasks: TasksMethods;
  readonly schedules: SchedulesMethods;
  readonly models: ModelsMethods;
  readonly tools: ToolsMethods;
  readonly artifacts: ArtifactsMethods;
  readonly approvals: ApprovalsMethods;
  readonly questions: QuestionsMethods;
  readonly environments: EnvironmentsMethods;
  readonly events: EventsMethods;
  readonly tokens: TokensMethods;

  constructor(caller: Caller) {
    this.agents = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("agents.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.agents,
          (page) => page.nextCursor,
        ),
      get: (agentId, options) =>
        caller.call("agents.get", { agentId }, options),
      create: (params, options) =>
        caller.call("agents.create", params, options),
      update: (agentId, params, options) =>
        caller.call("agents.update", { ...params, agentId }, options),
    };
    this.sessions = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("sessions.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.sessions,
          (page) => page.nextCursor,
        ),
      create: (params, options) =>
        caller.call("sessions.create", params, options),
      resolve: (params, options) =>
        caller.call("sessions.resolve", params, options),
      update: (sessionId, params, options) =>
        caller.call("sessions.update", { ...params, sessionId }, options),
      send: (sessionId, params, options) =>
        caller.call("sessions.send", { ...params, sessionId }, options),
      messages: (sessionId, params, options) =>
        caller.call("sessions.messages", { ...params, sessionId }, options),
      fork: (sessionId, params, options) =>
        caller.call("sessions.fork", { ...params, sessionId }, options),
      compact: (sessionId, params, options) =>
        caller.call("sessions.compact", { ...params, sessionId }, options),
      abort: (sessionId, params, options) =>
        caller.call("sessions.abort", { ...params, sessionId }, options),
      delete: (sessionId, params, options) =>
        caller.call("sessions.delete", { ...params, sessionId }, options),
    };
    this.runs = {
      create: (params, options) =>
        caller.call("runs.create", params, options),
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("runs.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.runs,
          (page) => page.nextCursor,
        ),
      get: (runId, options) =>
        caller.call("runs.get", { runId }, options),
      events: (runId, params, options) =>
        caller.call("runs.events", { ...params, runId }, options),
      wait: (runId, params, options) =>
        caller.call("runs.wait", { ...params, runId }, options),
      cancel: (runId, params, options) =>
        caller.call("runs.cancel", { ...params, runId }, options),
      delete: (runId, params, options) =>
        caller.call("runs.delete", { ...params, runId }, options),
    };
    this.usage = {
      summary: (params, options) =>
        caller.call("usage.summary", params ?? {}, options),
    };
    this.tasks = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("tasks.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.tasks,
          (page) => page.nextCursor,
        ),
      get: (taskId, options) =>
        caller.call("tasks.get", { taskId }, options),
      cancel: (taskId, params, options) =>
        caller.call("tasks.cancel", { ...params, taskId }, options),
      notify: (taskId, params, options) =>
        caller.call("tasks.notify", { ...params, taskId }, options),
      events: (taskId, params, options) =>
        caller.call("tasks.events", { ...params, taskId }, options),
    };
    this.schedules = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("schedules.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.schedules,
          (page) => page.nextCursor,
        ),
      get: (params, options) =>
        caller.call("schedules.get", params, options),
      create: (params, options) =>
        caller.call("schedules.create", params, options),
      update: (params, options) =>
        caller.call("schedules.update", params, options),
      run: (params, options) =>
        caller.call("schedules.run", params, options),
      delete: (params, options) =>
        caller.call("schedules.delete", params, options),
    };
    this.models = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("models.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.models,
          (page) => page.nextCursor,
        ),
      status: (options) =>
        caller.call("models.status", {}, options),
    };
    this.tools = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("tools.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.tools,
          (page) => page.nextCursor,
        ),
      invoke: (tool, params, options) =>
        caller.call("tools.invoke", { ...params, tool }, options),
    };
    this.artifacts = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("artifacts.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.artifacts,
          (page) => page.nextCursor,
        ),
      get: (artifactId, params, options) =>
        caller.call("artifacts.get", { ...params, artifactId }, options),
      download: (artifactId, params, options) =>
        caller.call("artifacts.download", { ...params, artifactId }, options),
    };
    this.approvals = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("approvals.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.approvals,
          (page) => page.nextCursor,
        ),
      get: (approvalId, options) =>
        caller.call("approvals.get", { approvalId }, options),
      respond: (approvalId, params, options) =>
        caller.call("approvals.respond", { ...params, approvalId }, options),
    };
    this.questions = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("questions.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.questions,
          (page) => page.nextCursor,
        ),
      respond: (questionId, params, options) =>
        caller.call("questions.respond", { ...params, questionId }, options),
    };
    this.environments = {
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("environments.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.environments,
          (page) => page.nextCursor,
        ),
      create: (params, options) =>
        caller.call("environments.create", params, options),
      status: (environmentId, options) =>
        caller.call("environments.status", { environmentId }, options),
      delete: (environmentId, params, options) =>
        caller.call("environments.delete", { ...params, environmentId }, options),
    };
    this.events = {
      subscribe: (params, options) =>
        caller.call("events.subscribe", params ?? {}, options),
      unsubscribe: (params, options) =>
        caller.call("events.unsubscribe", params, options),
    };
    this.tokens = {
      ticket: (params, options) =>
        caller.call("tokens.ticket", params ?? {}, options),
      create: (params, options) =>
        caller.call("tokens.create", params, options),
      list: (params, options) =>
        new PagePromise(
          (cursor) =>
            caller.call("tokens.list", cursor === undefined ? params ?? {} : { ...(params ?? {}), cursor }, options),
          (page) => page.tokens,
          (page) => page.nextCursor,
        ),
      revoke: (params, options) =>
        caller.call("tokens.revoke", params, options),
    };
  }
}
