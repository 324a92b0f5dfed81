// `useSession`: a conversation as a chat view sees it: its messages
// (`sessions.messages`, oldest first), `send(input)` (a new run), whether
// one of its runs is going on. Its store resolves the session (a key is
// created if absent), lists its messages, then follows the log filtered
// to the session (from its newest run on) and lists what is new whenever
// a run starts, the assistant speaks, a run ends or the session is
// compacted (then it lists them all again). A session known only by id
// (no key, so no log filter) is listed again when a run `send` started
// ends.

import { useMemo } from "react";
import { TERMINAL_TYPES, TalonError, type Run, type Session, type SendOptions, type Talon } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import { recentCursor, toTalonError } from "./internal.js";
import { useTalonContext } from "./provider.js";
import { ExternalStore, useStore } from "./store.js";

/** A session as `useSession` shows it. */
export interface SessionState {
  /** The session as resolved (`undefined` until then, and for a `Session` handle made from an id alone). */
  readonly session: T.Session | undefined;
  /** Its id, once known. */
  readonly sessionId: string | undefined;
  /** Its messages, oldest first. */
  readonly messages: readonly T.Message[];
  /** `loading` until the messages are first listed; then `running` while one of its runs is going on, else `idle`. */
  readonly status: "loading" | "idle" | "running";
  /** The newest run going on in the session (follow it with `useRun` for its streaming text). */
  readonly activeRunId: string | undefined;
  /** Why resolving, listing or following failed. */
  readonly error: TalonError | undefined;
}

/** What `useSession` returns. */
export interface UseSessionResult extends SessionState {
  /** Sends a user message: a new run on the session (its messages follow as it goes). */
  send(input: T.RunInput, options?: SendOptions): Promise<Run>;
  /** Lists the messages again, all of them. */
  refresh(): Promise<void>;
}

/** Options of `useSession`. */
export interface UseSessionOptions {
  /** The agent of a session given by key (default `main`). */
  agentId?: string;
}

const INITIAL: SessionState = {
  session: undefined,
  sessionId: undefined,
  messages: [],
  status: "loading",
  activeRunId: undefined,
  error: undefined,
};

/** What makes the messages change, or tells that a run goes on. */
const TYPES: readonly T.EventType[] = [
  "run.created",
  "run.started",
  "assistant.message",
  ...TERMINAL_TYPES,
  "session.compacted",
];
const ENDS = TERMINAL_TYPES;

type Target = { key: string; agentId: string | undefined } | { handle: Session };

class SessionStore extends ExternalStore<SessionState> {
  readonly #talon: Talon;
  readonly #target: Target;
  #resolved: Promise<{ id: string; info: T.Session | undefined }> | undefined;
  #abort: AbortController | undefined;
  #following = false;
  /** Runs going on, oldest first. */
  #runs: string[] = [];
  /** Runs seen ending (the newest few): `send` may learn of its run after the log told its end. */
  #ended: string[] = [];
  #refreshing: Promise<void> | undefined;
  #wanted: "tail" | "full" | undefined;

  constructor(talon: Talon, target: Target) {
    const info = "handle" in target ? target.handle.info : undefined;
    super({ ...INITIAL, session: info, sessionId: "handle" in target ? target.handle.id : undefined });
    this.#talon = talon;
    this.#target = target;
  }

  protected start(): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#follow(abort.signal).then(
      () => {
        if (this.#abort === abort) this.#following = false;
      },
      (error: unknown) => {
        if (abort.signal.aborted) return;
        this.#following = false;
        this.update({ error: toTalonError(error) });
      },
    );
  }

  protected stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
    this.#following = false;
  }

  /** The session's id (and info), resolving a key once. */
  #resolve(): Promise<{ id: string; info: T.Session | undefined }> {
    if (!this.#resolved) {
      const target = this.#target;
      this.#resolved =
        "handle" in target
          ? Promise.resolve({ id: target.handle.id, info: target.handle.info })
          : this.#talon.client.sessions
              .resolve(target.agentId ? { key: target.key, agentId: target.agentId } : { key: target.key })
              .then((info) => {
                this.update({ session: info, sessionId: info.id });
                return { id: info.id, info };
              });
      this.#resolved.catch(() => (this.#resolved = undefined));
    }
    return this.#resolved;
  }

  async #follow(signal: AbortSignal): Promise<void> {
    const { id, info } = await this.#resolve();
    signal.throwIfAborted();
    const after = info ? await recentCursor(this.#talon.client, { sessionId: id }, signal) : undefined;
    await this.#refresh(signal, this.state.status === "loading" ? "full" : "tail");
    if (this.state.status === "loading") this.update({ status: this.#runs.length > 0 ? "running" : "idle" });
    if (!info) return;
    this.#following = true;
    const log = this.#talon.events({ after, sessionKey: info.key, agentId: info.agentId, types: TYPES, signal });
    for await (const event of log) {
      if (signal.aborted) return;
      if (event.sessionId && event.sessionId !== id) continue;
      if (event.runId && (event.type === "run.created" || event.type === "run.started"))
        this.#running(event.runId, true);
      if (event.runId && ENDS.includes(event.type)) this.#running(event.runId, false);
      this.#refresh(signal, event.type === "session.compacted" ? "full" : "tail").catch((error: unknown) => {
        this.#fail(error, signal);
      });
    }
  }

  #running(runId: string, on: boolean): void {
    if (on && this.#ended.includes(runId)) return;
    this.#runs = this.#runs.filter((r) => r !== runId);
    if (on) this.#runs.push(runId);
    else this.#ended = [...this.#ended.slice(-63), runId];
    const activeRunId = this.#runs.at(-1);
    this.update({
      activeRunId,
      status: this.state.status === "loading" ? "loading" : activeRunId ? "running" : "idle",
    });
  }

  #fail(error: unknown, signal: AbortSignal | undefined): void {
    if (signal?.aborted) return;
    this.update({ error: toTalonError(error) });
  }

  /** Lists what is new (or everything); calls while one runs are folded into one more. */
  #refresh(signal: AbortSignal | undefined, how: "tail" | "full"): Promise<void> {
    this.#wanted = this.#wanted === "full" || how === "full" ? "full" : "tail";
    this.#refreshing ??= this.#drain(signal).finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  async #drain(signal: AbortSignal | undefined): Promise<void> {
    const { id } = await this.#resolve();
    while (this.#wanted) {
      const full = this.#wanted === "full";
      this.#wanted = undefined;
      const messages = full ? [] : [...this.state.messages];
      let after = messages.at(-1)?.id;
      for (;;) {
        const page = await this.#talon.client.sessions.messages(
          id,
          after === undefined ? {} : { after },
          signal ? { signal } : {},
        );
        messages.push(...page.messages);
        after = page.messages.at(-1)?.id ?? after;
        if (!page.hasMore || page.messages.length === 0) break;
      }
      if (full || messages.length !== this.state.messages.length) this.update({ messages });
    }
  }

  readonly send = async (input: T.RunInput, options: SendOptions = {}): Promise<Run> => {
    const { id } = await this.#resolve();
    const run = await this.#talon.sessionById(id).send(input, options);
    this.#running(run.id, true);
    const signal = this.#abort?.signal;
    this.#refresh(signal, "tail").catch((error: unknown) => {
      this.#fail(error, signal);
    });
    if (!this.#following) {
      // Nothing follows the session's log: the run's end is waited for here.
      run
        .wait(signal ? { signal } : {})
        .then(() => {
          this.#running(run.id, false);
          return this.#refresh(signal, "tail");
        })
        .catch((error: unknown) => {
          this.#fail(error, signal);
        });
    }
    return run;
  };

  readonly refresh = (): Promise<void> => this.#refresh(this.#abort?.signal, "full");
}

/** A session's key, or a `Session` from `talon.session(key)`, `agent.createSession()` or `talon.sessionById(id)`. */
export type SessionRef = string | Session;

/**
 * A session's messages, kept fresh, and `send`: `useSession("user-42")`
 * (a key: the session is created if absent) or `useSession(session)`.
 * `useSession(null)` waits for one.
 */
export function useSession(session: SessionRef | null | undefined, options: UseSessionOptions = {}): UseSessionResult {
  const { talon, cache } = useTalonContext("useSession");
  const agentId = options.agentId;
  const cacheKey =
    session == null
      ? undefined
      : typeof session === "string"
        ? `session:key:${agentId ?? ""}:${session}`
        : `session:id:${session.id}`;
  const store = useMemo(() => {
    if (session == null || cacheKey === undefined) return NONE;
    const target: Target = typeof session === "string" ? { key: session, agentId } : { handle: session };
    return cache.get(cacheKey, () => new SessionStore(talon, target));
    // The key picks the store.
  }, [cache, talon, cacheKey]);
  const state = useStore(store);
  return useMemo(() => ({ ...state, send: store.send, refresh: store.refresh }), [state, store]);
}

/** The store of `useSession(null)`. */
class NoSession extends ExternalStore<SessionState> {
  constructor() {
    super({ ...INITIAL, status: "idle" });
  }
  protected start(): void {
    // Nothing to follow.
  }
  protected stop(): void {
    // Nothing was started.
  }
  readonly send = (): Promise<Run> =>
    Promise.reject(new TalonError("useSession has no session (it was given none)", { code: "invalid_request" }));
  readonly refresh = (): Promise<void> => Promise.resolve();
}

const NONE = new NoSession();
