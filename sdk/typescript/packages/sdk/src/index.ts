// @talon/sdk: the App SDK for the Talon gateway. Two layers over one
// protocol: `GatewayClient` (generated from the method table, one function
// per method) and the high-level `Talon`, `Agent`, `Run` and `Session`.
// It uses only `fetch`, Web Streams and Web Crypto, so it runs in Node, in
// browsers and in edge runtimes.

export { Talon, Agent, type TalonOptions, type RunParams } from "./talon.js";
export {
  Run,
  ToolSpace,
  approvalRequest,
  type ApprovalAction,
  type ApprovalHandler,
  type ApprovalRequest,
} from "./run.js";
export { Session, type SendOptions } from "./session.js";
export { Approval, Artifact, Environment, Question, Task } from "./handles.js";
export { EventStream, TERMINAL_TYPES, type EventsOptions, type LogFilter, type StreamAuth } from "./events.js";
export { TalonError, isTalonError, knownCode, type TalonErrorInit } from "./errors.js";
export { HttpCaller, idempotencyKey, type ClientOptions } from "./http.js";
export { WsCaller, Subscription, type WsCarries } from "./ws.js";
export { validate, hasSchema, MAX_DEPTH, type ValidationIssue, type ValidateOptions } from "./validate.js";
export { frames, MAX_FRAME, type Frame } from "./sse.js";
export { GatewayClient, type CallOptions, type Caller } from "./generated/client.js";
export { PagePromise, type PageFetcher } from "./pages.js";
export {
  METHODS,
  type MethodInfo,
  type MethodName,
  type MethodTypes,
  type Effect,
  type Stability,
} from "./generated/methods.js";
export * from "./generated/types.js";
/** The gateway's refusals, worded once: each returns the `ApiError` the gateway answers (the fakes throw them). */
export * as refusals from "./generated/refusals.js";
/** The caps every server of the protocol holds a request to, and the gateway's defaults. */
export * as caps from "./generated/caps.js";
/** How a run's events fold into its status, and its status into its result (the protocol's rules). */
export {
  RUN_ENDS,
  TERMINAL_STATUSES,
  RESULT_STATUS,
  RUN_STATUSES,
  TASK_STATUSES,
  TASK_TERMINAL_STATUSES,
  TASK_KINDS,
  NOTIFY_POLICIES,
  SCOPE_PRESETS,
} from "./generated/rules.js";
/** A run's one-line summary and the `runs.list` `text` rule, as the gateway applies them. */
export { runSummary, summaryContains } from "./summary.js";
/** Every protocol type by its own name, `Run`, `Session` and `Agent` included (the classes shadow those three above). */
export * as protocol from "./generated/types.js";
