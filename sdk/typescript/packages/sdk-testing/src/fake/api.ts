// The method table, served from memory. `HANDLERS` is typed
// `{ [M in MethodName]: Handler<M> }` over the generated `MethodTypes`, so
// a method added to the table fails `tsc` until the fake serves it
// (`tasks.*` from scripted tasks, `tasks.ts`). `serveCall` is one call as both transports
// serve it, in the gateway's order: recorded, the queued call faults, the
// method (unknown: `not_found`), its scope, its params (an object, checked
// against its schema), `unsupported`, then the handler.

import { METHODS, type MethodName, type MethodTypes, type protocol as P, refusals } from "@talon/sdk";

import {
  createAgent,
  createEnvironment,
  deleteEnvironment,
  answerQuestion,
  invoke,
  respondApproval,
  updateAgent,
} from "./catalog.js";
import { deleteRun, deleteSession } from "./deletes.js";
import { Failure, errorOf, fail, notFound } from "./errors.js";
import { decodeParams } from "./params.js";
import { abort, cancel, events, list, startRun, usage, wait } from "./runs.js";
import { takeCallFault } from "./script.js";
import { cancelTask, getTask, listTasks, notifyTask, taskEvents } from "./tasks.js";
import { compact, createSession, fork, listSessions, messages, updateSession } from "./sessions.js";
import { MODEL, State, type Caller } from "./state.js";
import { createToken, listTokens, mintTicket, requireScope, revokeToken } from "./tokens.js";
import { copy } from "./wire.js";

/** What a handler knows of its call. */
export interface CallContext {
  readonly state: State;
  readonly caller: Caller;
  /** The request's id (the WebSocket connection's, for a call over it); the events it causes carry it. */
  readonly requestId: string | undefined;
}

/** One method's implementation, typed by the table. */
export type Handler<M extends MethodName> = (
  params: MethodTypes[M]["params"],
  call: CallContext,
) => MethodTypes[M]["result"] | Promise<MethodTypes[M]["result"]>;

function accepted(run: P.Run): P.RunAccepted {
  return { ...run, runId: run.id };
}

/** The artifact `p` names, if it is there and of the run `p` names (when it names one). */
function artifactOf(state: State, p: P.ArtifactRef) {
  return state.artifacts.find((a) => a.summary.id === p.artifactId && (!p.runId || a.summary.runId === p.runId));
}

function onlyOnTheSocket(method: string): Failure {
  return fail(refusals.websocketOnly(method));
}

/** Every method of the table. */
export const HANDLERS: { [M in MethodName]: Handler<M> } = {
  "agents.list": (p, { state }) => {
    const { items, nextCursor } = pageAfter(copy(state.agents), p.cursor, p.limit);
    return nextCursor ? { agents: items, nextCursor } : { agents: items };
  },
  "agents.get": (p, { state }) => {
    const agent = state.agent(p.agentId);
    if (!agent) throw notFound("agent", p.agentId);
    return copy(agent);
  },
  "agents.create": (p, { state }) => createAgent(state, p),
  "agents.update": (p, { state }) => updateAgent(state, p),
  "sessions.list": (p, { state }) => listSessions(state, p),
  "sessions.create": (p, { state }) => createSession(state, p),
  "sessions.resolve": (p, { state }) => {
    const found = state.sessionByKey(p.key);
    if (found) return copy(found);
    const agent = p.agentId ?? "main";
    if (!state.agent(agent)) throw notFound("agent", agent);
    return copy(state.resolveSession(p.key, agent));
  },
  "sessions.send": (p, { state, caller, requestId }) => {
    const { sessionId, ...rest } = p;
    return accepted(startRun(state, caller, { ...rest, sessionId }, requestId));
  },
  "sessions.messages": (p, { state }) => messages(state, p),
  "sessions.fork": (p, { state }) => fork(state, p),
  "sessions.update": (p, { state, requestId }) => updateSession(state, p, requestId),
  "sessions.compact": (p, { state, requestId }) => compact(state, p.sessionId, requestId),
  "sessions.abort": (p, { state, requestId }) => abort(state, p.sessionId, requestId),
  "sessions.delete": (p, { state }) => deleteSession(state, p.sessionId),
  "runs.create": (p, { state, caller, requestId }) => accepted(startRun(state, caller, p, requestId)),
  "runs.list": (p, { state }) => list(state, p),
  "usage.summary": (p, { state }) => usage(state, p),
  "runs.get": (p, { state }) => copy(state.run(p.runId).run),
  "runs.events": (p, { state }) => events(state, p),
  "runs.wait": (p, { state }) => wait(state, p.runId, p.timeoutMs),
  "runs.cancel": (p, { state, requestId }) => cancel(state, p.runId, requestId),
  "runs.delete": (p, { state }) => deleteRun(state, p.runId),
  "tasks.list": (p, { state }) => listTasks(state, p),
  "tasks.get": (p, { state }) => getTask(state, p),
  "tasks.cancel": (p, { state }) => cancelTask(state, p),
  "tasks.notify": (p, { state }) => notifyTask(state, p),
  "tasks.events": (p, { state }) => taskEvents(state, p),
  // The fake has no clock that fires: it holds no schedule (see the
  // contract's `unmodelled`).
  "schedules.list": (p) => {
    if (p.cursor !== undefined && p.cursor !== null) throw fail(refusals.cursorNotASchedule(p.cursor));
    return { schedules: [] };
  },
  "schedules.get": (p) => {
    throw fail(refusals.notFound("schedule", p.scheduleId));
  },
  "schedules.create": (p, { state }) => {
    const agent = p.agentId ?? "main";
    if (!state.agent(agent)) throw notFound("agent", agent);
    throw fail(refusals.unsupported("schedules.create"));
  },
  "schedules.update": (p) => {
    throw fail(refusals.notFound("schedule", p.scheduleId));
  },
  "schedules.run": (p) => {
    throw fail(refusals.notFound("schedule", p.scheduleId));
  },
  "schedules.delete": (p) => {
    throw fail(refusals.notFound("schedule", p.scheduleId));
  },
  "models.list": (p) => {
    const { items, nextCursor } = pageAfter([{ id: MODEL, name: "mock-model", provider: "mock" }], p.cursor, p.limit);
    return nextCursor ? { models: items, nextCursor } : { models: items };
  },
  "models.status": () => ({ providers: [{ authenticated: true, provider: "mock" }] }),
  "tools.list": (p, { state }) => {
    const agent = p.agentId ?? "main";
    if (!state.agent(agent)) throw notFound("agent", agent);
    const { items, nextCursor } = pageAfter(copy(state.tools), p.cursor, p.limit);
    return nextCursor ? { tools: items, nextCursor } : { tools: items };
  },
  "tools.invoke": (p, { state, caller }) => invoke(state, caller, p),
  "artifacts.list": (p, { state }) => {
    const nowMs = Date.now();
    let artifacts = state.artifacts
      .map((a) => a.summary)
      .filter((a) => (!p.runId || a.runId === p.runId) && (!p.sessionId || a.sessionId === p.sessionId))
      .filter((a) => a.expiresAt === undefined || a.expiresAt === null || a.expiresAt > nowMs);
    if (p.cursor) {
      const at = artifacts.findIndex((a) => a.id === p.cursor);
      artifacts = at < 0 ? [] : artifacts.slice(at + 1);
    }
    const limit = Math.min(Math.max(p.limit ?? 100, 1), 500);
    const page = artifacts.slice(0, limit);
    const result: P.ArtifactsListResult = { artifacts: copy(page) };
    if (artifacts.length > limit && page.length > 0) result.nextCursor = page.at(-1)?.id ?? null;
    return result;
  },
  "artifacts.get": (p, { state }) => {
    const found = artifactOf(state, p);
    if (!found) throw notFound("artifact", p.artifactId);
    return copy(found.summary);
  },
  "artifacts.download": (p, { state }) => {
    const found = artifactOf(state, p);
    if (!found) throw notFound("artifact", p.artifactId);
    return { artifact: copy(found.summary), url: `/v1/artifacts/${found.summary.id}/content` };
  },
  "approvals.list": (p, { state }) => {
    const all = state.approvals.filter(
      (a) =>
        (!p.status || a.status === p.status) &&
        (!p.runId || a.runId === p.runId) &&
        (!p.sessionId || a.sessionId === p.sessionId),
    );
    const { items, nextCursor } = pageOf(all, p.cursor, p.limit);
    const result: P.ApprovalsListResult = { approvals: copy(items) };
    if (nextCursor) result.nextCursor = nextCursor;
    return result;
  },
  "approvals.get": (p, { state }) => {
    const found = state.approvals.find((a) => a.id === p.approvalId);
    if (!found) throw notFound("approval", p.approvalId);
    return copy(found);
  },
  "approvals.respond": (p, { state }) => respondApproval(state, p),
  "questions.list": (p, { state }) => {
    const all = state.questions.filter(
      (q) => (!p.status || q.status === p.status) && (!p.runId || q.runId === p.runId),
    );
    const { items, nextCursor } = pageOf(all, p.cursor, p.limit);
    const result: P.QuestionsListResult = { questions: copy(items) };
    if (nextCursor) result.nextCursor = nextCursor;
    return result;
  },
  "questions.respond": (p, { state }) => answerQuestion(state, p),
  "environments.list": (p, { state }) => {
    const { items, nextCursor } = pageAfter(copy(state.environments), p.cursor, p.limit);
    return nextCursor ? { environments: items, nextCursor } : { environments: items };
  },
  "environments.create": (p, { state, caller }) => createEnvironment(state, caller, p),
  "environments.status": (p, { state }) => {
    const found = state.environments.find((e) => e.id === p.environmentId);
    if (!found) throw notFound("environment", p.environmentId);
    return copy(found);
  },
  "environments.delete": (p, { state }) => deleteEnvironment(state, p),
  "events.subscribe": () => {
    throw onlyOnTheSocket("events.subscribe");
  },
  "events.unsubscribe": () => {
    throw onlyOnTheSocket("events.unsubscribe");
  },
  "tokens.ticket": (p, { state, caller }) => mintTicket(state, caller, p),
  "tokens.create": (p, { state, caller }) => createToken(state, caller, p),
  "tokens.list": (p, { state }) => listTokens(state, p),
  "tokens.revoke": (p, { state }) => revokeToken(state, p),
};

/** Whether `name` is a method of the table. */
export function isMethod(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(METHODS, name);
}

/** The method a call names, or `not_found` (the name cut to 64 characters, as the gateway shows it). */
export function methodOf(name: string): MethodName {
  if (isMethod(name)) return name;
  const shown = [...name].slice(0, 64).join("");
  throw fail(refusals.noMethod(shown));
}

/** A known method's call: its scope, its params, `unsupported`, its handler. */
export async function dispatch(method: MethodName, raw: unknown, call: CallContext): Promise<unknown> {
  requireScope(call.caller, METHODS[method].scope);
  const params = decodeParams(method, raw);
  // No method is declared ahead of its server now; one that is would be refused here, as the gateway does.
  const { stability }: { stability: string } = METHODS[method];
  if (stability === "unsupported") throw fail(refusals.unsupported(method));
  // The table's types correlate a method with its handler; TypeScript cannot follow that through an index.
  const handler = HANDLERS[method] as Handler<MethodName>;
  return handler(params, call);
}

/** Records a call and applies the faults queued for its method (before anything else is looked at). */
export async function arrive(
  state: State,
  method: string,
  params: unknown,
  transport: "http" | "websocket",
): Promise<void> {
  state.calls.push({ method, params: params === undefined || params === null ? {} : copy(params), transport });
  const fault = takeCallFault(state.faults, method);
  if (!fault) return;
  if ("fail" in fault) throw new Failure(fault.fail);
  await state.sleep(fault.waitMs);
}

/** One call, as both transports serve it: the result, or the error. */
export async function serveCall(
  state: State,
  caller: Caller,
  method: string,
  params: unknown,
  transport: "http" | "websocket",
  requestId: string | undefined,
): Promise<{ ok: true; result: unknown } | { ok: false; error: P.ApiError }> {
  try {
    await arrive(state, method, params, transport);
    const known = methodOf(method);
    return { ok: true, result: await dispatch(known, params, { state, caller, requestId }) };
  } catch (thrown) {
    return { ok: false, error: errorOf(thrown) };
  }
}

/** One page of `items` in their order after the one whose id is `cursor` (none when it is unknown), as the gateway pages. */
/**
 * A page of a list built in memory (agents, models, tools, environments),
 * as the protocol's `page_after`: the items after the one the cursor
 * names (`cursor_expired` when it names none), at most `limit`.
 */
function pageAfter<T extends { id: string }>(
  items: T[],
  cursor: string | null | undefined,
  limit: number | null | undefined,
): { items: T[]; nextCursor: string | undefined } {
  if (cursor && !items.some((x) => x.id === cursor)) {
    throw fail(refusals.cursorItemGone());
  }
  return pageOf(items, cursor, limit);
}

function pageOf<T extends { id: string }>(
  items: T[],
  cursor: string | null | undefined,
  limit: number | null | undefined,
): { items: T[]; nextCursor: string | undefined } {
  let rest = items;
  if (cursor) {
    const at = rest.findIndex((x) => x.id === cursor);
    rest = at < 0 ? [] : rest.slice(at + 1);
  }
  const size = Math.min(Math.max(limit ?? 100, 1), 500);
  const page = rest.slice(0, size);
  return { items: page, nextCursor: rest.length > size ? page.at(-1)?.id : undefined };
}
