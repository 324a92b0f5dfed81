// The WebSocket transport: one connection (`GET /v1/ws`, its token sent as
// the first frame, `{"type":"auth",token}`, answered `authenticated`, since
// neither browsers nor Node's global `WebSocket` can set headers) carries
// every call as `{"type":"req",id,method,params}` and its answer as
// `{"type":"res",id,ok,result|error}`, matched by id. `subscribe` routes
// the `{"type":"event",subscriptionId,event}` frames that follow to a
// `Subscription`, installed before the answer is delivered so no event is
// missed. A connection that drops fails its calls in flight and ends its
// subscriptions with `unavailable`; the next call opens a new one. The
// call rules (keys, retries, deadlines, `unsupported`) are `HttpCaller`'s.

import { TalonError } from "./errors.js";
import type { EventsSubscribeParams, TalonEvent } from "./generated/types.js";
import { HttpCaller, type ClientOptions } from "./http.js";
import { validate } from "./validate.js";

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** For `events.subscribe`: where its events go. */
  subscription?: Subscription;
}

class Connection {
  readonly socket: WebSocket;
  readonly pending = new Map<number, Pending>();
  readonly subscriptions = new Map<string, Subscription>();
  /** Events of a subscription whose answer has not been read yet. */
  readonly early = new Map<string, unknown[]>();
  nextId = 1;
  closed = false;

  constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener("message", (message) => {
      this.#route(message.data);
    });
    socket.addEventListener("close", () => {
      this.#close();
    });
    socket.addEventListener("error", () => {
      this.#close();
    });
  }

  request(method: string, params: unknown, signal: AbortSignal, subscription?: Subscription): Promise<unknown> {
    if (this.closed) return Promise.reject(closedError());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const done = (settle: (value: never) => void) => (value: unknown) => {
        signal.removeEventListener("abort", onAbort);
        settle(value as never);
      };
      const entry: Pending = { resolve: done(resolve), reject: done(reject) };
      if (subscription) entry.subscription = subscription;
      this.pending.set(id, entry);
      this.socket.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }

  #route(data: unknown): void {
    if (typeof data !== "string") return;
    let frame: {
      type?: unknown;
      id?: unknown;
      ok?: unknown;
      result?: unknown;
      error?: unknown;
      subscriptionId?: unknown;
      event?: unknown;
    };
    try {
      frame = JSON.parse(data) as typeof frame;
    } catch {
      return;
    }
    if (frame.type === "res" && typeof frame.id === "number") {
      const pending = this.pending.get(frame.id);
      if (!pending) return;
      this.pending.delete(frame.id);
      if (frame.ok === true) {
        const id = (frame.result as { subscriptionId?: unknown } | null)?.subscriptionId;
        if (pending.subscription && typeof id === "string") {
          pending.subscription.id = id;
          this.subscriptions.set(id, pending.subscription);
          for (const event of this.early.get(id) ?? []) pending.subscription.push(event);
          this.early.delete(id);
        }
        pending.resolve(frame.result);
      } else if (frame.error !== undefined && validate("ApiError", frame.error) === undefined) {
        pending.reject(TalonError.fromApiError(frame.error as never));
      } else {
        pending.reject(
          new TalonError("the WebSocket answered with an error that is not the protocol's", { code: "internal" }),
        );
      }
    } else if (frame.type === "event" && typeof frame.subscriptionId === "string") {
      const target = this.subscriptions.get(frame.subscriptionId);
      if (target) target.push(frame.event);
      else {
        const list = this.early.get(frame.subscriptionId) ?? [];
        list.push(frame.event);
        this.early.set(frame.subscriptionId, list);
      }
    }
  }

  #close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const pending of this.pending.values()) pending.reject(closedError());
    this.pending.clear();
    for (const subscription of this.subscriptions.values()) subscription.fail(closedError());
    this.subscriptions.clear();
  }
}

function closedError(): TalonError {
  return new TalonError("the WebSocket closed (resume after the last event id)", {
    code: "unavailable",
    retryable: true,
  });
}

/** Live events of one `events.subscribe`: `for await (const event of subscription)`. */
export class Subscription implements AsyncIterable<TalonEvent> {
  /** The subscription's id (set once the gateway answered). */
  id = "";
  readonly #queue: unknown[] = [];
  #waiting: { resolve(r: IteratorResult<TalonEvent>): void; reject(e: unknown): void } | undefined;
  #error: unknown;
  #ended = false;
  #connection: Connection | undefined;
  bind(connection: Connection): void {
    this.#connection = connection;
  }

  push(event: unknown): void {
    if (this.#ended) return;
    const issue = validate("TalonEvent", event);
    if (issue) {
      this.fail(
        new TalonError(`a subscribed event does not follow the protocol at ${issue.path || "/"}: ${issue.message}`, {
          code: "internal",
        }),
      );
      return;
    }
    if (this.#waiting) {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting.resolve({ value: event as TalonEvent, done: false });
    } else {
      this.#queue.push(event);
    }
  }

  fail(error: unknown): void {
    if (this.#ended) return;
    this.#error = error;
    this.#ended = true;
    if (this.#waiting) {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting.reject(error);
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<TalonEvent> {
    return {
      next: () => {
        const event = this.#queue.shift();
        if (event !== undefined) return Promise.resolve({ value: event as TalonEvent, done: false });
        if (this.#ended) {
          if (this.#error === undefined) return Promise.resolve({ value: undefined, done: true });
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what fail() was given, as a waiting reader gets it (`unknown`, which the check above narrows to `{} | null`)
          return Promise.reject(this.#error);
        }
        return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
      },
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }

  /** Ends the subscription (`events.unsubscribe`) and the iteration. */
  async close(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#waiting?.resolve({ value: undefined, done: true });
    this.#waiting = undefined;
    const connection = this.#connection;
    if (connection && !connection.closed && this.id) {
      connection.subscriptions.delete(this.id);
      await connection
        .request("events.unsubscribe", { subscriptionId: this.id }, AbortSignal.timeout(5_000))
        .catch(() => undefined);
    }
  }
}

/** Calls the gateway's methods over one WebSocket. */
export class WsCaller extends HttpCaller {
  #connection: Promise<Connection> | undefined;

  constructor(options: ClientOptions) {
    super(options);
    if (typeof globalThis.WebSocket !== "function") {
      throw new TalonError("this runtime has no global WebSocket (Node 20 needs --experimental-websocket)", {
        code: "unsupported",
      });
    }
  }

  protected override async send(
    method: string,
    resultSchema: string,
    body: string,
    signal: AbortSignal,
  ): Promise<unknown> {
    const connection = await this.#connectionFor(signal);
    return this.checked(method, resultSchema, await connection.request(method, JSON.parse(body), signal));
  }

  /** Live events after a replay from `params.after`, on this connection. */
  async subscribe(params: EventsSubscribeParams = {}, options: { signal?: AbortSignal } = {}): Promise<Subscription> {
    const signal = options.signal ?? new AbortController().signal;
    const connection = await this.#connectionFor(signal);
    const subscription = new Subscription();
    subscription.bind(connection);
    const result = await connection.request("events.subscribe", params, signal, subscription);
    const issue = validate("EventsSubscribeResult", result);
    if (issue)
      throw new TalonError(`the answer to events.subscribe does not follow the protocol: ${issue.message}`, {
        code: "internal",
      });
    return subscription;
  }

  /** Closes the connection (its calls fail, its subscriptions end). */
  async close(): Promise<void> {
    const connection = await this.#connection?.catch(() => undefined);
    connection?.socket.close();
    this.#connection = undefined;
  }

  #connectionFor(signal: AbortSignal): Promise<Connection> {
    const current = this.#connection;
    if (current) {
      return current.then((c) => (c.closed ? this.#open(signal) : c));
    }
    return this.#open(signal);
  }

  #open(signal: AbortSignal): Promise<Connection> {
    const opening = (async () => {
      // A browser cannot set `Authorization` on an upgrade: the token goes
      // in the first frame (never in the URL), answered `authenticated`.
      const bearer = (await this.headers()).authorization?.slice("Bearer ".length) ?? "";
      const url = this.url("v1/ws");
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      const socket = new WebSocket(url);
      await new Promise<void>((resolve, reject) => {
        const fail = () => {
          reject(
            new TalonError(`the WebSocket at ${url.origin}/v1/ws did not open`, {
              code: "unavailable",
              retryable: true,
            }),
          );
        };
        socket.addEventListener(
          "open",
          () => {
            socket.send(JSON.stringify({ type: "auth", token: bearer }));
          },
          { once: true },
        );
        socket.addEventListener(
          "message",
          (message) => {
            if (message.data === '{"type":"authenticated"}') resolve();
            else fail();
          },
          { once: true },
        );
        socket.addEventListener("error", fail, { once: true });
        socket.addEventListener(
          "close",
          (closed) => {
            if (closed.code === 4003)
              reject(new TalonError(`the gateway refused the token: ${closed.reason}`, { code: "unauthenticated" }));
            else fail();
          },
          { once: true },
        );
        signal.addEventListener(
          "abort",
          () => {
            socket.close();
            reject(signal.reason);
          },
          { once: true },
        );
      });
      return new Connection(socket);
    })();
    this.#connection = opening;
    opening.catch(() => {
      if (this.#connection === opening) this.#connection = undefined;
    });
    return opening;
  }
}
