// `sessions.delete` and `runs.delete` over the fake's memory (as the Rust
// fake): the session, or ended run, goes with its runs' approvals,
// questions and artifacts; `conflict` while a run of it has not ended.
// The events stay in the fake's log, whose cursor is an index (a
// deliberate difference: the gateway removes them).

import { type protocol as P, refusals } from "@talon/sdk";

import { fail, notFound } from "./errors.js";
import type { State } from "./state.js";

const LIVE = new Set(["queued", "running", "waiting"]);

function busy(kind: string, id: string) {
  return fail(refusals.hasLiveRun(kind, id));
}

function dropRuns(state: State, ids: Set<string>): void {
  for (const id of ids) state.runs.delete(id);
  const keep = <T>(list: T[], of: (item: T) => string | null | undefined) => {
    for (let i = list.length - 1; i >= 0; i--) {
      const run = of(list[i] as T);
      if (run != null && ids.has(run)) list.splice(i, 1);
    }
  };
  keep(state.approvals, (a) => a.runId);
  keep(state.questions, (q) => q.runId);
  keep(state.artifacts, (a) => a.summary.runId);
}

/** `sessions.delete`. */
export function deleteSession(state: State, sessionId: string): P.SessionsDeleteResult {
  if (!state.sessions.has(sessionId)) throw notFound("session", sessionId);
  const runs = [...state.runs.values()].map((r) => r.run).filter((r) => r.sessionId === sessionId);
  if (runs.some((r) => LIVE.has(r.status))) throw busy("session", sessionId);
  const ids = runs.map((r) => r.id).sort();
  dropRuns(state, new Set(ids));
  state.sessions.delete(sessionId);
  state.messages.delete(sessionId);
  for (let i = state.artifacts.length - 1; i >= 0; i--) {
    if (state.artifacts[i]?.summary.sessionId === sessionId) state.artifacts.splice(i, 1);
  }
  return { sessionId, deletedRunIds: ids };
}

/** `runs.delete`. */
export function deleteRun(state: State, runId: string): P.Run {
  const record = state.runs.get(runId);
  if (!record) throw notFound("run", runId);
  if (LIVE.has(record.run.status)) throw busy("run", runId);
  const run = structuredClone(record.run);
  dropRuns(state, new Set([runId]));
  return run;
}
