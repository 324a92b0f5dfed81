// `Session`: a conversation with an agent: send a message (a new run),
// read its messages, fork, compact, abort its runs.

import type { CallOptions } from "./generated/client.js";
import type * as T from "./generated/types.js";
import { listArtifacts, type Artifact } from "./handles.js";
import { Run, type Context } from "./run.js";

/** Options of a message sent to a session, beside its input. */
export type SendOptions = Omit<T.SessionsSendParams, "sessionId" | "input">;

/** One session. */
export class Session {
  readonly #context: Context;
  /** Its id. */
  readonly id: string;
  #info: T.Session | undefined;

  constructor(context: Context, idOrInfo: string | T.Session) {
    this.#context = context;
    if (typeof idOrInfo === "string") {
      this.id = idOrInfo;
    } else {
      this.id = idOrInfo.id;
      this.#info = idOrInfo;
    }
  }

  /** The session as last seen (after `create`, `resolve`, `fork` or `compact`; else `undefined`). */
  get info(): T.Session | undefined {
    return this.#info;
  }

  /** Its key, when known. */
  get key(): string | undefined {
    return this.#info?.key;
  }

  /**
   * Sends a user message: a new run in this session. `params.timeoutMs` is
   * the run's own time limit; `options.timeoutMs` the call's deadline.
   */
  async send(input: T.RunInput, params: SendOptions = {}, options?: CallOptions): Promise<Run> {
    const accepted = await this.#context.client.sessions.send(this.id, { ...params, input }, options);
    return new Run(this.#context, accepted);
  }

  /** Its messages, oldest first, a page at a time (`after`: the last id of the previous page). */
  messages(
    params: Omit<T.SessionsMessagesParams, "sessionId"> = {},
    options?: CallOptions,
  ): Promise<T.SessionsMessagesResult> {
    return this.#context.client.sessions.messages(this.id, params, options);
  }

  /** A new session with this one's history up to `atMessageId` (all of it when absent). */
  async fork(params: Omit<T.SessionsForkParams, "sessionId"> = {}, options?: CallOptions): Promise<Session> {
    const forked = await this.#context.client.sessions.fork(this.id, params, options);
    return new Session(this.#context, forked);
  }

  /** Compacts its history. */
  async compact(options?: CallOptions): Promise<T.Session> {
    this.#info = await this.#context.client.sessions.compact(this.id, {}, options);
    return this.#info;
  }

  /** Every artifact of its runs, each a handle to download. */
  artifacts(options?: CallOptions): Promise<Artifact[]> {
    return listArtifacts(this.#context, { sessionId: this.id }, options);
  }

  /** Cancels its running runs. */
  abort(options?: CallOptions): Promise<T.SessionsAbortResult> {
    return this.#context.client.sessions.abort(this.id, {}, options);
  }
}

/** The call options that were given, without `undefined` holes. */
export function callOptions(options: {
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
}): CallOptions {
  const out: CallOptions = {};
  if (options.signal) out.signal = options.signal;
  if (options.timeoutMs !== undefined) out.timeoutMs = options.timeoutMs;
  if (options.maxRetries !== undefined) out.maxRetries = options.maxRetries;
  return out;
}
