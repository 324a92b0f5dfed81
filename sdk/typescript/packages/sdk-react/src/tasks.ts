// `useTasks`: a live list of background tasks (all of them, or a run's, a
// session's, those in some statuses or of a kind) for a dashboard: seeded
// from `tasks.list` (every page) and kept live from the log's `task.updated`
// events, never polled. None is lost between the list and the stream: the
// store takes a cursor first (just before the newest task's first event),
// lists after that, and only then applies the log's `task.updated` events
// after the cursor on top of the list, in order; a task both listed and
// replayed is kept once (by id), as its latest version (by `updatedAt`), so
// a replayed older change never undoes a newer one. A task that moves out
// of the filter (another status) leaves; one that moves in arrives.

import { useMemo } from "react";
import type { Talon, TalonError, TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import { isCursor, toTalonError } from "./internal.js";
import { useTalonContext } from "./provider.js";
import { ExternalStore, useStore } from "./store.js";

/** The list as `useTasks` shows it. */
export interface TasksState {
  /** The tasks the filter selects, newest first. */
  readonly tasks: readonly T.Task[];
  /** `loading` until the first list arrived, then `ready`. */
  readonly status: "loading" | "ready";
  /** Why listing or following failed. */
  readonly error: TalonError | undefined;
}

/** What `useTasks` returns. */
export interface UseTasksResult extends TasksState {
  /** Cancels one (and the run it tracks); `conflict` once it has ended. The list follows its `task.updated`. */
  cancel(task: T.Task | string, reason?: string): Promise<T.Task>;
}

/** Which tasks the list holds (every task the token may see when empty). */
export interface TasksFilter {
  /** Only those this run started. */
  runId?: string;
  /** Only those a run in this session (by id) started. */
  sessionId?: string;
  /** Only those in one of these statuses. */
  status?: readonly T.TaskStatus[];
  /** Only those of this kind. */
  kind?: T.TaskKind;
}

const TYPES: readonly T.EventType[] = ["task.updated"];

class TasksStore extends ExternalStore<TasksState> {
  readonly #talon: Talon;
  readonly #filter: TasksFilter;
  #abort: AbortController | undefined;

  constructor(talon: Talon, filter: TasksFilter) {
    super({ tasks: [], status: "loading", error: undefined });
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
    // The cursor comes before the list: every change after the list is after the cursor.
    const after = await this.#cursor(signal);
    const { runId, sessionId, status, kind } = this.#filter;
    const params: T.TasksListParams = {};
    if (runId) params.runId = runId;
    if (sessionId) params.sessionId = sessionId;
    if (status) params.status = [...status];
    if (kind) params.kind = kind;
    const listed: T.Task[] = [];
    for await (const task of this.#talon.tasks.list(params, { signal })) if (task.info) listed.push(task.info);
    signal.throwIfAborted();
    this.update({ tasks: listed, status: "ready", error: undefined });
    for await (const event of this.#talon.events({ after, types: TYPES, signal })) {
      if (signal.aborted) return;
      this.#apply(event);
    }
  }

  /**
   * A cursor just before the newest task's first event (from the start of
   * the log when there is none): every task created later, and every
   * change made after the list, is after it.
   */
  async #cursor(signal: AbortSignal): Promise<string | undefined> {
    const client = this.#talon.client;
    const { tasks } = await client.tasks.list({ limit: 1 }, { signal });
    const newest = tasks[0];
    if (!newest) return undefined;
    const page = await client.tasks.events(newest.id, { limit: 1 }, { signal });
    const first = page.events[0];
    if (!first || !isCursor(first.id)) return undefined;
    const id = BigInt(first.id);
    return id > 0n ? (id - 1n).toString() : undefined;
  }

  #wants(task: T.Task): boolean {
    const { runId, sessionId, status, kind } = this.#filter;
    return (
      (runId === undefined || task.runId === runId) &&
      (sessionId === undefined || task.sessionId === sessionId) &&
      (status === undefined || status.includes(task.status)) &&
      (kind === undefined || task.kind === kind)
    );
  }

  #apply(event: TalonEvent): void {
    if (event.type === "task.updated") this.#put(event.data);
  }

  /** `task` as its latest version: in the list if the filter wants it, out of it if not. */
  #put(task: T.Task): void {
    const tasks = this.state.tasks;
    const at = tasks.findIndex((t) => t.id === task.id);
    const known = tasks[at];
    if (known && known.updatedAt > task.updatedAt) return;
    const rest = tasks.filter((t) => t.id !== task.id);
    if (!this.#wants(task)) {
      if (known) this.update({ tasks: rest });
      return;
    }
    // Newest first, by creation (ties by id, as the gateway lists them).
    const next = [...rest, task].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    this.update({ tasks: next });
  }

  readonly cancel = async (task: T.Task | string, reason?: string): Promise<T.Task> => {
    const id = typeof task === "string" ? task : task.id;
    const cancelled = await this.#talon.task(id).cancel(reason);
    this.#put(cancelled);
    return cancelled;
  };
}

/**
 * Background tasks, live: `useTasks()` for every task the token may see,
 * or `useTasks({ runId })`, `useTasks({ sessionId })`,
 * `useTasks({ status: ["queued", "running"] })`. Hooks of one provider
 * with the same filter share one list.
 */
export function useTasks(filter: TasksFilter = {}): UseTasksResult {
  const { talon, cache } = useTalonContext("useTasks");
  const { runId, sessionId, status, kind } = filter;
  const key = `tasks:${JSON.stringify([runId ?? null, sessionId ?? null, status ?? null, kind ?? null])}`;
  const store = useMemo(
    () =>
      cache.get(key, () => {
        const wanted: TasksFilter = {};
        if (runId !== undefined) wanted.runId = runId;
        if (sessionId !== undefined) wanted.sessionId = sessionId;
        if (status !== undefined) wanted.status = [...status];
        if (kind !== undefined) wanted.kind = kind;
        return new TasksStore(talon, wanted);
      }),
    // The key is the filter.
    [cache, talon, key],
  );
  const state = useStore(store);
  return useMemo(() => ({ ...state, cancel: store.cancel }), [state, store]);
}
