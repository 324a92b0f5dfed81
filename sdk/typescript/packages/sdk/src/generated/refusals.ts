// Generated from the gateway's method table by `talon_protocol::codegen::typescript`:
// do not edit. Regenerate with `UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.
//
// Every refusal the protocol's servers share, worded once (the Rust side:
// `talon_protocol::gateway::refusals`). Each returns the `ApiError` the gateway
// answers; `extra` adds details a server knows (the approval that won, ...).

import { RETRYABLE_CODES, type ApiError, type ErrorCode, type ErrorDetails } from "./types.js";

function refusal(code: ErrorCode, message: string, details: ErrorDetails): ApiError {
  const error: ApiError = { code, message, retryable: RETRYABLE_CODES.includes(code) };
  if (Object.keys(details).length > 0) error.details = details;
  return error;
}

/** A named resource does not exist (or the caller may not see it). */
export function notFound(kind: string, id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `${kind} ${JSON.stringify(id)} not found`, { ...extra });
}

/** A resource with that id or key exists already. */
export function alreadyExists(kind: string, id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `${kind} ${JSON.stringify(id)} already exists`, { ...extra });
}

/** No method of the table has that name. */
export function noMethod(method: string, extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `no method \`${method}\``, { method, ...extra });
}

/** A method the table declares that this gateway does not implement. */
export function unsupported(method: string, extra: ErrorDetails = {}): ApiError {
  return refusal("unsupported", `\`${method}\` is not supported by this gateway yet`, { method, ...extra });
}

/** The token lacks the scope the method needs. */
export function forbidden(scope: string, extra: ErrorDetails = {}): ApiError {
  return refusal("forbidden", `this token lacks the \`${scope}\` scope`, { scope, ...extra });
}

/** An error the server does not explain (its cause is logged). */
export function internal(extra: ErrorDetails = {}): ApiError {
  return refusal("internal", `internal error`, { ...extra });
}

/** A method served only on the WebSocket transport, called over HTTP. */
export function websocketOnly(method: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `${method} is served on the WebSocket transport (GET /v1/ws)`, { ...extra });
}

/** An idempotency key used again with other parameters. */
export function idempotencyReused(key: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `idempotency key ${JSON.stringify(key)} was used with other parameters`, { ...extra });
}

/** No `Authorization` header. */
export function noToken(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `no token: send Authorization: Bearer <token> (\`talon token create\` makes one)`, { reason: "missing", ...extra });
}

/** An `Authorization` header that is not `Bearer talon_...`. */
export function malformedToken(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `the Authorization header is not \`Bearer talon_<secret>\``, { reason: "malformed", ...extra });
}

/** A well-formed token the gateway does not know. */
export function unknownToken(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `this token is not known to this gateway`, { reason: "unknown", ...extra });
}

/** A revoked token. */
export function revokedToken(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `this token was revoked`, { reason: "revoked", ...extra });
}

/** A token past its lifetime. */
export function expiredToken(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `this token has expired`, { reason: "expired", ...extra });
}

/** A stream ticket that is unknown, used or expired. */
export function badTicket(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `the stream ticket is unknown, used or expired: mint a new one with tokens.ticket`, { reason: "ticket", ...extra });
}

/** A stream ticket used for anything but its stream. */
export function ticketCalls(what: string, extra: ErrorDetails = {}): ApiError {
  return refusal("forbidden", `${what}: a stream ticket opens the one stream it was minted for and calls nothing`, { reason: "ticket", ...extra });
}

/** A dashboard sign-in code that is unknown, used or expired. */
export function badLoginCode(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `this sign-in link is unknown, used or expired: run \`talon dashboard\` for a new one`, { reason: "login", ...extra });
}

/** A dashboard sign-in or sign-out that did not come from the gateway's own page. */
export function loginNotOwnOrigin(extra: ErrorDetails = {}): ApiError {
  return refusal("forbidden", `signing in and out takes the gateway's own page: open the link in a browser`, { reason: "origin", ...extra });
}

/** A dashboard request without its sign-in cookie. */
export function notSignedIn(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `not signed in: open the link \`talon dashboard\` prints`, { reason: "missing", ...extra });
}

/**
 * A WebSocket request before the socket authenticated (the
 *  TypeScript fake's socket, which authenticates in a frame).
 */
export function socketUnauthenticated(extra: ErrorDetails = {}): ApiError {
  return refusal("unauthenticated", `the socket is not authenticated`, { ...extra });
}

/** A body that is not JSON. */
export function bodyNotJson(error: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the body is not JSON: ${error}`, { ...extra });
}

/** Params that are not a JSON object. */
export function paramsNotObject(method: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `${method}: params must be a JSON object`, { ...extra });
}

/** Params that do not fit the method's schema. */
export function badParams(method: string, problem: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `${method}: ${problem}`, { ...extra });
}

/** One field of the params that does not fit the method's schema. */
export function badParam(method: string, field: string, problem: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `${method}: ${field}: ${problem}`, { field, ...extra });
}

/** A stream's query that does not decode. */
export function badQuery(problem: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the query: ${problem}`, { ...extra });
}

/** A stream's run id that is not one (`problem`: the id type's own words). */
export function badRunId(problem: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `runId: ${problem}`, { ...extra });
}

/** A body over the gateway's cap. */
export function bodyTooLarge(max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the body exceeds ${String(max)} bytes (or was cut off)`, { reason: "body_too_large", ...extra });
}

/** A path no route serves. */
export function noRoute(extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `no such route: methods are POST /v1/<method>, described by /v1/openapi.json and readable at /docs`, { ...extra });
}

/** A route called with a method it does not take. */
export function methodNotAllowed(allow: string, extra: ErrorDetails = {}): ApiError {
  return refusal("method_not_allowed", `this path takes ${allow} only`, { ...extra });
}

/** A request with no `Host` header. */
export function hostMissing(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `a request must name its Host`, { reason: "host", ...extra });
}

/** A request with several `Host` headers. */
export function hostSeveral(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `a request must name one Host, not several`, { reason: "host", ...extra });
}

/** A `Host` header that is not a host. */
export function hostMalformed(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the Host header is malformed`, { reason: "host", ...extra });
}

/** A request whose target names another host than its `Host` header. */
export function hostAmbiguous(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the request's target names another host than its Host header`, { reason: "host", ...extra });
}

/** A `Host` the gateway does not answer to. */
export function hostRefused(host: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `this gateway does not answer to the host ${JSON.stringify(host)}; list it in gateway.security.allowedHosts`, { reason: "host", ...extra });
}

/** A browser `Origin` the gateway does not allow. */
export function originRefused(origin: string, extra: ErrorDetails = {}): ApiError {
  return refusal("forbidden", `requests from the origin ${origin} are not allowed; list it in gateway.security.allowedOrigins`, { reason: "origin", ...extra });
}

/** A `Range` outside the content. */
export function rangeOutside(size: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the range is outside the content (${String(size)} bytes)`, { size, ...extra });
}

/** A text frame that is not JSON. */
export function frameNotJson(error: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `not JSON: ${error}`, { ...extra });
}

/** A JSON frame that is not a request. */
export function frameNotRequest(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `a request is {"type":"req","id":..,"method":..,"params":{..}}`, { ...extra });
}

/** A binary frame. */
export function binaryFrame(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `binary frames are not requests`, { ...extra });
}

/** One subscription too many on a socket. */
export function tooManySubscriptions(max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("rate_limited", `at most ${String(max)} subscriptions per connection`, { ...extra });
}

/** `events.unsubscribe` of a subscription the socket does not have. */
export function noSubscription(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `no subscription ${JSON.stringify(id)}`, { ...extra });
}

/** A cursor older than the oldest event kept. */
export function cursorExpired(cursor: string, oldest: string, extra: ErrorDetails = {}): ApiError {
  return refusal("cursor_expired", `cursor ${cursor} has expired; the oldest event kept is ${oldest}`, { cursor, oldestId: oldest, ...extra });
}

/** A page cursor whose item is gone. */
export function cursorItemGone(extra: ErrorDetails = {}): ApiError {
  return refusal("cursor_expired", `the cursor's item is gone; list again from the start`, { ...extra });
}

/** A text that is not an event id. */
export function notAnEventId(text: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `${JSON.stringify(text)} is not an event id`, { ...extra });
}

/** An `after` that is not an event id. */
export function afterNotAnEventId(text: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `after: ${JSON.stringify(text)} is not an event id`, { ...extra });
}

/** A `before` that is not an event id. */
export function beforeNotAnEventId(text: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `before: ${JSON.stringify(text)} is not an event id`, { field: "before", ...extra });
}

/** `runs.events` given both ends to count from. */
export function lastAndLimit(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `last and limit both given: last counts from the window's end, limit from its start`, { field: "last", ...extra });
}

/** A `Last-Event-ID` that is not visible ASCII. */
export function lastEventIdUnreadable(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `Last-Event-ID is not an event id (it is not visible ASCII)`, { ...extra });
}

/** An event type the protocol does not have. */
export function unknownEventType(name: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `unknown event type ${JSON.stringify(name)}`, { ...extra });
}

/** `runs.create` in a session with a live run, under `multitaskStrategy: reject`. */
export function sessionBusy(extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `the session already has an active run (multitaskStrategy: reject)`, { ...extra });
}

/** A delete of something a live run still uses. */
export function hasLiveRun(kind: string, id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `${kind} ${JSON.stringify(id)} has a run that has not ended: cancel it (or wait for its end) first`, { ...extra });
}

/** `sessions.compact` while a run is live. */
export function compactBusy(extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `the session has a run in progress; compact it once the run ends`, { ...extra });
}

/** A session named by id and by key that are not the same one. */
export function sessionIdAndKeyDiffer(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `sessionId and sessionKey name different sessions`, { ...extra });
}

/** A session that belongs to another agent than the one named. */
export function sessionOfOtherAgent(key: string, own: string, asked: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `session ${JSON.stringify(key)} belongs to agent ${JSON.stringify(own)}, not ${JSON.stringify(asked)}`, { ...extra });
}

/** `runs.list`'s `status` is not a run status. */
export function unknownRunStatus(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `status: an unknown run status`, { field: "status", ...extra });
}

/** `runs.list`'s time window is empty. */
export function emptyTimeWindow(after: number, before: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `createdAfter (${String(after)}) must be before createdBefore (${String(before)})`, { field: "createdAfter", ...extra });
}

/** `usage.summary`'s time window is longer than it answers. */
export function usageWindowTooLong(days: number, max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `createdAfter: a window of ${String(days)} days, longer than the ${String(max)} days usage.summary answers`, { field: "createdAfter", ...extra });
}

/** `runs.list`'s cursor is not a run id. */
export function cursorNotARun(cursor: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `cursor ${JSON.stringify(cursor)} is not a run: pass the previous page's nextCursor`, { field: "cursor", ...extra });
}

/** More client tools than a run takes. */
export function tooManyClientTools(count: number, max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `tools: ${String(count)} client tools, more than the ${String(max)} a run takes`, { ...extra });
}

/** A client tool's name that is not 1 to 64 ASCII letters, digits, `_` or `-`. */
export function clientToolName(index: number, name: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `tools[${String(index)}].name ${JSON.stringify(name)}: 1 to 64 ASCII letters, digits, \`_\` or \`-\``, { ...extra });
}

/** Two client tools of one name. */
export function clientToolTwice(index: number, name: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `tools[${String(index)}].name ${JSON.stringify(name)}: named twice`, { ...extra });
}

/** A client tool whose parameters are not an object schema. */
export function clientToolParameters(index: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `tools[${String(index)}].parameters: a JSON Schema of type "object"`, { ...extra });
}

/** A run's text input that is empty. */
export function inputEmpty(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: the message is empty`, { ...extra });
}

/** A leading `tool` message without its `toolCallId`. */
export function inputToolMessageWithoutCall(index: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: input[${String(index)}]: a tool message needs its toolCallId`, { ...extra });
}

/** Two answers to one client tool call. */
export function inputCallAnsweredTwice(index: number, call: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: input[${String(index)}]: call ${JSON.stringify(call)} is answered twice`, { ...extra });
}

/** A `tool` message after another kind of message. */
export function inputToolMessageLate(index: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: input[${String(index)}]: tool messages come first, before any other message`, { ...extra });
}

/** A `toolCallId` on a message that is not a `tool` message. */
export function inputCallIdOffTool(index: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: input[${String(index)}]: only a tool message has a toolCallId`, { ...extra });
}

/** A messages input with no message. */
export function inputNoMessage(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: the input has no message`, { ...extra });
}

/** A messages input whose last message is not the user's. */
export function inputLastNotUser(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: the last message must be the user's (or the input only answers tool calls)`, { ...extra });
}

/** A run's input over its cap. */
export function inputTooLarge(size: number, max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `input: ${String(size)} bytes, more than the ${String(max)} a run takes`, { ...extra });
}

/** A `timeoutMs` of 0. */
export function timeoutZero(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `timeoutMs: must be more than 0`, { ...extra });
}

/** Session metadata over its caps. */
export function metadataTooLarge(keys: number, bytes: number, maxKeys: number, maxBytes: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `metadata: ${String(keys)} keys, ${String(bytes)} bytes as JSON; the caps are ${String(maxKeys)} keys and ${String(maxBytes)} bytes`, { field: "metadata", ...extra });
}

/** A session metadata key over 128 characters (its first 32 shown). */
export function metadataKeyTooLong(key: string, max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `metadata: the key ${JSON.stringify(key)}... is longer than ${String(max)} characters`, { field: "metadata", ...extra });
}

/** An environment asked to act while it is not `ready` (`details.environment`: as it is). */
export function environmentNotReady(id: string, status: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `environment ${id} is ${status}, not ready`, { ...extra });
}

/** An environment a run names that is not `ready` (or is being deleted). */
export function environmentUnreadyForRun(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `environment ${id} is not ready (it may have been deleted)`, { ...extra });
}

/** `tokens.create` with a scope the protocol does not have. */
export function unknownScope(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `scopes: an unknown scope`, { field: "scopes", ...extra });
}

/** `tokens.create` granting nothing. */
export function noScopes(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `scopes: give scopes, a preset, or both`, { field: "scopes", ...extra });
}

/** A token lifetime out of range. */
export function tokenLifetime(ms: number, max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `expiresInMs: ${String(ms)} is out of range: 1000 to ${String(max)} (30 days)`, { field: "expiresInMs", ...extra });
}

/** A scope the minting token does not have. */
export function scopeBeyondMinter(scope: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `scopes: ${scope} is beyond the minting token's scopes`, { field: "scopes", ...extra });
}

/** A token that would outlive the token minting it. */
export function tokenOutlivesMinter(leftMs: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `expiresInMs: the token would outlive the one minting it (which expires in ${String(leftMs)} ms)`, { field: "expiresInMs", ...extra });
}

/** An empty subject. */
export function subjectEmpty(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `subject: it is empty`, { field: "subject", ...extra });
}

/** A subject on an admin token. */
export function subjectOnAdmin(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `subject: an admin token sees every subject; it cannot be bound`, { field: "subject", ...extra });
}

/** A subject other than the minting token's. */
export function subjectNotMinters(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `subject: it is not the minting token's subject`, { field: "subject", ...extra });
}

/** Agents on an admin token. */
export function agentsOnAdmin(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `agents: an admin token runs every agent; it cannot be bound`, { field: "agents", ...extra });
}

/** No agents, or too many. */
export function agentsCount(max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `agents: give 1 to ${String(max)} agents, or none for every agent`, { field: "agents", ...extra });
}

/** An agent the minting token is not bound to. */
export function agentNotMinters(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `agents: an agent the minting token is not bound to`, { field: "agents", ...extra });
}

/** A bound token minting an admin token. */
export function boundMintingAdmin(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `scopes: a bound token minting an admin token`, { field: "scopes", ...extra });
}

/** A ticket asked with scopes other than `session.read`. */
export function ticketScopes(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `scopes: a ticket reads one stream: it takes session.read and nothing else`, { field: "scopes", ...extra });
}

/** An idempotency key that minted a token with other params. */
export function tokenKeyReused(key: string, id: string, why: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `idempotency key ${JSON.stringify(key)} minted token ${id}, which ${why}: use a new key`, { tokenId: id, ...extra });
}

/** A run past its `timeoutMs` (its `RunResult.error`). */
export function runTimedOut(ms: number, extra: ErrorDetails = {}): ApiError {
  return refusal("timeout", `the run exceeded its time limit of ${String(ms)} ms`, { ...extra });
}

/** `tasks.list`'s `status` is not a task status. */
export function unknownTaskStatus(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `status: an unknown task status`, { field: "status", ...extra });
}

/** `tasks.list`'s `kind` is not a task kind. */
export function unknownTaskKind(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `kind: an unknown task kind`, { field: "kind", ...extra });
}

/** `tasks.list`'s cursor is not a task id. */
export function cursorNotATask(cursor: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `cursor ${JSON.stringify(cursor)} is not a task: pass the previous page's nextCursor`, { field: "cursor", ...extra });
}

/** A change to a task that has ended. */
export function taskEnded(id: string, status: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `task ${JSON.stringify(id)} has ended (${status})`, { ...extra });
}

/** A task that kept changing under a cancel. */
export function taskBusy(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `task ${JSON.stringify(id)} kept changing; cancel it again`, { ...extra });
}

/** A task whose work is gone without an ending (its `error` when `lost`). */
export function taskLost(why: string, extra: ErrorDetails = {}): ApiError {
  return refusal("unavailable", `the task's work is gone: ${why}`, { ...extra });
}

/** A background process that ended with a non-zero exit code or a signal. */
export function processFailed(how: string, extra: ErrorDetails = {}): ApiError {
  return refusal("internal", `the process ${how}`, { ...extra });
}

/** A background process killed at its time limit. */
export function processTimedOut(seconds: number, extra: ErrorDetails = {}): ApiError {
  return refusal("timeout", `the process ran past its ${String(seconds)} s limit and was killed`, { ...extra });
}

/** `tasks.notify`'s policy is not one this side knows. */
export function unknownNotifyPolicy(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `notifyPolicy: one of done_only, state_changes, silent`, { field: "notifyPolicy", ...extra });
}

/**
 * A `schedule` the clock cannot follow (a bad expression, time zone,
 *  interval or time).
 */
export function badSchedule(why: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `schedule: ${why}`, { field: "schedule", ...extra });
}

/** `catchUp` is not a policy this side knows. */
export function unknownCatchUp(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `catchUp: one of run_once, skip`, { field: "catchUp", ...extra });
}

/** `deleteAfterRun` on a schedule that fires more than once. */
export function deleteAfterRunNotAt(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `deleteAfterRun: only an at schedule (which fires once) is deleted after its run`, { field: "deleteAfterRun", ...extra });
}

/** `schedules.list`'s cursor is not a schedule id. */
export function cursorNotASchedule(cursor: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `cursor ${JSON.stringify(cursor)} is not a schedule: pass the previous page's nextCursor`, { field: "cursor", ...extra });
}

/** `schedules.run` while the schedule's last firing is still live. */
export function scheduleFiring(id: string, task: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `schedule ${JSON.stringify(id)} is still running its last firing (task ${JSON.stringify(task)}); wait for it or cancel it`, { ...extra });
}

/** A token past the schedules it may keep. */
export function tooManySchedules(max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("quota_exceeded", `at most ${String(max)} schedules per token: delete one first`, { ...extra });
}

/** A schedule that changed under an update. */
export function scheduleBusy(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `schedule ${JSON.stringify(id)} kept changing; update it again`, { ...extra });
}

/** A decision the approval does not offer. */
export function decisionNotOffered(offered: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `decision not offered for this approval; offered: ${offered}`, { ...extra });
}

/** A second answer to an approval. */
export function approvalResolved(extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `this approval was already resolved`, { ...extra });
}

/** A second answer to a question. */
export function questionAnswered(extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `this question was already answered`, { ...extra });
}

/** An answer that does not fit the question's schema. */
export function answerUnfit(errors: string, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `the answer does not fit the question: ${errors}`, { ...extra });
}

/** `tools.invoke`'s `tool` out of bounds. */
export function toolRefInvalid(max: number, extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `tool: a catalog id or name of 1 to ${String(max)} bytes`, { ...extra });
}

/** `tools.invoke`'s `arguments` not an object. */
export function argumentsNotObject(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `arguments: an object`, { ...extra });
}

/** A tool the agent may not call directly (or that does not exist). */
export function noDirectTool(tool: string, extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `no tool ${JSON.stringify(tool)} this agent may call directly`, { outcome: "not_found", ...extra });
}

/** `agents.create` of an id the config declares. */
export function agentInConfig(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `agent ${JSON.stringify(id)} is declared in the config file`, { ...extra });
}

/** `agents.update` or `agents.delete` of an agent the config declares. */
export function agentEditInConfig(id: string, extra: ErrorDetails = {}): ApiError {
  return refusal("conflict", `agent ${JSON.stringify(id)} is declared in the config file; edit it there`, { ...extra });
}

/** An environment provider the gateway does not have. */
export function noEnvironmentProvider(id: string, have: string, extra: ErrorDetails = {}): ApiError {
  return refusal("not_found", `no environment provider ${JSON.stringify(id)}; this gateway has ${have}`, { ...extra });
}

/** `environments.create`'s `settings` not an object. */
export function settingsNotObject(extra: ErrorDetails = {}): ApiError {
  return refusal("invalid_request", `settings: an object`, { ...extra });
}

/** A fake gateway's scripted `rate_limited` fault. */
export function injectedRateLimit(extra: ErrorDetails = {}): ApiError {
  return refusal("rate_limited", `this token is over its rate (injected by the fake gateway)`, { ...extra });
}

/** A fake gateway's scripted `unavailable` fault. */
export function injectedUnavailable(extra: ErrorDetails = {}): ApiError {
  return refusal("unavailable", `the gateway is unavailable (injected by the fake gateway)`, { ...extra });
}
