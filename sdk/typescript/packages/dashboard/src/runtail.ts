// `RunTail`: one run as the run view shows it, its events loaded tail
// first. It reads the run's last page (`runs.events` with `last`), then
// follows the run's stream from that page's last event until the run ends
// (then its result, `runs.wait`); `loadEarlier` reads the page before the
// first event loaded (`before` and `last`) and puts it in front. The view
// makes the timeline again from all the events loaded, so a call nests
// under its parent once the parent's page is in. The run's status is the
// gateway's (`runs.get`, read after the tail) moved on by the events that
// follow; what it waits for is the events' pending approvals and questions,
// and, when the tail is not the whole run, those the gateway lists as
// pending (they may have been asked before the tail). The events fold by
// @talon/sdk-react's `foldRunEvents`, `useRun`'s own rule.

import type { Run, Talon, TalonError, TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { foldRunEvents, RUN_FOLD_START, type RunFold } from "@talon/sdk-react";

import { asTalonError, Live } from "./kit.js";

/** Events per page. */
export const PAGE = 500;

export interface RunTailState {
  /** The events loaded, in order: the tail, the pages before it loaded so far, and what followed. */
  readonly events: readonly TalonEvent[];
  /** Whether the first page is still to come. */
  readonly loading: boolean;
  /** Whether events before the first loaded one may exist. */
  readonly earlier: boolean;
  readonly loadingEarlier: boolean;
  /** Why loading earlier events failed (the next try may work). */
  readonly earlierError: TalonError | undefined;
  readonly status: T.RunStatus | undefined;
  /** The run's result, once it ended. */
  readonly result: T.RunResult | undefined;
  /** The run's input (`run.created`'s), once read. */
  readonly input: string | undefined;
  /** The approvals and questions it waits for. */
  readonly pendingApprovals: readonly T.Approval[];
  readonly pendingQuestions: readonly T.Question[];
  /** Whether its stream is open now. */
  readonly following: boolean;
  /** Why reading or following it failed. */
  readonly error: TalonError | undefined;
}

/** Whether a page read from the end may have events before it: it is full and does not start at `run.created`. */
export function startsLater(events: readonly TalonEvent[], page: number): boolean {
  return events.length >= page && events[0]?.type !== "run.created";
}

/** The input of a `run.created` among `events`. */
function inputIn(events: readonly TalonEvent[]): string | undefined {
  for (const e of events) if (e.type === "run.created") return e.data.input;
  return undefined;
}

export class RunTail extends Live<RunTailState> {
  readonly #talon: Talon;
  readonly #runId: string;
  #handle: Run | undefined;
  #cursor: string | undefined;
  #tailRead = false;
  /** The run as the events loaded (and the gateway's status and pending lists) say. */
  #fold: RunFold = RUN_FOLD_START;
  #paging = false;

  constructor(talon: Talon, runId: string) {
    super({
      events: [],
      loading: true,
      earlier: false,
      loadingEarlier: false,
      earlierError: undefined,
      status: undefined,
      result: undefined,
      input: undefined,
      pendingApprovals: [],
      pendingQuestions: [],
      following: false,
      error: undefined,
    });
    this.#talon = talon;
    this.#runId = runId;
  }

  protected async run(signal: AbortSignal): Promise<void> {
    const client = this.#talon.client;
    const runId = this.#runId;
    if (!this.#tailRead) {
      const page = await client.runs.events(runId, { last: PAGE }, { signal });
      const events = page.events as TalonEvent[];
      this.update({ earlier: startsLater(events, PAGE), input: inputIn(events) });
      this.#append(events);
      // A last page with the terminal event folded it in: the run ended.
      this.#tailRead = true;
    }
    if (!this.#handle) {
      // Read after the tail: newer than it (the stream then replays what came between).
      const earlier = this.state.earlier;
      const [handle, first, approvals, questions] = await Promise.all([
        this.#talon.run(runId, { signal }),
        earlier ? client.runs.events(runId, { limit: 1 }, { signal }).catch(() => undefined) : undefined,
        earlier && !this.#fold.ended
          ? client.approvals.list({ runId, status: "pending" }, { signal }).catch(() => undefined)
          : undefined,
        earlier && !this.#fold.ended
          ? client.questions.list({ runId, status: "pending" }, { signal }).catch(() => undefined)
          : undefined,
      ]);
      if (signal.aborted) return;
      this.#handle = handle;
      const s = this.state;
      const fold = this.#fold;
      const more = <I extends { id: string }>(known: readonly I[], listed: readonly I[] | undefined) => {
        const fresh = (listed ?? []).filter((item) => !known.some((k) => k.id === item.id));
        return fresh.length > 0 ? [...known, ...fresh] : known;
      };
      this.#fold = {
        ...fold,
        status: fold.ended ? fold.status : handle.info.status,
        pendingApprovals: more(fold.pendingApprovals, approvals?.approvals),
        pendingQuestions: more(fold.pendingQuestions, questions?.questions),
      };
      this.update({
        loading: false,
        status: this.#fold.status,
        input: s.input ?? inputIn((first?.events ?? []) as TalonEvent[]),
        pendingApprovals: this.#fold.pendingApprovals,
        pendingQuestions: this.#fold.pendingQuestions,
        error: undefined,
      });
    }
    this.connected();
    if (!this.#fold.ended) {
      this.update({ following: true, error: undefined });
      let pending: TalonEvent[] = [];
      const flush = () => {
        const batch = pending;
        pending = [];
        if (batch.length > 0) this.#append(batch);
      };
      for await (const event of this.#handle.events({ after: this.#cursor, signal })) {
        if (signal.aborted) return;
        // Events that arrive together are applied in one update.
        if (pending.push(event) === 1) queueMicrotask(flush);
      }
      flush();
      this.update({ following: false });
    }
    if (this.#fold.ended && !this.state.result) {
      const result = await client.runs.wait(runId, { timeoutMs: 0 }, { signal });
      if (!signal.aborted && result.status !== "accepted") this.update({ result });
    }
  }

  /** Events after those loaded: their effect on the status and what the run waits for (`foldRunEvents`). */
  #append(events: readonly TalonEvent[]): void {
    if (events.length === 0) return;
    this.#fold = foldRunEvents(this.#fold, events);
    this.#cursor = events.at(-1)?.id ?? this.#cursor;
    this.update({
      events: [...this.state.events, ...events],
      status: this.#fold.status,
      pendingApprovals: this.#fold.pendingApprovals,
      pendingQuestions: this.#fold.pendingQuestions,
    });
  }

  /** Reads the page before the first event loaded and puts it in front (once at a time). */
  readonly loadEarlier = async (): Promise<void> => {
    const first = this.state.events[0]?.id;
    if (this.#paging || !this.state.earlier || first === undefined) return;
    this.#paging = true;
    this.update({ loadingEarlier: true, earlierError: undefined });
    try {
      const page = await this.#talon.client.runs.events(this.#runId, { before: first, last: PAGE });
      const events = page.events as TalonEvent[];
      this.update({
        events: [...events, ...this.state.events],
        earlier: startsLater(events, PAGE),
        input: this.state.input ?? inputIn(events),
        loadingEarlier: false,
      });
    } catch (error) {
      this.update({ loadingEarlier: false, earlierError: asTalonError(error) });
    } finally {
      this.#paging = false;
    }
  };

  /** Cancels the run; its stream tells the end. */
  readonly cancel = (reason: string): Promise<T.Run> => this.#talon.client.runs.cancel(this.#runId, { reason });

  protected failed(error: TalonError): void {
    this.update({ error, following: false, loading: false });
    // A later try goes on from what was read (`#tailRead`, `#handle`, `#cursor`).
  }
}
