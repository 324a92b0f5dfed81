// What the dashboard's own live lists share: a store that follows the
// event log while a view shows it (`Live`, started by its first subscriber
// and stopped after its last), a cursor at "now" taken before a list is
// read (so nothing happening meanwhile is missed), the pending questions
// (`useQuestions`), which @talon/sdk-react has no hook for, and the page's
// one WebSocket (`pageSocket`), which every live list's stream rides as a
// subscription, closed while the page is hidden. A stream the SDK gave up
// on (the gateway away longer than its retries) is opened again from the
// last event seen when the browser is back online or after a growing
// pause, never by polling.

import { useMemo, useSyncExternalStore } from "preact/compat";
import { TalonError, type Talon, type TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

/** A snapshot, its subscribers, and the work that runs while it has any. */
export abstract class Live<S extends object> {
  #state: S;
  readonly #listeners = new Set<() => void>();
  #abort: AbortController | undefined;
  #stopping: ReturnType<typeof setTimeout> | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;

  constructor(initial: S) {
    this.#state = initial;
  }

  get state(): S {
    return this.#state;
  }

  protected update(patch: Partial<S>): void {
    this.#state = { ...this.#state, ...patch };
    for (const listener of this.#listeners) listener();
  }

  readonly getSnapshot = (): S => this.#state;

  readonly subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    if (this.#stopping !== undefined) {
      clearTimeout(this.#stopping);
      this.#stopping = undefined;
    } else if (!this.#abort) this.#start();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) {
        this.#stopping = setTimeout(() => {
          this.#stopping = undefined;
          this.#stop();
        }, 0);
      }
    };
  };

  #start(): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.run(abort.signal).then(
      () => undefined,
      (error: unknown) => {
        if (abort.signal.aborted) return;
        const failure = asTalonError(error);
        this.failed(failure);
        if (failure.code === "cursor_expired" || (!failure.retryable && failure.code !== "unavailable")) return;
        // The gateway is away: open again later (or as soon as the browser is online).
        this.#abort = undefined;
        this.#failures++;
        const again = () => {
          window.removeEventListener("online", again);
          clearTimeout(this.#retry);
          if (this.#listeners.size > 0 && !this.#abort) this.#start();
        };
        window.addEventListener("online", again);
        this.#retry = setTimeout(again, Math.min(30_000, 1_000 * 2 ** Math.min(this.#failures, 5)));
      },
    );
  }

  #stop(): void {
    clearTimeout(this.#retry);
    this.#abort?.abort();
    this.#abort = undefined;
  }

  /** Marks a successful (re)connection. */
  protected connected(): void {
    this.#failures = 0;
  }

  /** The store's work: list, then follow the log, until `signal` aborts. */
  protected abstract run(signal: AbortSignal): Promise<void>;

  /** Records why following failed. */
  protected abstract failed(error: TalonError): void;
}

/** Reads a `Live` store in a component. */
export function useLive<S extends object>(store: Live<S>): S {
  return useSyncExternalStore(store.subscribe, store.getSnapshot);
}

/** `error` as a `TalonError`. */
export function asTalonError(error: unknown): TalonError {
  if (error instanceof TalonError) return error;
  return new TalonError(error instanceof Error ? error.message : String(error), { code: "unknown", cause: error });
}

/**
 * A cursor just before the newest run's first event, or `undefined` (from
 * the start of the log): what goes on now, without replaying all history.
 */
export async function nowCursor(talon: Talon, signal: AbortSignal): Promise<string | undefined> {
  const { runs } = await talon.client.runs.list({ limit: 1 }, { signal });
  const newest = runs[0];
  if (!newest) return undefined;
  const page = await talon.client.runs.events(newest.id, { limit: 1 }, { signal });
  const first = page.events[0]?.id;
  if (first === undefined || !/^\d+$/.test(first)) return undefined;
  const id = BigInt(first);
  return id > 0n ? (id - 1n).toString() : undefined;
}

/** The pending questions, as `useQuestions` shows them. */
export interface QuestionsState {
  readonly questions: readonly T.Question[];
  readonly loading: boolean;
  readonly error: TalonError | undefined;
}

const QUESTION_TYPES: T.EventType[] = ["question.requested", "question.answered"];

class QuestionsStore extends Live<QuestionsState> {
  readonly #talon: Talon;
  #cursor: string | undefined;

  constructor(talon: Talon) {
    super({ questions: [], loading: true, error: undefined });
    this.#talon = talon;
  }

  protected async run(signal: AbortSignal): Promise<void> {
    this.#cursor ??= await nowCursor(this.#talon, signal);
    const listed: T.Question[] = [];
    for await (const q of this.#talon.client.questions.list({ status: "pending" }, { signal })) listed.push(q);
    this.update({ questions: listed, loading: false, error: undefined });
    this.connected();
    for await (const event of this.#talon.events({ after: this.#cursor, types: QUESTION_TYPES, signal })) {
      if (signal.aborted) return;
      this.#cursor = event.id;
      this.#apply(event);
    }
  }

  #apply(event: TalonEvent): void {
    const questions = this.state.questions;
    if (event.type === "question.requested" && event.data.status === "pending") {
      if (!questions.some((q) => q.id === event.data.id)) this.update({ questions: [...questions, event.data] });
    } else if (event.type === "question.answered") {
      this.remove(event.data.questionId);
    }
  }

  remove(id: string): void {
    const questions = this.state.questions.filter((q) => q.id !== id);
    if (questions.length !== this.state.questions.length) this.update({ questions });
  }

  protected failed(error: TalonError): void {
    this.update({ error, loading: false });
  }

  readonly answer = async (question: T.Question, answer: unknown): Promise<T.Question> => {
    const answered = await this.#talon.client.questions.respond(question.id, { answer });
    this.remove(question.id);
    return answered;
  };
}

const questionStores = new WeakMap<Talon, QuestionsStore>();

/** The pending questions across sessions, live, and `answer`. */
export function useQuestions(talon: Talon): QuestionsState & { answer: QuestionsStore["answer"] } {
  const store = useMemo(() => {
    let found = questionStores.get(talon);
    if (!found) {
      found = new QuestionsStore(talon);
      questionStores.set(talon, found);
    }
    return found;
  }, [talon]);
  const state = useLive(store);
  return useMemo(() => ({ ...state, answer: store.answer }), [state, store]);
}

/** While the page is hidden, a socket waits for it to be shown again (then it opens). */
let hidden: { shown: Promise<void>; show: () => void } | undefined;

/**
 * The page's WebSocket for the SDK (its `webSocket` option): the one
 * connection every live list's stream rides as a subscription, so that the
 * page holds one of the browser's few connections to the gateway however
 * many lists it follows. It authenticates with an empty token in its first
 * frame: the browser sent the sign-in cookie with the upgrade. None opens
 * while the page is hidden.
 */
export async function pageSocket(url: URL): Promise<WebSocket> {
  while (hidden) await hidden.shown;
  return new WebSocket(url);
}

/**
 * Closes the page's socket (on `pagehide`: navigated away from, or kept in
 * the back/forward cache); its streams open a new one, from their last
 * events, once the page is shown again.
 */
export function closeStreams(talon: Talon): void {
  if (!hidden) {
    let show: () => void = () => undefined;
    const shown = new Promise<void>((resolve) => {
      show = resolve;
    });
    hidden = { shown, show };
  }
  void talon.close();
}

/** Lets the page's socket open again (on `pageshow`). */
export function openStreams(): void {
  hidden?.show();
  hidden = undefined;
}
