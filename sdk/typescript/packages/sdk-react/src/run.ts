// `useRun`: one run as a component sees it: its events, status, the
// assistant's text as it streams, its result once it ends, what it waits
// for (approvals, questions), and `cancel` (ends the run) beside `detach`
// (stops following it; the run goes on). Its store follows the run's
// event stream while mounted, saving the id of each event it delivers in
// the provider's cursor store; a store made later for the same run (a
// remount, a reload with `webCursorStore`) rebuilds the run's state from
// its log up to that cursor with one paged read (`runs.events`), without
// delivering those events again, then streams after it.

import { useMemo } from "react";
import { TalonError, type Run, type Talon, type TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import type { CursorStore } from "./cursor.js";
import { foldRunEvent, unblocked, RUN_FOLD_START, type RunFold } from "./fold.js";
import { answerTo, idOf, isCursor, respondTo, toTalonError, type ApprovalRef, type QuestionRef } from "./internal.js";
import { useTalonContext } from "./provider.js";
import { ExternalStore, useStore } from "./store.js";

/** A run as `useRun` shows it. Every field is replaced, never mutated, when it changes. */
export interface RunState {
  /** The run's id (`undefined` for `useRun(null)`). */
  readonly runId: string | undefined;
  /** Where the run is: from the events (`waiting` while an approval or question is pending); `undefined` until known. */
  readonly status: T.RunStatus | undefined;
  /**
   * The events this hook delivered, in order: all of the run's on a
   * fresh follow; after a resume from a saved cursor, those after it.
   */
  readonly events: readonly TalonEvent[];
  /**
   * The assistant's current message: `assistant.delta`s appended, then
   * replaced by the `assistant.message`'s whole text (a later delta
   * starts the next message), and by the result's text at the end.
   */
  readonly text: string;
  /** The run's result (`runs.wait`), once it ended. */
  readonly result: T.RunResult | undefined;
  /** Approvals the run waits for; one leaves when it is resolved. */
  readonly pendingApprovals: readonly T.Approval[];
  /** Questions the run waits for; one leaves when it is answered. */
  readonly pendingQuestions: readonly T.Question[];
  /**
   * Why following the run failed (`cursor_expired`, `not_found`, a
   * failure the stream's retries gave up on). The run's own failure is
   * `status: "failed"` and `result.error`.
   */
  readonly error: TalonError | undefined;
  /** Whether the hook is following the run (reading its events) now. */
  readonly following: boolean;
  /** Whether `detach()` was called: the hook no longer follows the run. */
  readonly detached: boolean;
  /** The id of the last event applied (what a resume starts after). */
  readonly cursor: string | undefined;
}

/** What `useRun` returns: the state, and what the component can do. */
export interface UseRunResult extends RunState {
  /** Cancels the run on the gateway (its pending approvals end `cancelled`); the hook sees it end. */
  cancel(options?: { reason?: string }): Promise<T.Run>;
  /** Stops following the run (closes its stream) without cancelling it. */
  detach(): void;
  /** Approves one of the run's approvals (`approve_once`, or `decision`). */
  approve(approval: ApprovalRef, options?: { reason?: string; decision?: T.ApprovalDecision }): Promise<T.Approval>;
  /** Denies one of the run's approvals. */
  deny(approval: ApprovalRef, options?: { reason?: string }): Promise<T.Approval>;
  /** Answers one of the run's questions. */
  answer(question: QuestionRef, answer: unknown): Promise<T.Question>;
}

/** Options of `useRun`; the first hook to follow a run sets them for every hook that shares it. */
export interface UseRunOptions {
  /** Resume after the saved cursor, if there is one (default true); `false` follows the run from its first event. */
  resume?: boolean;
  /** The cursor store (default the provider's). */
  cursorStore?: CursorStore;
}

const IDLE: RunState = {
  runId: undefined,
  status: undefined,
  events: [],
  text: "",
  result: undefined,
  pendingApprovals: [],
  pendingQuestions: [],
  error: undefined,
  following: false,
  detached: false,
  cursor: undefined,
};

/** Events per page when rebuilding from the log. */
const PAGE = 500;

/** The store of one run. */
export class RunStore extends ExternalStore<RunState> {
  readonly #talon: Talon;
  readonly #cursors: CursorStore;
  readonly #resume: boolean;
  #handle: Run | undefined;
  #abort: AbortController | undefined;
  /** The run as its events applied so far say (`foldRunEvent`); `#fold.ended`: its log is whole. */
  #fold: RunFold = RUN_FOLD_START;

  constructor(talon: Talon, run: Run | string | undefined, options: { cursorStore: CursorStore; resume: boolean }) {
    const runId = typeof run === "string" ? run : run?.id;
    const status = typeof run === "object" ? run.info.status : undefined;
    super({ ...IDLE, runId, status });
    this.#talon = talon;
    this.#cursors = options.cursorStore;
    this.#resume = options.resume;
    if (typeof run === "object") this.#handle = run;
  }

  /** Takes a handle for a run the store knew by id (saves a `runs.get`). */
  adopt(run: Run): void {
    this.#handle ??= run;
  }

  /** Where the cursor store keeps the run's cursor (read only while following a run). */
  get #key(): string {
    return `run:${this.#require()}`;
  }

  protected start(): void {
    const s = this.state;
    if (s.runId === undefined || s.detached || s.result) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.update({ following: true });
    this.#follow(abort.signal).then(
      () => {
        if (this.#abort === abort) this.#abort = undefined;
        if (!abort.signal.aborted) this.update({ following: false });
      },
      (error: unknown) => {
        if (abort.signal.aborted) return;
        this.#abort = undefined;
        const failure = toTalonError(error);
        // A cursor the gateway no longer has is forgotten: the next mount follows the run afresh.
        if (failure.code === "cursor_expired") this.#cursors.delete?.(this.#key);
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
    const runId = this.#require();
    if (this.state.cursor === undefined && this.state.events.length === 0 && this.#resume) {
      const saved = await this.#cursors.get(this.#key);
      signal.throwIfAborted();
      if (isCursor(saved)) await this.#rebuild(runId, BigInt(saved), signal);
    }
    if (!this.#fold.ended) {
      this.#handle ??= await this.#talon.run(runId, { signal });
      if (this.state.status === undefined && this.state.cursor === undefined) {
        this.update({ status: this.#handle.info.status });
      }
      for await (const event of this.#handle.events({ after: this.state.cursor, signal })) {
        // A stopped follow applies nothing more (a restarted one goes on from the cursor).
        if (signal.aborted) return;
        this.#apply(event, true);
      }
    }
    if (!this.#fold.ended) return;
    const result = await this.#talon.client.runs.wait(runId, { timeoutMs: 0 }, { signal });
    signal.throwIfAborted();
    const text = result.output?.text;
    const status = result.status === "accepted" ? this.state.status : (result.status as T.RunStatus);
    this.update({ result, status, text: typeof text === "string" ? text : this.state.text });
  }

  /**
   * Applies the run's log up to `cursor` without delivering it again (it
   * was delivered before the store was made), and delivers what follows
   * on the pages read; the stream goes on after the last one.
   */
  async #rebuild(runId: string, cursor: bigint, signal: AbortSignal): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const params: Omit<T.RunsEventsParams, "runId"> = { limit: PAGE };
      if (after !== undefined) params.after = after;
      const page = await this.#talon.client.runs.events(runId, params, { signal });
      signal.throwIfAborted();
      for (const envelope of page.events) {
        const event = envelope as TalonEvent;
        this.#apply(event, !isCursor(event.id) || BigInt(event.id) > cursor);
      }
      const last = page.events.at(-1);
      if (page.done || !last || !isCursor(last.id) || BigInt(last.id) >= cursor) return;
      after = last.id;
    }
  }

  /** One event into the state (`foldRunEvent`); `deliver` adds it to `events` and saves its id as the cursor. */
  #apply(event: TalonEvent, deliver: boolean): void {
    const s = this.state;
    // What the hook knows beyond the events (the handle's status, answers it sent) is folded on.
    const fold = foldRunEvent(
      {
        ...this.#fold,
        status: s.status,
        text: s.text,
        pendingApprovals: s.pendingApprovals,
        pendingQuestions: s.pendingQuestions,
      },
      event,
    );
    this.#fold = fold;
    this.update({
      status: fold.status,
      text: fold.text,
      pendingApprovals: fold.pendingApprovals,
      pendingQuestions: fold.pendingQuestions,
      cursor: event.id,
      events: deliver ? [...s.events, event] : s.events,
    });
    if (deliver && isCursor(event.id)) this.#cursors.set(this.#key, event.id);
  }

  /** Cancels the run. */
  readonly cancel = async (options: { reason?: string } = {}): Promise<T.Run> => {
    const runId = this.#require();
    const run = await this.#talon.client.runs.cancel(
      runId,
      options.reason === undefined ? {} : { reason: options.reason },
    );
    // The stream reports the end; a detached hook learns it here.
    if (!this.#fold.ended) this.update({ status: run.status });
    return run;
  };

  /** Stops following the run. */
  readonly detach = (): void => {
    this.#abort?.abort();
    this.#abort = undefined;
    this.update({ detached: true, following: false });
  };

  /** Decides one of the run's approvals. */
  readonly respond = async (
    approval: ApprovalRef,
    decision: T.ApprovalDecision,
    reason?: string,
  ): Promise<T.Approval> => {
    this.#require();
    const decided = await respondTo(this.#talon.client, approval, decision, reason);
    if (decided.status !== "pending") {
      const pendingApprovals = this.state.pendingApprovals.filter((a) => a.id !== decided.id);
      this.update({ pendingApprovals, ...this.#unblocked(pendingApprovals, this.state.pendingQuestions) });
    }
    return decided;
  };

  /** Answers one of the run's questions. */
  readonly answer = async (question: QuestionRef, answer: unknown): Promise<T.Question> => {
    this.#require();
    const answered = await answerTo(this.#talon.client, question, answer);
    if (answered.status !== "pending") {
      const pendingQuestions = this.state.pendingQuestions.filter((q) => q.id !== idOf(question));
      this.update({ pendingQuestions, ...this.#unblocked(this.state.pendingApprovals, pendingQuestions) });
    }
    return answered;
  };

  #unblocked(approvals: readonly unknown[], questions: readonly unknown[]): Partial<RunState> {
    return { status: unblocked(this.state.status, approvals, questions) };
  }

  #require(): string {
    const runId = this.state.runId;
    if (runId === undefined) throw new TalonError("useRun has no run (it was given none)", { code: "invalid_request" });
    return runId;
  }
}

/** The store of `useRun(null)`: never starts. */
class NoRun extends RunStore {
  constructor(talon: Talon, cursorStore: CursorStore) {
    super(talon, undefined, { cursorStore, resume: false });
  }
}

/**
 * Follows a run: `useRun(run)` with a `Run` from `agent.run(...)` or
 * `session.send(...)`, or its id. `useRun(null)` is an idle run (no run
 * yet). Hooks of one provider given the same run share one stream.
 */
export function useRun(run: Run | string | null | undefined, options: UseRunOptions = {}): UseRunResult {
  const { talon, cursorStore, cache } = useTalonContext("useRun");
  const runId = typeof run === "string" ? run : (run?.id ?? undefined);
  const handle = typeof run === "object" && run !== null ? run : undefined;
  const store = useMemo(() => {
    const cursors = options.cursorStore ?? cursorStore;
    if (runId === undefined) return new NoRun(talon, cursors);
    return cache.get(
      `run:${runId}`,
      () => new RunStore(talon, handle ?? runId, { cursorStore: cursors, resume: options.resume ?? true }),
    );
    // Options are read when the store is made; the run's id picks the store.
  }, [cache, talon, runId]);
  if (handle) store.adopt(handle);
  const state = useStore(store);
  return useMemo(
    () => ({
      ...state,
      cancel: store.cancel,
      detach: store.detach,
      approve: (approval: ApprovalRef, o: { reason?: string; decision?: T.ApprovalDecision } = {}) =>
        store.respond(approval, o.decision ?? "approve_once", o.reason),
      deny: (approval: ApprovalRef, o: { reason?: string } = {}) => store.respond(approval, "deny", o.reason),
      answer: store.answer,
    }),
    [state, store],
  );
}
