// `useEvents`: the gateway's event log (or one run's events), filtered,
// in a bounded buffer of the newest ones, for activity feeds and
// dashboards. The log starts at the newest run's first event ("now") or
// at the start, or after a cursor; with `resumeKey` the id of each event
// delivered is saved and a later mount resumes after it.

import { useMemo } from "react";
import type { Talon, TalonError, TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import type { CursorStore } from "./cursor.js";
import { appendBounded, isCursor, recentCursor, toTalonError } from "./internal.js";
import { useTalonContext } from "./provider.js";
import { ExternalStore, useStore } from "./store.js";

/** Which events, from where, how many. */
export interface UseEventsOptions {
  /** One run's events (to its end) instead of the log. */
  runId?: string;
  /** Only this session's (by key). */
  sessionKey?: string;
  /** Only this agent's. */
  agentId?: string;
  /** Only these types. */
  types?: readonly T.EventType[];
  /** How many of the newest events the buffer keeps (default 500). */
  limit?: number;
  /**
   * Where to start without a cursor: `now` (the log's default: from the
   * newest run's first event) or `start` (a run's default: its first).
   */
  from?: "now" | "start";
  /** Start after this event id (before `from` and a saved cursor). */
  after?: string;
  /** Save the cursor under this key (`events:<resumeKey>`) and resume after it on the next mount. */
  resumeKey?: string;
  /** The cursor store for `resumeKey` (default the provider's). */
  cursorStore?: CursorStore;
}

/** The buffer as `useEvents` shows it. */
export interface EventsState {
  /** The newest events delivered, oldest first, at most `limit`. */
  readonly events: readonly TalonEvent[];
  /** Whether the stream is open. */
  readonly following: boolean;
  /** Why following failed (`cursor_expired` for a cursor the gateway no longer has). */
  readonly error: TalonError | undefined;
  /** The id of the last event delivered. */
  readonly cursor: string | undefined;
}

const DEFAULT_LIMIT = 500;

class EventsStore extends ExternalStore<EventsState> {
  readonly #talon: Talon;
  readonly #options: UseEventsOptions;
  readonly #cursors: CursorStore;
  readonly #limit: number;
  #abort: AbortController | undefined;

  constructor(talon: Talon, options: UseEventsOptions, cursors: CursorStore) {
    super({ events: [], following: false, error: undefined, cursor: undefined });
    this.#talon = talon;
    this.#options = options;
    this.#cursors = cursors;
    this.#limit = Math.max(1, Math.floor(options.limit ?? DEFAULT_LIMIT));
  }

  protected start(): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.update({ following: true });
    this.#follow(abort.signal).then(
      () => {
        if (!abort.signal.aborted) this.update({ following: false });
      },
      (error: unknown) => {
        if (abort.signal.aborted) return;
        const failure = toTalonError(error);
        const key = this.#options.resumeKey;
        if (failure.code === "cursor_expired" && key !== undefined) this.#cursors.delete?.(`events:${key}`);
        this.update({ following: false, error: failure });
      },
    );
  }

  protected stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
    this.update({ following: false });
  }

  async #follow(signal: AbortSignal): Promise<void> {
    const { runId, sessionKey, agentId, types, resumeKey } = this.#options;
    let after = this.state.cursor ?? this.#options.after;
    if (after === undefined && resumeKey !== undefined) {
      const saved = await this.#cursors.get(`events:${resumeKey}`);
      if (isCursor(saved)) after = saved;
    }
    const from = this.#options.from ?? (runId ? "start" : "now");
    if (after === undefined && from === "now") {
      const runs: T.RunsListParams = {};
      if (agentId) runs.agentId = agentId;
      if (!runId) after = await recentCursor(this.#talon.client, runs, signal);
    }
    const stream: AsyncIterable<TalonEvent> = runId
      ? (await this.#talon.run(runId, { signal })).events({ after, signal })
      : this.#talon.events({ after, sessionKey, agentId, types, signal });
    for await (const event of stream) {
      if (signal.aborted) return;
      if (runId && types && !types.includes(event.type)) {
        this.update({ cursor: event.id });
        continue;
      }
      this.update({ events: appendBounded(this.state.events, event, this.#limit), cursor: event.id });
      if (resumeKey !== undefined && isCursor(event.id)) this.#cursors.set(`events:${resumeKey}`, event.id);
    }
  }
}

/**
 * The log, filtered, live, keeping the newest `limit` events:
 * `useEvents({ types: ["run.completed"] })`, or a run's events with
 * `useEvents({ runId })`. Hooks of one provider with the same options
 * share one stream.
 */
export function useEvents(options: UseEventsOptions = {}): EventsState {
  const { talon, cursorStore, cache } = useTalonContext("useEvents");
  const { runId, sessionKey, agentId, types, limit, from, after, resumeKey } = options;
  const key = `events:${JSON.stringify([runId, sessionKey, agentId, types, limit, from, after, resumeKey])}`;
  const store = useMemo(
    () =>
      cache.get(
        key,
        () =>
          new EventsStore(
            talon,
            { runId, sessionKey, agentId, types, limit, from, after, resumeKey },
            options.cursorStore ?? cursorStore,
          ),
      ),
    // The key is the options.
    [cache, talon, key],
  );
  return useStore(store);
}
