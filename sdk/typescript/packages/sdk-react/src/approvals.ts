// `useApprovals`: an inbox of pending approvals (all of them, or one
// run's or session's) for a dashboard: seeded from `approvals.list` and
// kept live from the log (`approval.requested` adds, `approval.resolved`
// removes). None is lost between the list and the stream: the store takes
// a cursor first (just before the newest run's first event), lists after
// that, and only then applies the log's approval events after the cursor
// on top of the list, in order; an approval both listed and replayed is
// kept once (by id).

import { useMemo } from "react";
import type { Talon, TalonError, TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import { idOf, recentCursor, respondTo, toTalonError, type ApprovalRef } from "./internal.js";
import { useTalonContext } from "./provider.js";
import { ExternalStore, useStore } from "./store.js";

/** The inbox as `useApprovals` shows it. */
export interface ApprovalsState {
  /** Pending approvals, oldest first. */
  readonly approvals: readonly T.Approval[];
  /** `loading` until the first list arrived, then `ready`. */
  readonly status: "loading" | "ready";
  /** Why listing or following failed. */
  readonly error: TalonError | undefined;
}

/** What `useApprovals` returns. */
export interface UseApprovalsResult extends ApprovalsState {
  /** Approves one (`approve_once`, or `decision`); it leaves the inbox. */
  approve(approval: ApprovalRef, options?: { reason?: string; decision?: T.ApprovalDecision }): Promise<T.Approval>;
  /** Denies one; it leaves the inbox. */
  deny(approval: ApprovalRef, options?: { reason?: string }): Promise<T.Approval>;
}

/** Which approvals the inbox holds (all pending ones when empty). */
export interface ApprovalsFilter {
  /** Only this run's. */
  runId?: string;
  /** Only this session's (by id). */
  sessionId?: string;
  /** Only this agent's runs' (filters the log on the gateway). */
  agentId?: string;
}

const TYPES: readonly T.EventType[] = ["approval.requested", "approval.resolved"];

class ApprovalsStore extends ExternalStore<ApprovalsState> {
  readonly #talon: Talon;
  readonly #filter: ApprovalsFilter;
  #abort: AbortController | undefined;

  constructor(talon: Talon, filter: ApprovalsFilter) {
    super({ approvals: [], status: "loading", error: undefined });
    this.#talon = talon;
    this.#filter = filter;
  }

  protected start(): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#follow(abort.signal).catch((error: unknown) => {
      if (!abort.signal.aborted) this.update({ error: toTalonError(error) });
    });
  }

  protected stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
  }

  async #follow(signal: AbortSignal): Promise<void> {
    const { runId, sessionId, agentId } = this.#filter;
    const client = this.#talon.client;
    // The cursor comes before the list: every change after the list is after the cursor.
    const runs: T.RunsListParams = {};
    if (sessionId) runs.sessionId = sessionId;
    if (agentId) runs.agentId = agentId;
    const after = runId ? undefined : await recentCursor(client, runs, signal);
    const params: T.ApprovalsListParams = { status: "pending" };
    if (runId) params.runId = runId;
    if (sessionId) params.sessionId = sessionId;
    const listed = await client.approvals.list(params, { signal });
    signal.throwIfAborted();
    this.update({ approvals: listed.approvals.filter((a) => this.#wants(a)), status: "ready", error: undefined });
    const events: AsyncIterable<TalonEvent> = runId
      ? (await this.#talon.run(runId, { signal })).events({ signal })
      : this.#talon.events({ after, agentId, types: TYPES, signal });
    for await (const event of events) {
      if (signal.aborted) return;
      this.#apply(event);
    }
  }

  #wants(approval: T.Approval): boolean {
    const { runId, sessionId } = this.#filter;
    return (
      approval.status === "pending" &&
      (runId === undefined || approval.runId === runId) &&
      (sessionId === undefined || approval.sessionId === sessionId)
    );
  }

  #apply(event: TalonEvent): void {
    const approvals = this.state.approvals;
    if (event.type === "approval.requested") {
      if (this.#wants(event.data) && !approvals.some((a) => a.id === event.data.id)) {
        this.update({ approvals: [...approvals, event.data] });
      }
    } else if (event.type === "approval.resolved") {
      this.#remove(event.data.approvalId);
    }
  }

  #remove(id: string): void {
    const approvals = this.state.approvals.filter((a) => a.id !== id);
    if (approvals.length !== this.state.approvals.length) this.update({ approvals });
  }

  readonly respond = async (
    approval: ApprovalRef,
    decision: T.ApprovalDecision,
    reason?: string,
  ): Promise<T.Approval> => {
    const decided = await respondTo(this.#talon.client, approval, decision, reason);
    if (decided.status !== "pending") this.#remove(idOf(approval));
    return decided;
  };
}

/**
 * The pending approvals, live: `useApprovals()` for all of them, or
 * `useApprovals({ runId })`, `useApprovals({ sessionId })`. Hooks of one
 * provider with the same filter share one inbox.
 */
export function useApprovals(filter: ApprovalsFilter = {}): UseApprovalsResult {
  const { talon, cache } = useTalonContext("useApprovals");
  const { runId, sessionId, agentId } = filter;
  const key = `approvals:${JSON.stringify([runId ?? null, sessionId ?? null, agentId ?? null])}`;
  const store = useMemo(
    () => cache.get(key, () => new ApprovalsStore(talon, { runId, sessionId, agentId })),
    // The key is the filter.
    [cache, talon, key],
  );
  const state = useStore(store);
  return useMemo(
    () => ({
      ...state,
      approve: (approval: ApprovalRef, o: { reason?: string; decision?: T.ApprovalDecision } = {}) =>
        store.respond(approval, o.decision ?? "approve_once", o.reason),
      deny: (approval: ApprovalRef, o: { reason?: string } = {}) => store.respond(approval, "deny", o.reason),
    }),
    [state, store],
  );
}
