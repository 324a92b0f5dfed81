// Event streams that resume by themselves. One follows a run (to its
// terminal event) or the whole log, filtered (until the caller stops),
// over Server-Sent Events, or as subscriptions on the client's WebSocket
// when it carries streams (`streams: "websocket"`, socketstream.ts),
// remembering the id of the last event it delivered. A connection that drops is reopened at once with that id as
// the cursor (then with backoff while the gateway cannot be reached), and
// an event at or below the cursor is never delivered twice, so the stream
// has no gap and no duplicate. `cursor_expired` (the events after the
// cursor are gone) ends the stream with that error, never with silence;
// so does a failure the retries give up on. Leaving the loop (`break`)
// closes the connection.

import { TalonError } from "./errors.js";
import { TERMINAL_TYPES } from "./generated/rules.js";
import type { EventType, TalonEvent, TicketStream } from "./generated/types.js";
import { errorOf, sleep, unreachable, type HttpCaller } from "./http.js";
import { socketEvents } from "./socketstream.js";
import { frames } from "./sse.js";
import { validate } from "./validate.js";
import { WsCaller } from "./ws.js";

/** The types that end a run (generated from the protocol's `EventType::ended_status`). */
export { TERMINAL_TYPES };

/** How a stream authenticates. */
export type StreamAuth =
  /** The bearer token in the `Authorization` header (the default). */
  | "header"
  /**
   * A short-lived, single-use ticket minted with `tokens.ticket` before
   * each connection (`?ticket=`): what a browser page uses, so that no
   * long-lived token is ever in a URL.
   */
  | "ticket";

/** Where a stream starts and what it keeps. */
export interface EventsOptions {
  /** Resume after this event id (a saved cursor); from the first event when absent. */
  after?: string | number | undefined;
  /** Stops the stream (the loop ends with the signal's reason). */
  signal?: AbortSignal | undefined;
  /** How many failed reconnections in a row the stream survives (default 8). */
  maxRetries?: number | undefined;
  /** How the stream authenticates (default the client's). */
  auth?: StreamAuth | undefined;
}

/** Filters of the whole log. */
export interface LogFilter {
  /** Only this session's events. */
  sessionKey?: string | undefined;
  /** Only this agent's events. */
  agentId?: string | undefined;
  /** Only these types. */
  types?: readonly EventType[] | undefined;
}

/**
 * What a stream follows: a run (with its session's key and agent when
 * known: a subscription on the WebSocket follows the run's session, by
 * them), or the log.
 */
export type StreamTarget =
  { run: string; sessionKey?: string | null | undefined; agentId?: string | null | undefined } | { log: LogFilter };

function cursorOf(after: string | number | undefined): bigint | undefined {
  if (after === undefined || after === "") return undefined;
  const text = String(after);
  if (!/^\d{1,20}$/.test(text)) {
    throw new TalonError(`an event cursor is a decimal event id, not ${JSON.stringify(text).slice(0, 40)}`, {
      code: "invalid_request",
    });
  }
  return BigInt(text);
}

/**
 * A resuming event stream: `for await (const event of stream)`. Its
 * `cursor` is the id of the last event delivered, to save and resume from
 * with `events({ after })`.
 */
export class EventStream implements AsyncIterable<TalonEvent> {
  readonly #caller: HttpCaller;
  readonly #target: StreamTarget;
  readonly #options: EventsOptions;
  readonly #defaultAuth: StreamAuth;
  #cursor: bigint | undefined;
  #started = false;

  constructor(caller: HttpCaller, target: StreamTarget, options: EventsOptions = {}, auth: StreamAuth = "header") {
    this.#caller = caller;
    this.#target = target;
    this.#options = options;
    this.#defaultAuth = auth;
    this.#cursor = cursorOf(options.after);
  }

  /** The id of the last event delivered (or the one it started after). */
  get cursor(): string | undefined {
    return this.#cursor?.toString();
  }

  [Symbol.asyncIterator](): AsyncIterator<TalonEvent> {
    if (this.#started) {
      throw new TalonError("an event stream is iterated once; call events() again", { code: "invalid_request" });
    }
    this.#started = true;
    return this.#follow();
  }

  async *#follow(): AsyncGenerator<TalonEvent, void, undefined> {
    const maxRetries = this.#options.maxRetries ?? 8;
    const signal = this.#options.signal;
    let failures = 0;
    for (;;) {
      signal?.throwIfAborted();
      const connection = new AbortController();
      const onAbort = () => {
        connection.abort(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      let delivered = false;
      try {
        for await (const event of this.#source(connection.signal)) {
          const id = cursorOf(event.id);
          if (id !== undefined && this.#cursor !== undefined && id <= this.#cursor) continue;
          this.#cursor = id ?? this.#cursor;
          delivered = true;
          failures = 0;
          // Frames already read are not handed over once the caller aborted.
          if (signal?.aborted) throw signal.reason;
          yield event;
          if ("run" in this.#target && TERMINAL_TYPES.includes(event.type)) return;
        }
        // The body ended: a run's stream before its terminal event, or the
        // log's stream at all, was cut.
        if (!delivered) failures += 1;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof TalonError && !error.retryable && error.code !== "unavailable") throw error;
        // A connection that delivered something and was then cut is
        // reopened at once; only one that failed before delivering counts
        // (and waits out the backoff).
        if (!delivered) failures += 1;
        if (failures > maxRetries) throw error;
      } finally {
        signal?.removeEventListener("abort", onAbort);
        connection.abort();
      }
      if (failures > maxRetries) {
        throw new TalonError(`${this.#path()} kept ending before delivering an event`, {
          code: "unavailable",
          retryable: true,
          method: `GET ${this.#path()}`,
        });
      }
      if (failures > 0) {
        const wait =
          this.#caller.delay(failures, new TalonError("cut", { code: "unavailable", retryable: true }), maxRetries) ??
          0;
        await sleep(wait, signal);
      }
    }
  }

  /** The events of one connection: a subscription on the client's WebSocket, or an SSE response. */
  #source(signal: AbortSignal): AsyncIterable<TalonEvent> {
    const caller = this.#caller;
    if (caller instanceof WsCaller && caller.carriesStreams) {
      return socketEvents(caller, this.#target, this.#cursor, signal);
    }
    return this.#sse(signal);
  }

  async *#sse(signal: AbortSignal): AsyncGenerator<TalonEvent, void, undefined> {
    const body = await this.#open(signal);
    for await (const frame of frames(body)) {
      if (frame.event === "error") throw streamError(frame.data, this.#path());
      yield parseEvent(frame.data, this.#path());
    }
  }

  #path(): string {
    return "run" in this.#target ? `/v1/runs/${encodeURIComponent(this.#target.run)}/events` : "/v1/events";
  }

  async #open(signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const url = this.#caller.url(this.#path().slice(1));
    if (this.#cursor !== undefined) url.searchParams.set("after", this.#cursor.toString());
    if ("log" in this.#target) {
      const { sessionKey, agentId, types } = this.#target.log;
      if (sessionKey) url.searchParams.set("sessionKey", sessionKey);
      if (agentId) url.searchParams.set("agentId", agentId);
      if (types && types.length > 0) url.searchParams.set("types", types.join(","));
    }
    let headers: Record<string, string>;
    if ((this.#options.auth ?? this.#defaultAuth) === "ticket") {
      // The ticket opens this one stream, read-only.
      const stream: TicketStream =
        "run" in this.#target
          ? { run: { runId: this.#target.run } }
          : {
              events: {
                ...(this.#target.log.sessionKey ? { sessionKey: this.#target.log.sessionKey } : {}),
                ...(this.#target.log.agentId ? { agentId: this.#target.log.agentId } : {}),
                ...(this.#target.log.types && this.#target.log.types.length > 0
                  ? { types: [...this.#target.log.types] }
                  : {}),
              },
            };
      const minted = await this.#caller.call("tokens.ticket", { scopes: ["session.read"], stream }, { signal });
      url.searchParams.set("ticket", minted.ticket);
      headers = await this.#caller.headers({ accept: "text/event-stream" });
      delete headers.authorization;
    } else {
      headers = await this.#caller.headers({ accept: "text/event-stream" });
    }
    let response: Response;
    try {
      response = await this.#caller.fetch(url, { headers, signal });
    } catch (cause) {
      if (signal.aborted) throw cause;
      throw new TalonError(unreachable(url, cause), {
        code: "unavailable",
        retryable: true,
        method: `GET ${this.#path()}`,
        cause,
      });
    }
    if (!response.ok) throw await errorOf(response, `GET ${this.#path()}`);
    if (!response.body) {
      throw new TalonError(`GET ${this.#path()} answered without a body`, { code: "unavailable", retryable: true });
    }
    return response.body;
  }
}

function streamError(data: string, path: string): TalonError {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error ?? body;
  if (error !== undefined && validate("ApiError", error) === undefined) {
    return TalonError.fromApiError(error as never, { method: `GET ${path}` });
  }
  return new TalonError(`GET ${path} ended with an error frame that is not the protocol's`, {
    code: "internal",
    method: `GET ${path}`,
  });
}

function parseEvent(data: string, path: string): TalonEvent {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (cause) {
    throw new TalonError(`GET ${path} sent an event that is not JSON`, {
      code: "internal",
      method: `GET ${path}`,
      cause,
    });
  }
  const issue = validate("TalonEvent", value);
  if (issue) {
    throw new TalonError(
      `GET ${path} sent an event that does not follow the protocol at ${issue.path || "/"}: ${issue.message}`,
      {
        code: "internal",
        method: `GET ${path}`,
        details: { field: issue.path || "/", detail: issue.message },
      },
    );
  }
  return value as TalonEvent;
}
