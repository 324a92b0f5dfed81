// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// Every type of the gateway protocol. Times are epoch milliseconds in fields
// named `…At`, durations milliseconds in fields named `…Ms`.

/** The protocol version this client speaks. */
export const PROTOCOL_VERSION = 1;

/** An agent. */
export interface Agent {
  /** When it was created (epoch milliseconds; API agents). */
  createdAt?: number | null;
  /** What the agent is for. */
  description?: string | null;
  /** The agent's id (`main` by default). */
  id: AgentId;
  /** The model, as `provider/model`. */
  model?: string | null;
  /** A display name. */
  name?: string | null;
  /** Where it is defined; config agents cannot be updated through the API. */
  source: AgentSource;
  /** When it last changed (epoch milliseconds; API agents). */
  updatedAt?: number | null;
}

/**
 * An agent's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type AgentId = string;

/** `agents.get`. */
export interface AgentRef {
  /** The agent. */
  agentId: AgentId;
}

/**
 * Where an agent is defined.
 *
 * - `config`: The config file's `agents.list`.
 * - `api`: Created through `agents.create`.
 * - `unknown`: A source this client does not know.
 */
export type AgentSource = "config" | "api" | "unknown";

/** `agents.create`. */
export interface AgentsCreateParams {
  /** What it is for. */
  description?: string | null;
  /** The new agent's id. */
  id: AgentId;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Its system instructions. */
  instructions?: string | null;
  /** Its model, `provider/model`. */
  model?: ModelRef | null;
  /** A display name. */
  name?: string | null;
}

/** `agents.list`. */
export interface AgentsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
}

/** `agents.list`. */
export interface AgentsListResult {
  /** Config agents first, then API agents by id. */
  agents: Agent[];
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
}

/** `agents.update`: the fields given replace the agent's. */
export interface AgentsUpdateParams {
  /** The agent (created through the API). */
  agentId: AgentId;
  /** What it is for. */
  description?: string | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Its system instructions. */
  instructions?: string | null;
  /** Its model, `provider/model`. */
  model?: ModelRef | null;
  /** A display name. */
  name?: string | null;
}

/**
 * An error as every transport carries it (over HTTP, inside
 * `{"error": ...}` with the code's status).
 */
export interface ApiError {
  /** The stable code. */
  code: ErrorCode;
  /**
   * Structured details: which fields appear depends on the code (each
   * field says where it is sent).
   */
  details?: ErrorDetails | null;
  /** A human-readable explanation; not for matching. */
  message: string;
  /**
   * When to retry, in milliseconds from now (`rate_limited`,
   * `unavailable`).
   */
  retryAfterMs?: number | null;
  /** Whether the same request may succeed later. */
  retryable: boolean;
}

/** An approval request and, once decided, its resolution. */
export interface Approval {
  /** The call's arguments, for the responder to review. */
  arguments?: unknown;
  /** When it was requested (epoch milliseconds). */
  createdAt: number;
  /** The decision taken. */
  decision?: ApprovalDecision | null;
  /** The decisions the responder may choose from. */
  decisions: ApprovalDecision[];
  /** The environment action for `environment` approvals. */
  environmentAction?: string | null;
  /** When it expires (epoch milliseconds); expiry resolves it as `expired`. */
  expiresAt?: number | null;
  /** The approval's id. */
  id: ApprovalId;
  /** What needs approval. */
  kind: ApprovalKind;
  /** The responder's reason. */
  reason?: string | null;
  /** When it was resolved (epoch milliseconds). */
  resolvedAt?: number | null;
  /** Whether a decision can be remembered for later matching calls. */
  reusable: boolean;
  /** How risky it is. */
  risk: RiskLevel;
  /** The run that asks. */
  runId: RunId;
  /** Its session. */
  sessionId?: SessionId | null;
  /** Where it is. */
  status: ApprovalStatus;
  /** The requested action, for a person to read. */
  summary: string;
  /** The call it gates (the model's call id, or a nested call's). */
  toolCallId?: string | null;
  /**
   * For `tool` approvals, the tool's catalog id
   * (`<source>:<owner>:<tool-name>`, e.g. `openclaw:core:write`), which
   * identifies it exactly: remembered decisions (`approve_session`,
   * `approve_always`) cover calls of this id, never of another tool with
   * the same name.
   */
  toolId?: string | null;
  /**
   * For `tool` approvals, the tool's name as the model calls it and
   * `tools.list` shows it (`write`, `exec`, an MCP tool's own name): what
   * an app's policy reads (`toolName === "exec"`). Names are not unique
   * (two MCP servers may each have a `write`): `toolId` says which tool
   * it is. Approvals stored before `toolId` existed have the catalog id
   * here instead.
   */
  toolName?: string | null;
}

/**
 * An answer to an approval request.
 *
 * - `approve_once`: Allow this call.
 * - `approve_session`: Allow matching calls for the rest of the session.
 * - `approve_always`: Allow matching calls from now on.
 * - `deny`: Refuse.
 * - `unknown`: A decision this client does not know.
 */
export type ApprovalDecision = "approve_once" | "approve_session" | "approve_always" | "deny" | "unknown";

/**
 * An approval's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type ApprovalId = string;

/**
 * What needs approval.
 *
 * - `tool`: A tool call.
 * - `environment`: An environment action.
 * - `unknown`: A kind this client does not know.
 */
export type ApprovalKind = "tool" | "environment" | "unknown";

/**
 * What the approval policy does with a tool's calls.
 *
 * - `allow`: They run.
 * - `deny`: They are refused.
 * - `ask`: They wait for a decision (`approvals.respond`).
 * - `unknown`: A policy this client does not know.
 */
export type ApprovalPolicy = "allow" | "deny" | "ask" | "unknown";

/** `approvals.get`. */
export interface ApprovalRef {
  /** The approval. */
  approvalId: ApprovalId;
}

/** `approval.resolved`. */
export interface ApprovalResolvedData {
  /** The approval. */
  approvalId: ApprovalId;
  /** The decision taken, if one was. */
  decision?: ApprovalDecision | null;
  /** The responder's reason. */
  reason?: string | null;
  /** Whether a remembered decision answered it (nobody was asked). */
  reused?: boolean;
  /** How it ended: `approved`, `denied`, `expired` or `cancelled`. */
  status: ApprovalStatus;
}

/**
 * Where an approval is.
 *
 * - `pending`: Waiting for a decision.
 * - `approved`: Approved.
 * - `denied`: Denied.
 * - `expired`: Nobody decided before it expired.
 * - `cancelled`: Its run ended first.
 * - `unknown`: A status this client does not know.
 */
export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled" | "unknown";

/** `approvals.list`. */
export interface ApprovalsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** Only this run's. */
  runId?: RunId | null;
  /** Only this session's. */
  sessionId?: SessionId | null;
  /** Only approvals in this state (`pending` for the open ones). */
  status?: ApprovalStatus | null;
}

/** `approvals.list`. */
export interface ApprovalsListResult {
  /** Oldest first. */
  approvals: Approval[];
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
}

/** `approvals.respond`: the first decision wins. */
export interface ApprovalsRespondParams {
  /** The approval. */
  approvalId: ApprovalId;
  /** The decision (one of the approval's `decisions`). */
  decision: ApprovalDecision;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Why, for the record. */
  reason?: string | null;
}

/** One argument of a tool, as the schema summary lists it. */
export interface ArgumentSummary {
  /** What it is, clipped to 200 characters. */
  description?: string | null;
  /** The argument's name. */
  name: string;
  /** Whether a call must give it. */
  required: boolean;
  /** Its JSON type(s), when the schema says (`string`, `number|null`). */
  type?: string | null;
}

/**
 * An artifact's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type ArtifactId = string;

/**
 * `artifacts.get` and `artifacts.download` (the seed's
 * `artifacts.get(artifactId, { runId })`).
 */
export interface ArtifactRef {
  /** The artifact. */
  artifactId: ArtifactId;
  /**
   * The run it belongs to: an artifact of another run (or of none)
   * is `not_found`, as a missing one is.
   */
  runId?: RunId | null;
}

/** The seed's `ArtifactSummary`. */
export interface ArtifactSummary {
  /** When it was created (epoch milliseconds). */
  createdAt: number;
  /** When it will be purged (epoch milliseconds). */
  expiresAt?: number | null;
  /** The artifact's id. */
  id: ArtifactId;
  /** Its MIME type. */
  mimeType?: string | null;
  /** The run that produced it. */
  runId?: RunId | null;
  /** Its session. */
  sessionId?: SessionId | null;
  /** Its size. */
  sizeBytes?: number | null;
  /** A title. */
  title?: string | null;
  /** What it is. */
  type: ArtifactType;
}

/**
 * What an artifact is.
 *
 * - `file`: A file written or edited.
 * - `patch`: A patch bundle.
 * - `diff`: A VCS diff.
 * - `log`: A log (e.g. shell output beyond its cap).
 * - `media`: Media output.
 * - `screenshot`: A screenshot.
 * - `trajectory`: A run's trajectory: its events and nested calls.
 * - `pull_request`: A pull request link.
 * - `workspace`: A managed environment's workspace snapshot.
 * - `unknown`: A type this client does not know.
 */
export type ArtifactType = "file" | "patch" | "diff" | "log" | "media" | "screenshot" | "trajectory" | "pull_request" | "workspace" | "unknown";

/** `artifacts.download`. */
export interface ArtifactsDownloadResult {
  /** The artifact. */
  artifact: ArtifactSummary;
  /**
   * Where to GET its bytes (relative to the gateway, with the same
   * token), e.g. `/v1/artifacts/{id}/content`.
   */
  url: string;
}

/** `artifacts.list`. */
export interface ArtifactsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** Only this run's artifacts. */
  runId?: RunId | null;
  /** Only this session's artifacts. */
  sessionId?: SessionId | null;
}

/** `artifacts.list`. */
export interface ArtifactsListResult {
  /** Newest first. */
  artifacts: ArtifactSummary[];
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
}

/**
 * `assistant.message`: one per model call (its text absent when the
 * model only called tools).
 */
export interface AssistantMessageData {
  /** The provider's finish reason. */
  finishReason?: string | null;
  /** The message's text. */
  text?: string | null;
  /** How many tool calls it asks for. */
  toolCalls: number;
  /**
   * This model call's tokens and cost (`costUsd` by the model's prices;
   * absent without them).
   */
  usage?: Usage | null;
}

/** One tool a run called. */
export interface CalledTool {
  /**
   * The catalog id (a client tool's name when the model called it by
   * name).
   */
  id: string;
  /** Whether a cell or a bridge made it (not the model by name). */
  nested: boolean;
  /**
   * Where the tool came from; absent for an id the catalog does not
   * have.
   */
  source?: ToolSource | null;
  /**
   * `ok`, `failed`, `not_found`, `blocked`, `aborted`, `cancelled`, or
   * `pending` (a client tool left for the app).
   */
  status: string;
}

/**
 * What a node does with a slot that passed while no node was up to fire
 * it (more than [`CATCH_UP_AFTER_MS`] late).
 *
 * - `run_once`: Fire once for all the slots missed, then go on from now (the default).
 * - `skip`: Fire none of them; go on from now.
 * - `unknown`: A policy this client does not know.
 */
export type CatchUp = "run_once" | "skip" | "unknown";

/**
 * A tool the client app implements, for one run. The model sees it by
 * name beside the agent's tools (in Code Mode, beside `exec` and `wait`).
 * A turn that calls it ends the run `completed` with the call pending
 * (`RunEndedData.pendingToolCalls`, `RunResult.output.messages`); the
 * app answers with `tool` messages as the input of its next run on the
 * session.
 */
export interface ClientTool {
  /** What it does, for the model. */
  description?: string | null;
  /**
   * Its name, as the model calls it (1 to 64 ASCII letters, digits,
   * `_` or `-`).
   */
  name: string;
  /** JSON Schema of its arguments. */
  parameters?: unknown;
}

/** Counts of limit failures in a run. */
export interface CodeModeLimitFailures {
  /** Steps that hit `memoryLimitBytes`. */
  memory: number;
  /** Steps that hit `maxOutputBytes`. */
  output: number;
  /** Snapshots over `maxSnapshotBytes` (or over the live-cell cap). */
  snapshot: number;
  /** Steps that hit `timeoutMs` while guest code was running. */
  timeout: number;
}

/** `tokens.create`'s answer: the secret, shown once. */
export interface CreatedToken {
  /** The agents it is bound to. */
  agents?: AgentId[] | null;
  /** When it expires, epoch milliseconds. */
  expiresAt: number;
  /** The token's id (`tok_...`), to revoke it. */
  id: TokenId;
  /** Its name. */
  name: string;
  /** What it may do. */
  scopes: Scope[];
  /** The subject it is bound to. */
  subject?: Subject | null;
  /**
   * The secret (`talon_` and 64 hex digits), for `Authorization:
   * Bearer`. The gateway keeps only its hash: it is never shown again.
   */
  token: string;
}

/**
 * A replay cursor: an event id, or a page's `nextCursor`.
 *
 * At most ID_MAX characters, no control characters.
 */
export type Cursor = string;

/**
 * Whether the messages a task's policy asks for reached its session.
 *
 * - `pending`: A message is due and not yet posted (one that failed to post is tried again by the next sweep).
 * - `delivered`: Every message due was posted.
 * - `parent_missing`: The session to tell was deleted before the message was posted (`deliveryError` says so); the result stays in the task.
 * - `not_applicable`: Nothing is due (`silent`).
 * - `unknown`: A status this client does not know.
 */
export type DeliveryStatus = "pending" | "delivered" | "parent_missing" | "not_applicable" | "unknown";

/** Nothing. */
export type Empty = Record<string, never>;

/** A managed environment runs execute in. */
export interface Environment {
  /** What its provider can do. */
  capabilities: EnvironmentCapabilities;
  /** When it was created (epoch milliseconds). */
  createdAt?: number | null;
  /** Why it failed, or what became of its workspace when deleted. */
  detail?: string | null;
  /** The environment's id. */
  id: EnvironmentId;
  /** Its provider's id. */
  provider: ProviderId;
  /**
   * The settings it was created with, as given (secrets appear only as
   * references, never as values).
   */
  settings?: unknown;
  /** Where it is. */
  status: EnvironmentStatus;
  /** The subject of the token that made it (absent: an unbound token's). */
  subject?: Subject | null;
  /** Where its workspace is, on the gateway's host. */
  workspace?: string | null;
}

/**
 * What an environment provider can do (the seed's `EnvironmentProvider`
 * capabilities).
 */
export interface EnvironmentCapabilities {
  /** Collects artifacts. */
  artifacts?: boolean | null;
  /** Checks out repositories. */
  checkout?: boolean | null;
  /** Streams logs. */
  logs?: boolean | null;
  /** Keeps running between runs. */
  longRunning?: boolean | null;
  /** Enforces a network policy. */
  networkPolicy?: boolean | null;
  /** Opens pull requests. */
  pullRequests?: boolean | null;
  /** Sandboxes execution. */
  sandbox?: boolean | null;
  /** Binds secrets by reference. */
  secrets?: boolean | null;
}

/**
 * A managed environment's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type EnvironmentId = string;

/** `environments.status`. */
export interface EnvironmentRef {
  /** The environment. */
  environmentId: EnvironmentId;
}

/**
 * Where an environment is.
 *
 * - `provisioning`: Being prepared.
 * - `ready`: Ready for runs.
 * - `stopped`: Stopped; kept by policy.
 * - `failed`: Failed to prepare or run.
 * - `deleted`: Deleted.
 * - `unknown`: A status this client does not know.
 */
export type EnvironmentStatus = "provisioning" | "ready" | "stopped" | "failed" | "deleted" | "unknown";

/** `environments.create`. */
export interface EnvironmentsCreateParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The provider. */
  provider: ProviderId;
  /** Provider-specific settings. */
  settings?: unknown;
}

/** `environments.delete`. */
export interface EnvironmentsDeleteParams {
  /** The environment. */
  environmentId: EnvironmentId;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
}

/** `environments.list`. */
export interface EnvironmentsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
}

/** `environments.list`. */
export interface EnvironmentsListResult {
  /** The environments. */
  environments: Environment[];
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
}

/**
 * What went wrong, as a stable code. Servers send only the codes listed
 * here; a client decodes a code it does not know as [`ErrorCode::Unknown`].
 *
 * - `invalid_request`: The request is malformed: bad JSON, a missing or wrong-typed field, a value out of range. Not worth retrying unchanged.
 * - `unauthenticated`: No token, or one that is unknown, expired or revoked.
 * - `forbidden`: The token lacks the scope the method needs (`details.scope` names it).
 * - `not_found`: The addressed resource does not exist, or the token may not see it.
 * - `conflict`: The request conflicts with the resource's state: an approval already decided, an idempotency key reused with other parameters.
 * - `rate_limited`: Too many requests; `retryAfterMs` says when to try again.
 * - `unavailable`: The gateway cannot serve this now (starting, draining, a dependency down); retryable.
 * - `unsupported`: The method exists in the protocol but this gateway does not implement it (the seed's "future API", e.g. `tasks.*`).
 * - `timeout`: The operation did not finish within its deadline.
 * - `cursor_expired`: An event cursor older than what the gateway keeps (`details.oldestId` names the oldest event still available).
 * - `internal`: A bug or an unexpected failure inside the gateway.
 * - `quota_exceeded`: The gateway keeps no more: its stored bytes reached the configured quota (`gateway.limits.maxStoredBytes`). Nothing was written; an operator (or retention) must free room first, so it is not retried.
 * - `method_not_allowed`: The path exists but not with this HTTP method (a `GET` on `/v1/<method>`, which takes `POST`); the `Allow` header says which.
 * - `unknown`: A code this client does not know (sent by a newer gateway).
 */
export type ErrorCode = "invalid_request" | "unauthenticated" | "forbidden" | "not_found" | "conflict" | "rate_limited" | "unavailable" | "unsupported" | "timeout" | "cursor_expired" | "internal" | "quota_exceeded" | "method_not_allowed" | "unknown";

/**
 * An error's structured details: every key the gateway sends, typed and
 * documented once here (the SDKs' types are generated from it); keys a
 * newer gateway adds are kept as they came (in Rust, in `other`).
 */
export interface ErrorDetails {
  /** `conflict` (`multitaskStrategy: reject`): the session's live runs. */
  activeRunIds?: RunId[];
  /** `conflict` on an approval: the decision that won. */
  approval?: Approval | null;
  /** A model call's failure (`provider_unreachable`): the provider's URL. */
  baseUrl?: string | null;
  /** A run's check that failed (`offeredTools`). */
  check?: string | null;
  /** `cursor_expired`: the cursor given. */
  cursor?: string | null;
  /** The underlying failure, as text (an unreadable store record). */
  detail?: string | null;
  /** `conflict` on an environment: the environment as it is. */
  environment?: Environment | null;
  /** `invalid_request`: every reason an answer was refused. */
  errors?: string[];
  /** `invalid_request`: the field at fault. */
  field?: string | null;
  /** An environment's SSH host (its configured name). */
  host?: string | null;
  /** `forbidden` on an SSH host: the hosts this gateway has (at most 20). */
  hosts?: string[];
  /** A model call's failure (`provider_stalled`): how long nothing came. */
  idleMs?: number | null;
  /**
   * `rate_limited`, `quota_exceeded`, a run's limit: which limit (the
   * config key's last part: `maxStreamsPerToken`, `maxTurns`, ...).
   */
  limit?: string | null;
  /** `unsupported`, `method_not_allowed`: the method asked for. */
  method?: string | null;
  /** A model call's failure (`unknown_model`): the model. */
  model?: string | null;
  /** A run interrupted with its node: the node. */
  node?: string | null;
  /** A run interrupted with its node: why it was not resumed. */
  notResumed?: string | null;
  /** `cursor_expired`: the oldest event still kept. */
  oldestId?: string | null;
  /** A tool call that did not complete: how it ended. */
  outcome?: string | null;
  /** A model call's failure: the provider. */
  provider?: string | null;
  /** `not_found` on an environment provider: the providers there are. */
  providers?: string[];
  /** `conflict` on a question: the answer that won. */
  question?: Question | null;
  /** `quota_exceeded`: the quota, in bytes. */
  quotaBytes?: number | null;
  /**
   * Why, as a stable word: `unauthenticated` (`missing`, `unknown`,
   * `expired`, `revoked`, `ticket`, ...), `forbidden` (`origin`,
   * `host`), `unavailable` (`starting`, `draining`, `store`,
   * `slow_reader`, ...), a run's failure (`interrupted`).
   */
  reason?: string | null;
  /** `quota_exceeded` on a workspace: the bytes still free. */
  roomBytes?: number | null;
  /** `tools.invoke`: the run that made the call. */
  runId?: RunId | null;
  /** `forbidden`: the scope the method needs. */
  scope?: string | null;
  /** `invalid_request` on a range: the content's size in bytes. */
  size?: number | null;
  /** A model call's failure: the provider's HTTP status. */
  status?: number | null;
  /** `quota_exceeded`: the bytes stored. */
  storedBytes?: number | null;
  /** A model call's failure (`provider_timeout`): the time limit. */
  timeoutMs?: number | null;
  /** `not_found` on a token: the token id. */
  tokenId?: string | null;
  /** A tool call's failure: the tool's error code. */
  toolError?: string | null;
  /** With `limit`: the limit's value. */
  value?: number | null;
  [key: string]: unknown;
}

/** The versioned event envelope (`OpenClawEvent`). */
export interface EventEnvelope {
  /** The agent. */
  agentId?: AgentId | null;
  /** The type's payload. */
  data: unknown;
  /**
   * The replay cursor: `events({after: id})` resumes after it. Ordered
   * within a run (and, once persisted, within a gateway).
   */
  id: EventId;
  /** The runtime-native payload, when a diagnostic scope asks for it. */
  raw?: unknown;
  /**
   * The gateway's request id (`x-request-id` on its answer, never a
   * client's) of the call that caused it: for what a run does
   * on its own, the call that created the run; for an event a later
   * call caused (cancelling a queued run), that call. Absent on what a
   * gateway does by itself (recovering a stopped node's runs).
   */
  requestId?: string | null;
  /** The run. */
  runId?: RunId | null;
  /** The session. */
  sessionId?: SessionId | null;
  /** The session key. */
  sessionKey?: SessionKey | null;
  /**
   * The session's subject (see `Session.subject`): set by the server's
   * log as it reads the event, never stored with it.
   */
  subject?: Subject | null;
  /** The background task, if any. */
  taskId?: TaskId | null;
  /** When it happened (epoch milliseconds). */
  ts: number;
  /** What happened. */
  type: EventType;
  /** Always 1 for this contract. */
  version: number;
}

/** A payload by event type (`{type, data}` on the wire). */
export type EventData = {
  data: RunCreatedData;
  type: "run.created";
} | {
  data: RunQueuedData;
  type: "run.queued";
} | {
  data: RunStartedData;
  type: "run.started";
} | {
  data: RunEndedData;
  type: "run.completed";
} | {
  data: RunEndedData;
  type: "run.failed";
} | {
  data: RunEndedData;
  type: "run.cancelled";
} | {
  data: RunEndedData;
  type: "run.timed_out";
} | {
  data: TextDelta;
  type: "assistant.delta";
} | {
  data: AssistantMessageData;
  type: "assistant.message";
} | {
  data: TextDelta;
  type: "thinking.delta";
} | {
  data: ToolCallStartedData;
  type: "tool.call.started";
} | {
  data: ToolCallDeltaData;
  type: "tool.call.delta";
} | {
  data: ToolCallCompletedData;
  type: "tool.call.completed";
} | {
  data: ToolCallFailedData;
  type: "tool.call.failed";
} | {
  data: Approval;
  type: "approval.requested";
} | {
  data: ApprovalResolvedData;
  type: "approval.resolved";
} | {
  data: Question;
  type: "question.requested";
} | {
  data: QuestionAnsweredData;
  type: "question.answered";
} | {
  data: ArtifactSummary;
  type: "artifact.created";
} | {
  data: ArtifactSummary;
  type: "artifact.updated";
} | {
  data: Session;
  type: "session.created";
} | {
  data: Session;
  type: "session.updated";
} | {
  data: SessionCompactedData;
  type: "session.compacted";
} | {
  data: Task;
  type: "task.updated";
} | {
  data: GitBranchData;
  type: "git.branch";
} | {
  data: GitDiffData;
  type: "git.diff";
} | {
  data: GitPrData;
  type: "git.pr";
};

/**
 * An event's id: its place in the log, the cursor `after` takes.
 *
 * At most ID_MAX characters, no control characters.
 */
export type EventId = string;

/**
 * Event types, spelled as the seed spells them.
 *
 * - `run.created`: The run was accepted.
 * - `run.queued`: The run waits for a session lane, runtime or environment.
 * - `run.started`: The runtime started the run.
 * - `run.completed`: The run finished successfully.
 * - `run.failed`: The run ended with an error.
 * - `run.cancelled`: The run was cancelled.
 * - `run.timed_out`: The run exceeded its own time limit.
 * - `assistant.delta`: A delta of assistant text.
 * - `assistant.message`: A whole assistant message.
 * - `thinking.delta`: A reasoning delta, where policy allows showing it.
 * - `tool.call.started`: A tool call started.
 * - `tool.call.delta`: A tool call streamed progress or partial output.
 * - `tool.call.completed`: A tool call returned.
 * - `tool.call.failed`: A tool call failed.
 * - `approval.requested`: A run or tool needs approval.
 * - `approval.resolved`: An approval was granted, denied, expired or cancelled.
 * - `question.requested`: The runtime asks the user or host app for input.
 * - `question.answered`: The host app answered.
 * - `artifact.created`: A new artifact is available.
 * - `artifact.updated`: An artifact changed.
 * - `session.created`: A session was created.
 * - `session.updated`: Session metadata changed.
 * - `session.compacted`: The session was compacted.
 * - `task.updated`: A background task changed state.
 * - `git.branch`: The runtime observed or changed a branch.
 * - `git.diff`: The runtime produced or changed a diff.
 * - `git.pr`: The runtime opened, updated or linked a pull request.
 * - `unknown`: A type this client does not know yet (`"unknown"`).
 */
export type EventType = "run.created" | "run.queued" | "run.started" | "run.completed" | "run.failed" | "run.cancelled" | "run.timed_out" | "assistant.delta" | "assistant.message" | "thinking.delta" | "tool.call.started" | "tool.call.delta" | "tool.call.completed" | "tool.call.failed" | "approval.requested" | "approval.resolved" | "question.requested" | "question.answered" | "artifact.created" | "artifact.updated" | "session.created" | "session.updated" | "session.compacted" | "task.updated" | "git.branch" | "git.diff" | "git.pr" | "unknown";

/**
 * `events.subscribe`: live events (after a replay from `after`) on
 * this connection.
 */
export interface EventsSubscribeParams {
  /** Replay every event after this id first. */
  after?: Cursor | null;
  /** Only this agent's events. */
  agentId?: AgentId | null;
  /** Only this session's events. */
  sessionKey?: SessionKey | null;
  /** Only these types. */
  types?: EventType[] | null;
}

/** `events.subscribe`. */
export interface EventsSubscribeResult {
  /** Names the subscription in `events.unsubscribe`. */
  subscriptionId: SubscriptionId;
}

/** `events.unsubscribe`. */
export interface EventsUnsubscribeParams {
  /** The subscription. */
  subscriptionId: SubscriptionId;
}

/** `git.branch`. */
export interface GitBranchData {
  /** `observed`, `created` or `switched`. */
  action: string;
  /** The branch. */
  branch: string;
  /** Its commit. */
  head?: string | null;
}

/** `git.diff`. */
export interface GitDiffData {
  /** Lines added. */
  additions: number;
  /** The `diff` artifact holding it. */
  artifactId?: ArtifactId | null;
  /** Lines removed. */
  deletions: number;
  /** Files changed. */
  files: string[];
}

/** `git.pr`. */
export interface GitPrData {
  /** `opened`, `updated` or `linked`. */
  action: string;
  /** Its number. */
  number?: number | null;
  /** Its title. */
  title?: string | null;
  /** The pull request's URL. */
  url: string;
}

/**
 * Makes a retried call safe: the same key with the same params returns
 *  the first call's result.
 *
 * At most KEY_MAX characters, no control characters.
 */
export type IdempotencyKey = string;

/** One message of a [`RunInput`]. */
export interface InputMessage {
  /** Its text (for `tool`, the result the model reads). */
  content: string;
  /** `user`, `assistant`, `system` or `tool`. */
  role: InputRole;
  /**
   * For `tool`: the client tool call it answers (a call the session's
   * last run left pending; see `RunEndedData.pendingToolCalls`).
   */
  toolCallId?: ToolCallId | null;
}

/**
 * Who wrote an [`InputMessage`].
 *
 * - `user`: The user or app.
 * - `assistant`: The model (a prior reply the app supplies).
 * - `system`: Instructions added to the system prompt.
 * - `tool`: A client tool's result: answers the pending call `toolCallId`. Tool messages come first in the input; a run whose input is only tool messages lets the model go on from them.
 */
export type InputRole = "user" | "assistant" | "system" | "tool";

/** One message of a session (the seed's `SDKMessage`). */
export interface Message {
  /** When it was stored (epoch milliseconds). */
  createdAt: number;
  /** The message's id (ordered within its session). */
  id: MessageId;
  /** Who wrote it. */
  role: MessageRole;
  /** The run that produced it (absent for user input stored before one). */
  runId?: RunId | null;
  /** Its session. */
  sessionId: SessionId;
  /** Its text. */
  text?: string | null;
  /** For a tool message, the call it answers. */
  toolCallId?: string | null;
  /** Tool calls the assistant asked for. */
  toolCalls?: MessageToolCall[];
}

/**
 * A message's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type MessageId = string;

/**
 * Who wrote a message.
 *
 * - `user`: The user or app.
 * - `assistant`: The model.
 * - `tool`: A tool's result.
 * - `system`: System instructions.
 * - `compaction`: A compaction record: `text` summarises the messages it replaced.
 * - `unknown`: A role this client does not know.
 */
export type MessageRole = "user" | "assistant" | "tool" | "system" | "compaction" | "unknown";

/** A tool call the assistant asked for. */
export interface MessageToolCall {
  /** The arguments. */
  arguments: unknown;
  /** The call's id, matched by the tool message's `toolCallId`. */
  id: string;
  /** The tool's name as the model saw it. */
  name: string;
}

/** A model an agent can use. */
export interface Model {
  /** Its context window in tokens, when known. */
  contextWindow?: number | null;
  /** `provider/model`. */
  id: string;
  /** The model's name at the provider. */
  name: string;
  /** The provider's id in the config. */
  provider: string;
}

/**
 * A model, `provider/model`.
 *
 * At most KEY_MAX characters, no control characters.
 */
export type ModelRef = string;

/** `models.list`. */
export interface ModelsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
}

/** `models.list`. */
export interface ModelsListResult {
  /** The configured models. */
  models: Model[];
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
}

/** `models.status`. */
export interface ModelsStatusResult {
  /** Per provider. */
  providers: ProviderStatus[];
}

/**
 * What a new run does when its session already has an active run.
 *
 * - `reject`: Refuse the new run with `conflict`.
 * - `enqueue`: Queue it (`run.queued`) until the session's lane is free.
 * - `interrupt`: Cancel the active run (its messages stay), then start.
 * - `rollback`: Cancel the active run and drop its messages, then start.
 */
export type MultitaskStrategy = "reject" | "enqueue" | "interrupt" | "rollback";

/**
 * How a task's result reaches the session that started it.
 *
 * - `done_only`: One message when it ends (the default).
 * - `state_changes`: A message when it starts, on each progress report, and when it ends.
 * - `silent`: No message: the ledger records it, and nothing more.
 * - `unknown`: A policy this client does not know.
 */
export type NotifyPolicy = "done_only" | "state_changes" | "silent" | "unknown";

/**
 * The kinds of payload (OpenClaw's `systemEvent` and others are not
 * served: a schedule's firing is always a run).
 *
 * - `agentTurn`: A run of the schedule's agent taking `message` as its input.
 */
export type PayloadKind = "agentTurn";

/**
 * An environment provider's id (`local`).
 *
 * At most ID_MAX characters, no control characters.
 */
export type ProviderId = string;

/**
 * A provider's credentials (`models.status`, the gateway's
 * `models.authStatus`).
 */
export interface ProviderStatus {
  /** Whether the gateway holds credentials for it. */
  authenticated: boolean;
  /** Why not, when it does not. */
  detail?: string | null;
  /** The provider's id in the config. */
  provider: string;
}

/** A question the runtime asks the user or host app. */
export interface Question {
  /** The answer given. */
  answer?: unknown;
  /** JSON Schema an answer must satisfy. */
  answerSchema?: unknown;
  /** When it was answered (epoch milliseconds). */
  answeredAt?: number | null;
  /** The answers to choose from, if it is a choice. */
  choices?: string[] | null;
  /** When it was asked (epoch milliseconds). */
  createdAt: number;
  /** When it expires (epoch milliseconds). */
  expiresAt?: number | null;
  /** The question's id. */
  id: QuestionId;
  /** What is asked. */
  prompt: string;
  /** The run that asks. */
  runId: RunId;
  /** Its session. */
  sessionId?: SessionId | null;
  /** Where it is. */
  status: QuestionStatus;
  /** The call that asks (the model's call id, or a nested call's). */
  toolCallId?: string | null;
}

/** `question.answered`. */
export interface QuestionAnsweredData {
  /** The answer. */
  answer: unknown;
  /** The question. */
  questionId: QuestionId;
}

/**
 * A question's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type QuestionId = string;

/**
 * Where a question is.
 *
 * - `pending`: Waiting for an answer.
 * - `answered`: Answered.
 * - `expired`: Nobody answered before it expired.
 * - `cancelled`: Its run ended first.
 * - `unknown`: A status this client does not know.
 */
export type QuestionStatus = "pending" | "answered" | "expired" | "cancelled" | "unknown";

/** `questions.list`. */
export interface QuestionsListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** Only this run's. */
  runId?: RunId | null;
  /** Only questions in this state. */
  status?: QuestionStatus | null;
}

/** `questions.list`. */
export interface QuestionsListResult {
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
  /** Oldest first. */
  questions: Question[];
}

/**
 * `questions.respond`: the answer is checked against the question's
 * schema or choices.
 */
export interface QuestionsRespondParams {
  /** The answer. */
  answer: unknown;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The question. */
  questionId: QuestionId;
}

/**
 * How risky the requested action is.
 *
 * - `low`: Reads only.
 * - `medium`: Writes data.
 * - `high`: Runs commands on the host or reaches outside the workspace.
 * - `critical`: Irreversible or security-relevant.
 * - `unknown`: A level this client does not know.
 */
export type RiskLevel = "low" | "medium" | "high" | "critical" | "unknown";

/** A run of an agent. */
export interface Run {
  /** The agent. */
  agentId: AgentId;
  /** When it was accepted (epoch milliseconds). */
  createdAt: number;
  /** When it ended (epoch milliseconds). */
  endedAt?: number | null;
  /** Why it failed. */
  error?: ApiError | null;
  /** The run's id. */
  id: RunId;
  /** The model it runs on, `provider/model`, once it has started. */
  model?: string | null;
  /** The session. */
  sessionId?: SessionId | null;
  /** The session's key. */
  sessionKey?: SessionKey | null;
  /** When it started running (epoch milliseconds). */
  startedAt?: number | null;
  /** Where it is. */
  status: RunStatus;
  /** Its session's subject (see [`Session::subject`]). */
  subject?: Subject | null;
  /**
   * Its input in one line: the first line of the user's message (of
   * the last user message, for messages), at most
   * [`RunInput::SUMMARY_CHARS`](super::RunInput::SUMMARY_CHARS)
   * characters (`…` marks a cut).
   */
  summary?: string | null;
  /** Tokens and cost so far. */
  usage?: Usage | null;
}

/**
 * What `runs.create` and `sessions.send` answer: the run accepted (or,
 * for a repeated idempotency key, the first one), with its id also as
 * `runId`, the name results and events give it.
 */
export interface RunAccepted {
  /** The agent. */
  agentId: AgentId;
  /** When it was accepted (epoch milliseconds). */
  createdAt: number;
  /** When it ended (epoch milliseconds). */
  endedAt?: number | null;
  /** Why it failed. */
  error?: ApiError | null;
  /** The run's id. */
  id: RunId;
  /** The model it runs on, `provider/model`, once it has started. */
  model?: string | null;
  /** The run's id (the same as `id`). */
  runId: RunId;
  /** The session. */
  sessionId?: SessionId | null;
  /** The session's key. */
  sessionKey?: SessionKey | null;
  /** When it started running (epoch milliseconds). */
  startedAt?: number | null;
  /** Where it is. */
  status: RunStatus;
  /** Its session's subject (see [`Session::subject`]). */
  subject?: Subject | null;
  /**
   * Its input in one line: the first line of the user's message (of
   * the last user message, for messages), at most
   * [`RunInput::SUMMARY_CHARS`](super::RunInput::SUMMARY_CHARS)
   * characters (`…` marks a cut).
   */
  summary?: string | null;
  /** Tokens and cost so far. */
  usage?: Usage | null;
}

/** `run.created`. */
export interface RunCreatedData {
  /** The user's input. */
  input: string;
}

/** `run.completed`, `run.failed`, `run.cancelled`, `run.timed_out`. */
export interface RunEndedData {
  /** Wall time. */
  durationMs: number;
  /** Why it did not complete. */
  error?: string | null;
  /**
   * Client tool calls the model made in its last turn, left for the
   * app to answer (with `tool` input messages on its next run).
   */
  pendingToolCalls?: MessageToolCall[];
  /**
   * The run's tool telemetry (absent for a run that failed before its
   * agent started).
   */
  telemetry?: ToolTelemetry | null;
  /** The final assistant text. */
  text?: string | null;
  /** Tool calls the model made. */
  toolCalls: number;
  /** Model turns taken. */
  turns: number;
  /** Tokens and cost. */
  usage: Usage;
}

/**
 * A run's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type RunId = string;

/**
 * A run's input: the user's message, or messages to add to the
 * session's conversation (the last one a user message).
 *
 * Decoded by hand rather than as an untagged enum, so that an error
 * inside a message names its path (`input[0].toolCallId`).
 */
export type RunInput = string | InputMessage[];

/** `RunResult.output`. */
export interface RunOutput {
  /** The run's messages. */
  messages?: Message[] | null;
  /** The final assistant text. */
  text?: string | null;
}

/** `run.queued`. */
export interface RunQueuedData {
  /**
   * What it waits for: `session` (another run holds the session's
   * lane), `runtime` (a node to execute it; also a run put back in the
   * queue to resume after the gateway executing it stopped) or
   * `environment`.
   */
  reason: string;
}

/** `runs.get`. */
export interface RunRef {
  /** The run. */
  runId: RunId;
}

/** What `runs.wait` returns: the seed's stable result envelope. */
export interface RunResult {
  /** The artifacts it produced. */
  artifacts?: ArtifactSummary[] | null;
  /** When it ended (epoch milliseconds). */
  endedAt?: number | null;
  /** Why it failed (the seed's `SDKError`). */
  error?: ApiError | null;
  /** Its output. */
  output?: RunOutput | null;
  /** The run. */
  runId: RunId;
  /** The session. */
  sessionId?: SessionId | null;
  /** The session's key. */
  sessionKey?: SessionKey | null;
  /** When it started (epoch milliseconds). */
  startedAt?: number | null;
  /** How it ended, or `accepted` if it has not. */
  status: RunResultStatus;
  /** The background task, if any. */
  taskId?: TaskId | null;
  /** Tokens and cost. */
  usage?: Usage | null;
}

/**
 * `RunResult.status`: `accepted` means the wait's deadline passed before
 * the run ended (not terminal); `timed_out` only that the run exceeded its
 * own time limit.
 *
 * - `accepted`: Still running when the wait's deadline passed.
 * - `completed`: Finished successfully.
 * - `failed`: Ended with an error.
 * - `cancelled`: Cancelled.
 * - `timed_out`: Exceeded its own time limit.
 * - `unknown`: A status this client does not know.
 */
export type RunResultStatus = "accepted" | "completed" | "failed" | "cancelled" | "timed_out" | "unknown";

/** `run.started`. */
export interface RunStartedData {
  /** The model, `provider/model`. */
  model: string;
  /**
   * Set when the run resumed after the gateway executing it stopped:
   * the turns it had completed (its conversation goes on from there).
   */
  resumedAfterTurn?: number | null;
  /** The tool surface: `direct`, `code_mode` or `tool_search`. */
  surface: string;
  /** The tools the model sees. */
  tools: string[];
}

/**
 * Where a run is in its life.
 *
 * - `queued`: Accepted, waiting for its session lane, runtime or environment.
 * - `running`: Running.
 * - `waiting`: Waiting for an approval or an answer.
 * - `completed`: Finished successfully.
 * - `failed`: Ended with an error.
 * - `cancelled`: Cancelled.
 * - `timed_out`: Exceeded its own time limit.
 * - `unknown`: A status this client does not know.
 */
export type RunStatus = "queued" | "running" | "waiting" | "completed" | "failed" | "cancelled" | "timed_out" | "unknown";

/** `runs.cancel`. */
export interface RunsCancelParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Why, for the record. */
  reason?: string | null;
  /** The run. */
  runId: RunId;
}

/** `runs.create`. */
export interface RunsCreateParams {
  /** The agent (`main` when absent, or the session's agent). */
  agentId?: AgentId | null;
  /**
   * The managed environment the run works in (its workspace, its
   * secrets, its network policy); it must be `ready`.
   */
  environmentId?: EnvironmentId | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's run and never starts a second.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The user's message, or the messages to add. */
  input: RunInput;
  /**
   * What to do when the session already has an active run
   * (`enqueue` when absent).
   */
  multitaskStrategy?: MultitaskStrategy | null;
  /** The session's id. */
  sessionId?: SessionId | null;
  /**
   * The session's key: that session, created if absent (a new
   * session when neither a key nor an id is given).
   */
  sessionKey?: SessionKey | null;
  /** The run's own time limit; `run.timed_out` past it. */
  timeoutMs?: number | null;
  /** Client tools the model may call this run. */
  tools?: ClientTool[];
}

/** `runs.delete`. */
export interface RunsDeleteParams {
  /**
   * Accepted for a retry's sake: a retry of a delete that went
   * through is `not_found`.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The run (it must have ended). */
  runId: RunId;
}

/**
 * `runs.events`: the events of the window between `after` and
 * `before`, the first `limit` of them or the last `last` (a long
 * run's tail first, then the pages before it), oldest first.
 */
export interface RunsEventsParams {
  /** Only events after this id (the replay cursor). */
  after?: Cursor | null;
  /**
   * Only events before this id (the first event of a page read
   * before).
   */
  before?: Cursor | null;
  /** The last this many of the window instead (not with `limit`). */
  last?: number | null;
  /** At most this many, from the window's start. */
  limit?: number | null;
  /** The run. */
  runId: RunId;
}

/** `runs.events`. */
export interface RunsEventsResult {
  /** Whether the run has ended and this page holds its terminal event. */
  done: boolean;
  /** In order. */
  events: EventEnvelope[];
}

/** `runs.list`: newest first; every filter given must hold. */
export interface RunsListParams {
  /** Only this agent's runs. */
  agentId?: AgentId | null;
  /** Only runs created at or after this time (epoch milliseconds). */
  createdAfter?: number | null;
  /** Only runs created before this time (epoch milliseconds). */
  createdBefore?: number | null;
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** Only this session's runs. */
  sessionId?: SessionId | null;
  /** Only runs in one of these states. */
  status?: RunStatus[] | null;
  /**
   * Only runs whose `summary` contains this text, ignoring the case of
   * ASCII letters.
   */
  text?: string | null;
}

/** `runs.list`'s answer. */
export interface RunsListResult {
  /** The next page's cursor (absent on the last page). */
  nextCursor?: Cursor | null;
  /** Newest first. */
  runs: Run[];
}

/** `runs.wait`. */
export interface RunsWaitParams {
  /** The run. */
  runId: RunId;
  /** Wait at most this long; past it the result is `accepted`. */
  timeoutMs?: number | null;
}

/** A schedule: an agent's run started by the clock. */
export interface Schedule {
  /** The agent each firing runs. */
  agentId: AgentId;
  /** What a node does with slots missed while none was up. */
  catchUp: CatchUp;
  /** When it was made (epoch milliseconds). */
  createdAt: number;
  /** Whether an `at` schedule is deleted once it fired. */
  deleteAfterRun: boolean;
  /** What it is for. */
  description?: string | null;
  /** Whether it fires (`false`: paused). */
  enabled: boolean;
  /** Its id. */
  id: ScheduleId;
  /** Its name, shown in lists. */
  name: string;
  /** What a firing runs. */
  payload: SchedulePayload;
  /** When it fires. */
  schedule: ScheduleSpec;
  /**
   * The session every firing runs in; absent: each in a session of its
   * own (`cron:<scheduleId>:<taskId>`).
   */
  sessionKey?: SessionKey | null;
  /** Where it is. */
  state: ScheduleState;
  /**
   * The subject of the token that made it: its firings' runs are that
   * subject's.
   */
  subject?: Subject | null;
  /** When it last changed (epoch milliseconds). */
  updatedAt: number;
}

/** `schedules.delete` and `schedules.run`. */
export interface ScheduleAction {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The schedule. */
  scheduleId: ScheduleId;
}

/**
 * A schedule's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type ScheduleId = string;

/** What a firing runs (OpenClaw's `payload`): one kind, `agentTurn`. */
export interface SchedulePayload {
  /** `agentTurn`: a run of the schedule's agent. */
  kind: PayloadKind;
  /** The run's input. */
  message: string;
  /** The run's time limit in seconds (default: the agent's). */
  timeoutSeconds?: number | null;
}

/** `schedules.get`. */
export interface ScheduleRef {
  /** The schedule. */
  scheduleId: ScheduleId;
}

/** When a schedule fires (OpenClaw's `schedule`). */
export type ScheduleSpec = {
  /** The time, e.g. `2026-12-24T18:00:00+01:00`. */
  at: string;
  kind: "at";
} | {
  /** The epoch millisecond the intervals are counted from. */
  anchorMs?: number | null;
  /** The interval, at least a second. */
  everyMs: number;
  kind: "every";
} | {
  /** The expression, e.g. `0 3 * * *` (every night at 03:00). */
  expr: string;
  kind: "cron";
  /** An IANA time zone, e.g. `Europe/Berlin` (default UTC). */
  tz?: string | null;
};

/** Where a schedule is (OpenClaw's `state`). */
export interface ScheduleState {
  /** How many times it fired. */
  firings: number;
  /** When it last fired (epoch milliseconds). */
  lastRunAt?: number | null;
  /** The task of its last firing (its status is that firing's). */
  lastTaskId?: TaskId | null;
  /**
   * When it fires next (epoch milliseconds); absent when it is paused
   * or will not fire again.
   */
  nextRunAt?: number | null;
  /**
   * How many slots it let pass without firing: its previous firing was
   * still live, or they were missed under `catchUp: skip`.
   */
  skipped: number;
}

/** `schedules.create`: OpenClaw's `cron.add` job. */
export interface SchedulesCreateParams {
  /** The agent each firing runs (default: `main`). */
  agentId?: AgentId | null;
  /** Missed slots (default `run_once`). */
  catchUp?: CatchUp | null;
  /**
   * Delete an `at` schedule once it fired (default `true` for `at`, as
   * OpenClaw's; refused for the other kinds).
   */
  deleteAfterRun?: boolean | null;
  /** What it is for. */
  description?: string | null;
  /** Whether it fires (default `true`). */
  enabled?: boolean | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Its name. */
  name: string;
  /** What a firing runs. */
  payload: SchedulePayload;
  /** When it fires. */
  schedule: ScheduleSpec;
  /** The session every firing runs in (default: one each). */
  sessionKey?: SessionKey | null;
}

/** `schedules.list`: oldest first. */
export interface SchedulesListParams {
  /** Only this agent's. */
  agentId?: AgentId | null;
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
}

/** `schedules.list`'s answer. */
export interface SchedulesListResult {
  /** The next page's cursor (absent on the last page). */
  nextCursor?: Cursor | null;
  /** Oldest first. */
  schedules: Schedule[];
}

/**
 * `schedules.update`: the fields given replace the schedule's; `enabled:
 * false` pauses it and `true` resumes it from now (no catch-up for the
 * time it was paused).
 */
export interface SchedulesUpdateParams {
  /** A new catch-up policy. */
  catchUp?: CatchUp | null;
  /** A new description. */
  description?: string | null;
  /** Pause (`false`) or resume (`true`). */
  enabled?: boolean | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** A new name. */
  name?: string | null;
  /** A new payload. */
  payload?: SchedulePayload | null;
  /** A new time (its next slot is counted from now). */
  schedule?: ScheduleSpec | null;
  /** The schedule. */
  scheduleId: ScheduleId;
}

/**
 * What a token may do. A method names the one scope it requires; `admin`
 * satisfies every scope.
 *
 * - `agent.read`: List and inspect agents.
 * - `agent.run`: Start runs.
 * - `session.read`: Read session metadata and messages.
 * - `session.write`: Create, send to, fork, compact and abort sessions.
 * - `task.read`: Read background task state.
 * - `task.write`: Cancel tasks or change their notification policy.
 * - `schedule.read`: Read schedules.
 * - `schedule.write`: Create, change, pause, run or delete schedules.
 * - `approval.respond`: Approve or deny requests (and answer questions).
 * - `tools.invoke`: Call exposed tools directly.
 * - `artifacts.read`: List and download artifacts.
 * - `environment.write`: Create or delete managed environments.
 * - `metrics.read`: Read the gateway's Prometheus metrics (`GET /metrics`).
 * - `admin`: Administrative operations; implies every other scope.
 * - `unknown`: A scope this client does not know (sent by a newer gateway): `"unknown"`, a decoder's catch-all that no token is granted.
 */
export type Scope = "agent.read" | "agent.run" | "session.read" | "session.write" | "task.read" | "task.write" | "schedule.read" | "schedule.write" | "approval.respond" | "tools.invoke" | "artifacts.read" | "environment.write" | "metrics.read" | "admin" | "unknown";

/**
 * A named set of scopes, for people: `talon token create --scope app`,
 * `tokens.create {preset: "app"}`.
 *
 * - `app`: What an app's backend needs: run agents, follow their events and results, answer approvals and questions, read artifacts.
 * - `viewer`: Read-only: agents, sessions, runs, events, tasks, schedules, artifacts.
 * - `observer`: What a person watching needs: the viewer's scopes and the Prometheus metrics; it acts on nothing (a dashboard's read-only sign-in).
 * - `admin`: Everything.
 */
export type ScopePreset = "app" | "viewer" | "observer" | "admin";

/** A conversation with an agent, addressed by id or by key. */
export interface Session {
  /** The agent it talks to. */
  agentId: AgentId;
  /** When it was created (epoch milliseconds). */
  createdAt: number;
  /** The parent's last message the fork kept. */
  forkedAtMessageId?: MessageId | null;
  /** The session's id. */
  id: SessionId;
  /** The app's key for it (unique per subject), e.g. `agent:main:user-42`. */
  key: SessionKey;
  /** The app's metadata. */
  metadata?: Record<string, unknown>;
  /** The session it was forked from. */
  parentId?: SessionId | null;
  /**
   * The subject of the token that made it (absent: made by an unbound
   * token). Only tokens of this subject (and unbound or admin ones)
   * see it, its runs and what they made.
   */
  subject?: Subject | null;
  /** When it last changed (epoch milliseconds). */
  updatedAt: number;
}

/** `sessions.compact`, `sessions.abort` and `sessions.delete`. */
export interface SessionActionParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The session. */
  sessionId: SessionId;
}

/** `session.compacted`. */
export interface SessionCompactedData {
  /** How many messages the summary replaced. */
  replacedMessages: number;
  /** The session. */
  sessionId: SessionId;
  /** The compaction record's message id. */
  summaryMessageId: MessageId;
}

/**
 * A session's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type SessionId = string;

/**
 * The app's key of a session, unique per subject (see [`Subject`]).
 *
 * At most KEY_MAX characters, no control characters.
 */
export type SessionKey = string;

/** `sessions.abort`. */
export interface SessionsAbortResult {
  /** The runs it cancelled. */
  cancelledRunIds: RunId[];
}

/** `sessions.create`. */
export interface SessionsCreateParams {
  /** The agent. */
  agentId: AgentId;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The app's key (generated when absent); unique per agent. */
  key?: SessionKey | null;
  /** The app's metadata. */
  metadata?: Record<string, unknown> | null;
}

/** `sessions.delete`. */
export interface SessionsDeleteResult {
  /** Its runs, deleted with it, by id. */
  deletedRunIds: RunId[];
  /** The session deleted. */
  sessionId: SessionId;
}

/** `sessions.fork`. */
export interface SessionsForkParams {
  /** Keep messages up to this one (all when absent). */
  atMessageId?: MessageId | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The fork's key (generated when absent). */
  key?: SessionKey | null;
  /** The session to fork. */
  sessionId: SessionId;
}

/** `sessions.list`. */
export interface SessionsListParams {
  /** Only this agent's sessions. */
  agentId?: AgentId | null;
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
}

/** `sessions.list`. */
export interface SessionsListResult {
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
  /** Most recently updated first. */
  sessions: Session[];
}

/** `sessions.messages`. */
export interface SessionsMessagesParams {
  /** Only messages after this one. */
  after?: Cursor | null;
  /** At most this many. */
  limit?: number | null;
  /** The session. */
  sessionId: SessionId;
}

/** `sessions.messages`. */
export interface SessionsMessagesResult {
  /** Whether more follow. */
  hasMore: boolean;
  /** Oldest first. */
  messages: Message[];
}

/** `sessions.resolve`: the session with this key, created if absent. */
export interface SessionsResolveParams {
  /** The agent (`main` when absent). */
  agentId?: AgentId | null;
  /** The key. */
  key: SessionKey;
}

/** `sessions.send`: a user message that starts a run on the session. */
export interface SessionsSendParams {
  /**
   * The managed environment the run works in (its workspace, its
   * secrets, its network policy); it must be `ready`.
   */
  environmentId?: EnvironmentId | null;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's run and never starts a second.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The user's message, or the messages to add. */
  input: RunInput;
  /**
   * What to do when the session already has an active run
   * (`enqueue` when absent).
   */
  multitaskStrategy?: MultitaskStrategy | null;
  /** The session. */
  sessionId: SessionId;
  /** The run's own time limit; `run.timed_out` past it. */
  timeoutMs?: number | null;
  /** Client tools the model may call this run. */
  tools?: ClientTool[];
}

/**
 * `sessions.update`: merges `metadata` into the session's (a key
 * whose value is `null` is removed); the result is within the same
 * caps as `sessions.create`'s.
 */
export interface SessionsUpdateParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The keys to set, or to remove (`null`). */
  metadata: Record<string, unknown>;
  /** The session. */
  sessionId: SessionId;
}

/** Which events of the log a ticket's stream sends. */
export interface StreamFilter {
  /** Only this agent's events. */
  agentId?: AgentId | null;
  /** Only this session's events. */
  sessionKey?: SessionKey | null;
  /** Only these types. */
  types?: EventType[] | null;
}

/** `tokens.ticket`: a credential for one stream, shown once. */
export interface StreamTicket {
  /** When it expires (epoch milliseconds). */
  expiresAt: number;
  /** What it may do: `session.read`. */
  scopes: Scope[];
  /** The one stream it opens. */
  stream: TicketStream;
  /**
   * The ticket (`tkt_` and 64 hex digits): `?ticket=` on the route
   * of its `stream`. It opens that stream, once, before `expiresAt`,
   * read-only; the stream ends when the token that minted it is
   * revoked or expires.
   */
  ticket: string;
}

/**
 * Whom a bound token acts for (an app's user or tenant): such a token
 *  sees and acts only on what tokens of its subject made.
 *
 * At most KEY_MAX characters, no control characters.
 */
export type Subject = string;

/**
 * A WebSocket subscription's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type SubscriptionId = string;

/** A background task: the ledger's record of one piece of detached work. */
export interface Task {
  /** The agent doing the work (a sub-agent's). */
  agentId?: AgentId | null;
  /** The run it tracks (a sub-agent's). */
  childRunId?: RunId | null;
  /** That run's session. */
  childSessionId?: SessionId | null;
  /** That session's key. */
  childSessionKey?: SessionKey | null;
  /**
   * A background process's command line (secrets redacted, at most
   * 1 KiB).
   */
  command?: string | null;
  /** When it was created (epoch milliseconds). */
  createdAt: number;
  /** When the last of them was posted (epoch milliseconds). */
  deliveredAt?: number | null;
  /** Why one could not be posted. */
  deliveryError?: string | null;
  /** What became of the messages its policy asks for. */
  deliveryStatus: DeliveryStatus;
  /**
   * How deep it is: 1 for a task a top-level run started, one more for
   * each sub-agent above it.
   */
  depth: number;
  /** What it was asked to do (a sub-agent's `task`). */
  description?: string | null;
  /** When it ended (epoch milliseconds). */
  endedAt?: number | null;
  /** Why it failed, timed out, was cancelled or was lost. */
  error?: ApiError | null;
  /** A background process's exit code, once it exited by itself. */
  exitCode?: number | null;
  /** The task's id. */
  id: TaskId;
  /** What it tracks. */
  kind: TaskKind;
  /** A short label for people (a sub-agent's `label`). */
  label?: string | null;
  /** How its result reaches the session that started it. */
  notifyPolicy: NotifyPolicy;
  /** The latest progress report (a background process's output tail). */
  progressSummary?: string | null;
  /** What it produced (a sub-agent's final text). */
  result?: string | null;
  /** The run that started it. */
  runId?: RunId | null;
  /** The schedule it is a firing of (a `cron` task's). */
  scheduleId?: ScheduleId | null;
  /** The session that started it (its result is posted there). */
  sessionId?: SessionId | null;
  /** That session's key. */
  sessionKey?: SessionKey | null;
  /** When its work started (epoch milliseconds). */
  startedAt?: number | null;
  /** Where it is. */
  status: TaskStatus;
  /**
   * The subject of the token whose run started it (see
   * `Session.subject`).
   */
  subject?: Subject | null;
  /** When it last changed (epoch milliseconds). */
  updatedAt: number;
}

/**
 * A background task's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type TaskId = string;

/**
 * What a task tracks.
 *
 * - `subagent`: A child run of an agent, in a session of its own, started by a model's `sessions_spawn`.
 * - `cron`: One firing of a schedule: a run of its agent (OpenClaw's `cron` runtime; `scheduleId` names the schedule).
 * - `process`: A shell command a model's `exec` left running in the background (`background` or `yieldMs`), followed with the `process` tool.
 * - `unknown`: A kind this client does not know.
 */
export type TaskKind = "subagent" | "cron" | "process" | "unknown";

/** `tasks.get`. */
export interface TaskRef {
  /** The task. */
  taskId: TaskId;
}

/**
 * Where a task is: `queued → running →` one of the terminal statuses.
 *
 * - `queued`: Created; its work has not started.
 * - `running`: Its work is under way.
 * - `succeeded`: Its work finished successfully.
 * - `failed`: Its work ended with an error.
 * - `timed_out`: Its work exceeded its time limit.
 * - `cancelled`: Cancelled (`tasks.cancel`, or its parent's cancel).
 * - `lost`: Its work is gone without an ending (the node that held it died); `error` says why.
 * - `unknown`: A status this client does not know.
 */
export type TaskStatus = "queued" | "running" | "succeeded" | "failed" | "timed_out" | "cancelled" | "lost" | "unknown";

/** `tasks.cancel`. */
export interface TasksCancelParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** Why, for the record (the task's error says it). */
  reason?: string | null;
  /** The task. */
  taskId: TaskId;
}

/** `tasks.events`. */
export interface TasksEventsParams {
  /** Only events after this id (the replay cursor). */
  after?: Cursor | null;
  /** At most this many. */
  limit?: number | null;
  /** The task. */
  taskId: TaskId;
}

/** `tasks.events`. */
export interface TasksEventsResult {
  /**
   * Whether the task has ended and this page holds its last
   * `task.updated`.
   */
  done: boolean;
  /**
   * In order: the task's `task.updated` events and the events of
   * the run it tracks.
   */
  events: EventEnvelope[];
}

/** `tasks.list`: newest first; every filter given must hold. */
export interface TasksListParams {
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** Only tasks of this kind. */
  kind?: TaskKind | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** Only tasks this run started. */
  runId?: RunId | null;
  /** Only tasks a run in this session started. */
  sessionId?: SessionId | null;
  /** Only tasks in one of these states. */
  status?: TaskStatus[] | null;
}

/** `tasks.list`'s answer. */
export interface TasksListResult {
  /** The next page's cursor (absent on the last page). */
  nextCursor?: Cursor | null;
  /** Newest first. */
  tasks: Task[];
}

/** `tasks.notify`. */
export interface TasksNotifyParams {
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** How its result reaches the session that started it from now on. */
  notifyPolicy: NotifyPolicy;
  /** The task. */
  taskId: TaskId;
}

/** `assistant.delta` and `thinking.delta`. */
export interface TextDelta {
  /** The new text. */
  text: string;
}

/** The run a ticket's stream follows. */
export interface TicketRun {
  /** The run. */
  runId: RunId;
}

/**
 * The one stream a `tokens.ticket` ticket opens. A ticket is for a page
 * that streams without holding a long-lived credential: it opens this
 * stream once, reads it with `session.read` only, and calls nothing.
 */
export type TicketStream = {
  run: TicketRun;
} | {
  events: StreamFilter;
} | {
  socket: StreamFilter;
};

/**
 * An API token's id (`tok_...`).
 *
 * At most ID_MAX characters, no control characters.
 */
export type TokenId = string;

/** A token as `tokens.list` shows it: never its secret or its hash. */
export interface TokenInfo {
  /** The agents it is bound to. */
  agents?: AgentId[] | null;
  /** When it was made, epoch milliseconds. */
  createdAt: number;
  /** When it expires, epoch milliseconds (absent: never). */
  expiresAt?: number | null;
  /** Its id. */
  id: TokenId;
  /** Its name. */
  name?: string | null;
  /**
   * The token that minted it with `tokens.create` (absent: made by an
   * operator with the CLI, or the first admin token).
   */
  parentId?: TokenId | null;
  /** When it was revoked, epoch milliseconds. */
  revokedAt?: number | null;
  /** What it may do. */
  scopes: Scope[];
  /** The subject it is bound to. */
  subject?: Subject | null;
}

/** `tokens.create`. */
export interface TokensCreateParams {
  /**
   * Binds it to these agents (1 to 64): it sees, runs and reads only
   * theirs. Absent: every agent. Never with `admin`.
   */
  agents?: AgentId[] | null;
  /** How long it lives, in milliseconds (1,000 to 30 days). */
  expiresInMs: number;
  /**
   * Makes a retry safe: a call with the key of an earlier one (and the
   * same name and scopes) gives the same token id with a fresh secret
   * and lifetime, and the earlier secret stops working, so one key
   * never leaves two live tokens. With other params: `conflict`.
   */
  idempotencyKey?: IdempotencyKey | null;
  /**
   * A name for people (who it is for); shown by `talon token list`
   * and in the access log.
   */
  name: string;
  /** A named set of scopes: `app`, `viewer` or `admin`. */
  preset?: ScopePreset | null;
  /** Scopes it grants, beside `preset`'s (at least one of the two). */
  scopes?: Scope[] | null;
  /**
   * Binds it to a subject (an app's user or tenant): it sees and acts
   * only on the sessions, runs, approvals, questions, artifacts,
   * environments and events that tokens of this subject made, and its
   * session keys name sessions of this subject only. Absent: unbound
   * (it sees every subject's). Never with `admin`.
   */
  subject?: Subject | null;
}

/** `tokens.list`. */
export interface TokensListParams {
  /** The previous page's `nextCursor`. */
  cursor?: TokenId | null;
  /** Revoked tokens too. */
  includeRevoked?: boolean | null;
  /** At most this many (default 100, at most 500). */
  limit?: number | null;
  /** Only the tokens bound to this subject. */
  subject?: Subject | null;
}

/** `tokens.list`'s answer. */
export interface TokensListResult {
  /** The next page's cursor (absent: this is the last page). */
  nextCursor?: TokenId | null;
  /** By id. */
  tokens: TokenInfo[];
}

/** `tokens.revoke`. */
export interface TokensRevokeParams {
  /**
   * Accepted for a retry's sake; revoking is idempotent by itself: a
   * retry answers the same tokens.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The token. */
  tokenId: TokenId;
}

/** `tokens.revoke`'s answer. */
export interface TokensRevokeResult {
  /**
   * Every token now revoked with it: the token, then those minted under
   * it (and theirs), by id, whether this call or an earlier one revoked
   * them (each keeps the time it was first revoked).
   */
  revoked: TokenId[];
  /** The token asked for. */
  tokenId: TokenId;
}

/** `tokens.ticket`. */
export interface TokensTicketParams {
  /**
   * What the ticket may do: `session.read`, the one scope a stream
   * needs (absent: that one; another is `invalid_request`).
   */
  scopes?: Scope[] | null;
  /**
   * The one stream it opens (absent: the event log's SSE stream,
   * `{"events": {}}`).
   */
  stream?: TicketStream | null;
}

/** `tool.call.completed`. */
export interface ToolCallCompletedData {
  /** The call's id. */
  callId: string;
  /** How long it took. */
  durationMs: number;
  /** The tool. */
  name: string;
  /** The model's call it belongs to, for a nested call. */
  parentId?: string | null;
  /** Its result (capped at 16 KiB). */
  result: unknown;
}

/** `tool.call.delta`. */
export interface ToolCallDeltaData {
  /** The call's id. */
  callId: string;
  /** The model's call it belongs to, for a nested call. */
  parentId?: string | null;
  /**
   * The executor's update (capped at 16 KiB): a command's output is
   * `{stream: "stdout" | "stderr", text, omittedBytes?}` (the newest
   * output, and the bytes of that stream left out before it), and
   * `{stream, omittedBytes}` at the end for those left out after the last
   * delta; a Code Mode cell's console output is
   * `{stream: "console", text}`; an MCP server's progress is
   * `{progress, total?, message?}`.
   */
  update: unknown;
}

/** `tool.call.failed`. */
export interface ToolCallFailedData {
  /** The call's id. */
  callId: string;
  /** How long it took, when it ran. */
  durationMs?: number | null;
  /** The error as the model saw it. */
  error: unknown;
  /** The tool. */
  name: string;
  /** The model's call it belongs to, for a nested call. */
  parentId?: string | null;
  /**
   * The call's outcome: `failed`, `denied`, `aborted`, `invalid_input`,
   * ...
   */
  status?: string | null;
}

/**
 * A client tool call's id.
 *
 * At most ID_MAX characters, no control characters.
 */
export type ToolCallId = string;

/** `tool.call.started`. */
export interface ToolCallStartedData {
  /** The arguments (model calls). */
  arguments?: unknown;
  /** The call's id. */
  callId: string;
  /**
   * The tool: its catalog id for nested calls, the model-visible name
   * otherwise.
   */
  name: string;
  /**
   * For a nested call (made by a cell or a bridge), the model's call it
   * belongs to.
   */
  parentId?: string | null;
  /**
   * Whether the call may be made again if its run is resumed after its
   * node died: a tool marked `replaySafe` (read-only), a client tool, or
   * a model tool whose only effects are the nested calls it makes
   * (`exec`, `wait`, `tool_call`, ...), each of which has its own event.
   */
  replaySafe?: boolean;
  /** Where the tool comes from (nested calls). */
  source?: ToolSource | null;
}

/**
 * What a tool does to the world, as ToolSpace shows it.
 *
 * - `read_only`: Reads only.
 * - `writes`: Writes data.
 * - `host`: Runs commands on the host.
 * - `unknown`: An effect this client does not know yet.
 */
export type ToolEffect = "read_only" | "writes" | "host" | "unknown";

/**
 * Where a tool of the ToolSpace comes from.
 *
 * - `core`: OpenClaw's core tools (files, shell).
 * - `mcp`: An MCP server.
 * - `plugin`: A plugin.
 * - `channel`: A channel.
 * - `runtime`: The runtime itself (`ask_user`).
 * - `app`: The app, for a run (client tools).
 * - `unknown`: An origin this client does not know.
 */
export type ToolOrigin = "core" | "mcp" | "plugin" | "channel" | "runtime" | "app" | "unknown";

/**
 * A surface through which the model reaches a tool.
 *
 * - `direct`: Offered to the model by name.
 * - `code_mode`: From a Code Mode cell (`tools.call`, `ALL_TOOLS`, namespaces).
 * - `tool_search`: Through Tool Search (`tool_search`/`tool_call`, or its code mode).
 * - `unknown`: A surface this client does not know.
 */
export type ToolReach = "direct" | "code_mode" | "tool_search" | "unknown";

/**
 * A tool's catalog id or name.
 *
 * At most KEY_MAX characters, no control characters.
 */
export type ToolRef = string;

/**
 * Where a tool comes from: the first segment of its catalog id.
 *
 * - `openclaw`: A core tool of the gateway.
 * - `plugin`: A tool registered by a plugin.
 * - `mcp`: A tool of an MCP server.
 * - `client`: A tool the client app supplied for this run.
 * - `unknown`: A source this client does not know yet.
 */
export type ToolSource = "openclaw" | "plugin" | "mcp" | "client" | "unknown";

/**
 * A tool as the ToolSpace shows it: normalised metadata, no plugin
 * internals.
 */
export interface ToolSummary {
  /** What the approval policy (`tools.approvals`) does with its calls. */
  approval: ApprovalPolicy;
  /** Its arguments, summarised from its schema (top-level properties). */
  arguments: ArgumentSummary[];
  /** What it does. */
  description: string;
  /** Read-only, writing or host-executing, as the tool declares. */
  effect: ToolEffect;
  /**
   * Hidden from the model's tool list (reached only through search or
   * code).
   */
  hidden: boolean;
  /** Runs commands on the host. */
  hostCapable: boolean;
  /** Catalog id, `<source>:<owner>:<tool-name>`. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The plugin, MCP server or app that owns it. */
  owner: string;
  /** JSON Schema of its arguments, whole. */
  parameters: unknown;
  /** The surfaces through which the model reaches it. */
  reach: ToolReach[];
  /** Only reads. */
  readOnly: boolean;
  /** Whether calls wait for a decision (`approval` is `ask`). */
  requiresApproval: boolean;
  /** Where it comes from. */
  source: ToolOrigin;
  /** Writes data. */
  writable: boolean;
}

/** The tool telemetry of one run. */
export interface ToolTelemetry {
  /**
   * Calls through Tool Search's bridge (`tool_call`,
   * `openclaw.tools.call`).
   */
  bridgeCalls: number;
  /**
   * Bytes of tools and system prompt sent over all the run's model
   * requests.
   */
  bytesSent: number;
  /**
   * The tools that finally ran (or were left to the app), in the order
   * they ended, at most [`MAX_CALLED`].
   */
  called: CalledTool[];
  /** Calls left out of `called`. */
  calledOmitted?: number;
  /**
   * The catalog's size by source (`openclaw`, `plugin`, `mcp`,
   * `client`).
   */
  catalogBySource: Record<string, number>;
  /** Size of the run's catalog (hidden behind Code Mode or Tool Search). */
  catalogSize: number;
  /** `tool_search_code` runs. */
  codeRuns: number;
  /** Describes (`tools.describe`, `tool_describe`, `$api`). */
  describes: number;
  /** Code Mode `exec` calls. */
  execs: number;
  /** Code Mode limit failures, for a Code Mode run. */
  limitFailures?: CodeModeLimitFailures | null;
  /** Model requests the run sent. */
  modelCalls: number;
  /**
   * Bytes of the system prompt in one model request (the surface's
   * directory included).
   */
  promptBytes: number;
  /**
   * Catalog searches (`tools.search`, `tool_search`, and those inside
   * `tool_search_code`).
   */
  searches: number;
  /**
   * The surface: `direct`, `code_mode`, or the Tool Search mode
   * (`code`, `tools`, `directory`).
   */
  surface: string;
  /** Bytes of the serialized tool definitions in one model request. */
  toolBytes: number;
  /**
   * Tool schemas the model saw from the start (the names are
   * `run.started`'s `tools`).
   */
  visibleTools: number;
  /** Code Mode `wait` calls. */
  waits: number;
}

/** `tools.invoke`: one direct, scoped call. */
export interface ToolsInvokeParams {
  /** Its arguments. */
  arguments?: unknown;
  /**
   * Makes a retried call safe: the same key with the same params
   * returns the first call's result.
   */
  idempotencyKey?: IdempotencyKey | null;
  /** The session whose policy and approvals apply. */
  sessionKey: SessionKey;
  /** The tool's catalog id or name. */
  tool: ToolRef;
}

/** `tools.invoke`. */
export interface ToolsInvokeResult {
  /** The tool's result. */
  result: unknown;
}

/** `tools.list`: the ToolSpace of an agent (and session). */
export interface ToolsListParams {
  /** The agent (`main` when absent). */
  agentId?: AgentId | null;
  /** The previous page's `nextCursor`. */
  cursor?: Cursor | null;
  /** At most this many (the gateway's default and cap apply). */
  limit?: number | null;
  /** The session whose policy applies. */
  sessionKey?: SessionKey | null;
}

/** `tools.list`. */
export interface ToolsListResult {
  /** The next page's cursor. */
  nextCursor?: Cursor | null;
  /** The ToolSpace, by id. */
  tools: ToolSummary[];
}

/** Token counts and cost. */
export interface Usage {
  /**
   * Prompt tokens read from the provider's prompt cache (part of
   * `inputTokens`), when it reported any.
   */
  cacheReadTokens?: number | null;
  /**
   * Prompt tokens written to the provider's prompt cache (part of
   * `inputTokens`), when it reported any.
   */
  cacheWriteTokens?: number | null;
  /** Cost in US dollars, when the provider's prices are known. */
  costUsd?: number | null;
  /** Prompt tokens. */
  inputTokens?: number | null;
  /** Completion tokens. */
  outputTokens?: number | null;
  /** Both. */
  totalTokens?: number | null;
}

/** The runs of one agent on one model, created on one UTC day. */
export interface UsageRow {
  /** The agent. */
  agentId: AgentId;
  /** The day's start, UTC midnight (epoch milliseconds). */
  day: number;
  /** The model, `provider/model` (absent for runs that never started). */
  model?: string | null;
  /** How many runs. */
  runs: number;
  /** Their tokens and cost together. */
  usage: Usage;
}

/** `usage.summary`'s answer. */
export interface UsageSummary {
  /** The window answered: runs created at or after this time. */
  createdAfter: number;
  /** The window answered: runs created before this time. */
  createdBefore: number;
  /** By day (newest first), then agent, then model. */
  rows: UsageRow[];
  /** How many runs the window holds. */
  runs: number;
  /** Their tokens and cost together. */
  usage: Usage;
}

/** `usage.summary`: every filter given must hold. */
export interface UsageSummaryParams {
  /** Only this agent's runs. */
  agentId?: AgentId | null;
  /**
   * Runs created at or after this time (epoch milliseconds; by default
   * 30 days before the window's end).
   */
  createdAfter?: number | null;
  /** Runs created before this time (epoch milliseconds; by default now). */
  createdBefore?: number | null;
}

/**
 * An event as the gateway sends it: the versioned envelope, its `data` typed
* by its `type` (narrow on `event.type`).
 */
export type TalonEvent = EventEnvelope & EventData;

/** Every error code, in the protocol's order. */
export const ERROR_CODES: readonly ErrorCode[] = ["invalid_request", "unauthenticated", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "unsupported", "timeout", "cursor_expired", "internal", "quota_exceeded", "method_not_allowed", "unknown"];

/** Every event type. */
export const EVENT_TYPES: readonly EventType[] = ["run.created", "run.queued", "run.started", "run.completed", "run.failed", "run.cancelled", "run.timed_out", "assistant.delta", "assistant.message", "thinking.delta", "tool.call.started", "tool.call.delta", "tool.call.completed", "tool.call.failed", "approval.requested", "approval.resolved", "question.requested", "question.answered", "artifact.created", "artifact.updated", "session.created", "session.updated", "session.compacted", "task.updated", "git.branch", "git.diff", "git.pr"];

/** Every token scope. */
export const SCOPES: readonly Scope[] = ["agent.read", "agent.run", "session.read", "session.write", "task.read", "task.write", "schedule.read", "schedule.write", "approval.respond", "tools.invoke", "artifacts.read", "environment.write", "metrics.read", "admin"];

/** The HTTP status each error code is sent with. */
export const ERROR_HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  unavailable: 503,
  unsupported: 501,
  timeout: 504,
  cursor_expired: 410,
  internal: 500,
  quota_exceeded: 507,
  method_not_allowed: 405,
  unknown: 500,
};

/** The codes whose requests may succeed when sent again. */
export const RETRYABLE_CODES: readonly ErrorCode[] = ["rate_limited", "unavailable", "timeout", "internal"];
