// Runs as the gateway accepts and controls them: `runs.create` and
// `sessions.send` (one path: the protocol's checks of the params, the
// idempotency key, the environment, the session, the multitask strategy,
// `run.created`, then the run played on its own), `runs.cancel`,
// `runs.wait`, `runs.events`, `runs.list` and `sessions.abort`.

import {
  RUN_STATUSES,
  TERMINAL_TYPES,
  caps,
  type protocol as P,
  refusals,
  runSummary,
  summaryContains,
} from "@talon/sdk";

import { Failure, fail, notFound } from "./errors.js";
import { play } from "./play.js";
import { FakeRun, cursorExpired, takeExpire } from "./script.js";
import { DEFAULT_AGENT, State, isTerminal, now, resultOf, runEvent, scopedKey, sha256, type Caller } from "./state.js";
import { copy, json } from "./wire.js";

/** How long `runs.cancel` waits for a running run to end. */
const CANCEL_SETTLE_MS = 5_000;
/** `runs.wait`'s deadline when the caller gives none, and its cap. */
const DEFAULT_WAIT_MS = caps.DEFAULT_WAIT_MS;
const MAX_WAIT_MS = caps.DEFAULT_MAX_WAIT_MS;
/** Pages. */
const DEFAULT_LIMIT = caps.DEFAULT_LIMIT;
const MAX_LIMIT = caps.MAX_LIMIT;
/** The longest input a run takes, in bytes, and the most client tools. */
const MAX_INPUT_BYTES = caps.MAX_INPUT_BYTES;
const MAX_CLIENT_TOOLS = caps.MAX_CLIENT_TOOLS;

/** A page's length: the caller's, within 1 and the cap. */
export function limitOf(asked: number | null | undefined): number {
  return Math.min(Math.max(asked ?? DEFAULT_LIMIT, 1), MAX_LIMIT);
}

/** The protocol's `check_client_tools`. */
function checkClientTools(tools: readonly P.ClientTool[]): void {
  if (tools.length > MAX_CLIENT_TOOLS) {
    throw fail(refusals.tooManyClientTools(tools.length, MAX_CLIENT_TOOLS));
  }
  tools.forEach((tool, i) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) {
      throw fail(refusals.clientToolName(i, [...tool.name].slice(0, 64).join("")));
    }
    if (tools.slice(0, i).some((t) => t.name === tool.name)) throw fail(refusals.clientToolTwice(i, tool.name));
    const schema = tool.parameters as { type?: unknown } | null | undefined;
    if (schema === null || typeof schema !== "object" || schema.type !== "object") {
      throw fail(refusals.clientToolParameters(i));
    }
  });
}

/** The protocol's `split_messages`: what is wrong with a run's messages, if anything. */
function messagesProblem(messages: readonly P.InputMessage[]): P.ApiError | undefined {
  let answered = 0;
  while (answered < messages.length && messages[answered]?.role === "tool") answered++;
  for (let index = 0; index < answered; index++) {
    const id = messages[index]?.toolCallId;
    if (!id) return refusals.inputToolMessageWithoutCall(index);
    if (messages.slice(0, index).some((m) => m.toolCallId === id)) return refusals.inputCallAnsweredTwice(index, id);
  }
  for (let index = answered; index < messages.length; index++) {
    const m = messages[index];
    if (m?.role === "tool") return refusals.inputToolMessageLate(index);
    if (m?.toolCallId !== undefined && m.toolCallId !== null) return refusals.inputCallIdOffTool(index);
  }
  if (answered === messages.length) return answered === 0 ? refusals.inputNoMessage() : undefined;
  if (messages.at(-1)?.role !== "user") return refusals.inputLastNotUser();
  return undefined;
}

/** The protocol's `RunsCreateParams::check`: client tools, the input, `timeoutMs`. */
export function checkRunParams(p: P.RunsCreateParams): void {
  checkClientTools(p.tools ?? []);
  if (typeof p.input === "string") {
    if (p.input.trim() === "") throw fail(refusals.inputEmpty());
  } else {
    const problem = messagesProblem(p.input);
    if (problem) throw fail(problem);
  }
  const size =
    typeof p.input === "string"
      ? Buffer.byteLength(p.input)
      : p.input.reduce((n, m) => n + Buffer.byteLength(m.content), 0);
  if (size > MAX_INPUT_BYTES) throw fail(refusals.inputTooLarge(size, MAX_INPUT_BYTES));
  if (p.timeoutMs === 0) throw fail(refusals.timeoutZero());
}

/** The input's text, as `run.created` and the user's message carry it. */
function inputText(input: P.RunInput): string {
  return typeof input === "string" ? input : (input.at(-1)?.content ?? "");
}

/** The hash telling a retried `runs.create` from another call with its key. */
function requestHash(p: P.RunsCreateParams): string {
  const { idempotencyKey: _key, ...rest } = p;
  const canonical: Record<string, unknown> = {};
  const entries: [string, unknown][] = Object.entries(rest);
  for (const [k, v] of entries) {
    if (v === null || v === undefined || (Array.isArray(v) && v.length === 0 && k === "tools")) continue;
    canonical[k] = v;
  }
  return sha256(json(canonical));
}

/** The run's session: by id, by key (created if absent), or new. */
function sessionFor(state: State, p: P.RunsCreateParams): P.Session {
  const agent = p.agentId ?? undefined;
  if (agent !== undefined && !state.agent(agent)) throw notFound("agent", agent);
  let session: P.Session;
  if (p.sessionId) {
    session = state.session(p.sessionId);
    if (p.sessionKey && p.sessionKey !== session.key) throw fail(refusals.sessionIdAndKeyDiffer());
  } else if (p.sessionKey) {
    session = state.resolveSession(p.sessionKey, agent);
  } else {
    session = state.createSession(agent ?? DEFAULT_AGENT);
  }
  if (agent !== undefined && session.agentId !== agent) {
    throw fail(refusals.sessionOfOtherAgent(session.key, session.agentId, agent));
  }
  return session;
}

/** The live runs of a session, oldest first. */
export function liveRuns(state: State, sessionId: string): P.Run[] {
  const live: P.Run[] = [];
  for (const record of state.runs.values()) {
    if (record.run.sessionId === sessionId && !isTerminal(record.run.status)) live.push(record.run);
  }
  return live;
}

/** Accepts a run (`runs.create`, `sessions.send`) and starts playing it. */
export function startRun(state: State, caller: Caller, p: P.RunsCreateParams, requestId: string | undefined): P.Run {
  checkRunParams(p);
  const given = p.idempotencyKey ?? undefined;
  const key = given === undefined ? undefined : scopedKey(caller, "run", given);
  const hash = requestHash(p);
  if (key !== undefined) {
    const first = state.runKeys.get(key);
    if (first) {
      if (first.hash !== hash) throw fail(refusals.idempotencyReused(given ?? ""));
      return copy(state.run(first.runId).run);
    }
  }
  if (p.environmentId) {
    const environment = state.environments.find((e) => e.id === p.environmentId);
    if (!environment) throw notFound("environment", p.environmentId);
    if (environment.status !== "ready") {
      throw fail(refusals.environmentUnreadyForRun(p.environmentId));
    }
  }
  const session = sessionFor(state, p);
  const live = liveRuns(state, session.id);
  const strategy = p.multitaskStrategy ?? "enqueue";
  if (live.length > 0) {
    if (strategy === "reject") {
      throw fail(refusals.sessionBusy({ activeRunIds: live.map((r) => r.id) }));
    }
    if (strategy === "interrupt" || strategy === "rollback") {
      for (const run of live) requestCancel(state, run.id, strategy === "rollback", requestId);
    }
  }
  const run: P.Run = {
    agentId: session.agentId,
    createdAt: now(),
    id: state.newId("run"),
    sessionId: session.id,
    sessionKey: session.key,
    status: "queued",
  };
  const summary = runSummary(p.input);
  if (summary !== undefined) run.summary = summary;
  const input = inputText(p.input);
  state.runs.set(run.id, {
    run,
    input,
    requestId,
    script: state.scripts.shift() ?? FakeRun.reply("ok"),
    timeoutMs: p.timeoutMs ?? undefined,
    artifacts: [],
    messages: [],
    toolCalls: 0,
    turns: 0,
    answeredTurns: 0,
  });
  if (key !== undefined) state.runKeys.set(key, { hash, runId: run.id });
  state.push(runEvent(run, { type: "run.created", data: { input } }, requestId));
  if (live.length > 0 && strategy === "enqueue") {
    state.push(runEvent(run, { type: "run.queued", data: { reason: "session" } }, requestId));
  }
  // Played once this call has answered (the answer says `queued`, as the gateway's does).
  setImmediate(() => {
    // A bug in the player leaves the run where it is; it never takes the process down.
    play(state, run.id).catch(() => undefined);
  });
  return copy(run);
}

/** Asks a run to stop: a queued one ends at once (`run.cancelled`), a running one is told and ends itself. */
export function requestCancel(state: State, runId: string, rollback: boolean, requestId: string | undefined): void {
  const record = state.runs.get(runId);
  if (!record || isTerminal(record.run.status)) return;
  record.cancel = { rollback: rollback || record.cancel?.rollback === true };
  if (record.run.status === "queued") {
    record.run.status = "cancelled";
    record.run.endedAt = now();
    record.result = resultOf(record.run);
    const data: P.RunEndedData = {
      durationMs: 0,
      error: "the run was cancelled before it started",
      toolCalls: 0,
      turns: 0,
      usage: {},
    };
    state.push(runEvent(record.run, { type: "run.cancelled", data }, requestId));
  }
  state.touch();
}

/** `runs.cancel`: the run once it ended (at most `settleMs` later), as it then is. */
export async function cancel(
  state: State,
  runId: string,
  requestId: string | undefined,
  settleMs = CANCEL_SETTLE_MS,
): Promise<P.Run> {
  const record = state.run(runId);
  if (isTerminal(record.run.status)) return copy(record.run);
  requestCancel(state, runId, false, requestId);
  const deadline = now() + settleMs;
  while (!isTerminal(record.run.status) && now() < deadline && !state.closing) await state.changed(deadline);
  return copy(record.run);
}

/** `runs.wait`: the result, or `accepted` once the deadline passed. */
export async function wait(state: State, runId: string, timeoutMs: number | null | undefined): Promise<P.RunResult> {
  const record = state.run(runId);
  const deadline = now() + Math.min(timeoutMs ?? DEFAULT_WAIT_MS, MAX_WAIT_MS);
  for (;;) {
    if (record.result && isTerminal(record.run.status)) return copy(record.result);
    if (now() >= deadline || state.closing) return copy(resultOf(record.run));
    await state.changed(deadline);
  }
}

/** Parses an event cursor (`after`), or `invalid_request` as the method words it. */
export function cursorOf(
  text: string | null | undefined,
  refuse: (text: string) => P.ApiError = refusals.afterNotAnEventId,
): bigint | undefined {
  if (text === null || text === undefined) return undefined;
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > 18446744073709551615n) {
    throw fail(refuse(text));
  }
  return BigInt(text);
}

/** The log's index to read from after `cursor`. */
export function indexAfter(cursor: bigint | undefined): number {
  if (cursor === undefined) return 0;
  return cursor > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(cursor);
}

/**
 * `runs.events`: the run's events between `after` and `before`, the first
 * `limit` of them or the last `last`.
 */
export function events(state: State, p: P.RunsEventsParams): P.RunsEventsResult {
  state.run(p.runId);
  const after = cursorOf(p.after);
  const before = cursorOf(p.before, refusals.beforeNotAnEventId);
  const lastAsked = p.last ?? undefined;
  if (lastAsked !== undefined && p.limit !== undefined && p.limit !== null) throw fail(refusals.lastAndLimit());
  if (after !== undefined && takeExpire(state.faults)) throw new Failure(cursorExpired(after));
  // The log's event `n` is at `n - 1`.
  const end = before === undefined ? state.log.length : Math.min(state.log.length, indexAfter(before) - 1);
  const window: P.EventEnvelope[] = [];
  const take = lastAsked === undefined ? limitOf(p.limit) : Number.MAX_SAFE_INTEGER;
  for (let i = indexAfter(after); i < end && window.length < take; i++) {
    const event = state.log[i];
    if (event?.envelope.runId === p.runId) window.push(JSON.parse(event.json) as P.EventEnvelope);
  }
  const out = lastAsked === undefined ? window : window.slice(Math.max(0, window.length - limitOf(lastAsked)));
  const last = out.at(-1);
  const done = last !== undefined && TERMINAL_TYPES.includes(last.type);
  return { done, events: out };
}

/** `runs.list`: newest first (ties by id, descending), after the cursor, filtered. */
export function list(state: State, p: P.RunsListParams): P.RunsListResult {
  if ((p.status ?? []).some((s) => !RUN_STATUSES.includes(s))) {
    throw fail(refusals.unknownRunStatus());
  }
  const after = p.createdAfter ?? undefined;
  const before = p.createdBefore ?? undefined;
  if (after !== undefined && before !== undefined && after >= before) {
    throw fail(refusals.emptyTimeWindow(after, before));
  }
  let runs = [...state.runs.values()]
    .map((r) => r.run)
    .filter(
      (r) =>
        (!p.status || p.status.includes(r.status)) &&
        (!p.agentId || r.agentId === p.agentId) &&
        (!p.sessionId || r.sessionId === p.sessionId) &&
        (after === undefined || r.createdAt >= after) &&
        (before === undefined || r.createdAt < before) &&
        summaryContains(r.summary, p.text ?? ""),
    )
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  if (p.cursor) {
    const cursor = state.runs.get(p.cursor)?.run;
    if (!cursor) {
      throw fail(refusals.cursorNotARun(p.cursor));
    }
    runs = runs.filter((r) => r.createdAt < cursor.createdAt || (r.createdAt === cursor.createdAt && r.id < cursor.id));
  }
  const limit = limitOf(p.limit);
  const page = runs.slice(0, limit);
  const result: P.RunsListResult = { runs: copy(page) };
  if (runs.length > limit && page.length > 0) result.nextCursor = page.at(-1)?.id ?? null;
  return result;
}

/** A day in epoch milliseconds. */
const DAY_MS = 86_400_000;

/** Adds `b`'s figures to `a` (a figure absent on both stays absent). */
function addUsage(a: P.Usage, b: P.Usage): void {
  for (const k of [
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "costUsd",
  ] as const) {
    const v = b[k];
    if (v !== undefined && v !== null) a[k] = (a[k] ?? 0) + v;
  }
}

/** `usage.summary`: the window's runs by UTC day (newest first), agent and model. */
export function usage(state: State, p: P.UsageSummaryParams): P.UsageSummary {
  const before = p.createdBefore ?? now() + 1;
  const after = p.createdAfter ?? Math.max(0, before - caps.USAGE_DEFAULT_DAYS * DAY_MS);
  if (after >= before) throw fail(refusals.emptyTimeWindow(after, before));
  const days = Math.ceil((before - after) / DAY_MS);
  if (days > caps.USAGE_MAX_DAYS) throw fail(refusals.usageWindowTooLong(days, caps.USAGE_MAX_DAYS));
  const groups = new Map<string, P.UsageRow>();
  for (const { run } of state.runs.values()) {
    if (run.createdAt < after || run.createdAt >= before || (p.agentId && run.agentId !== p.agentId)) continue;
    const day = run.createdAt - (run.createdAt % DAY_MS);
    const key = JSON.stringify([day, run.agentId, run.model ?? null]);
    let row = groups.get(key);
    if (!row) {
      row = { day, agentId: run.agentId, runs: 0, usage: {} };
      if (run.model) row.model = run.model;
      groups.set(key, row);
    }
    row.runs += 1;
    if (run.usage) addUsage(row.usage, run.usage);
  }
  // By day, newest first, then agent, then model (a run that never started, without one, first).
  const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const rows = [...groups.values()].sort(
    (a, b) => b.day - a.day || order(a.agentId, b.agentId) || order(a.model ?? "", b.model ?? ""),
  );
  const total: P.Usage = {};
  let runs = 0;
  for (const row of rows) {
    runs += row.runs;
    addUsage(total, row.usage);
  }
  return { createdAfter: after, createdBefore: before, runs, usage: total, rows };
}

/** `sessions.abort`: cancels every live run of the session, queued ones first. */
export async function abort(
  state: State,
  sessionId: string,
  requestId: string | undefined,
): Promise<P.SessionsAbortResult> {
  state.session(sessionId);
  const live = liveRuns(state, sessionId).sort((a, b) => Number(a.status !== "queued") - Number(b.status !== "queued"));
  const cancelledRunIds: string[] = [];
  for (const run of live) cancelledRunIds.push((await cancel(state, run.id, requestId)).id);
  return { cancelledRunIds };
}
