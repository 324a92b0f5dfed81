// The WebSocket transport: a connection (`GET /v1/ws`, its token sent as
// the first frame, `{"type":"auth",token}`, answered `authenticated`, since
// neither browsers nor Node's global `WebSocket` can set headers; an empty
// token lets a signed-in dashboard's cookie stand in) carries calls as
// `{"type":"req",id,method,params}` and their answers as
// `{"type":"res",id,ok,result|error}`, matched by id. `subscribe` routes
// the `{"type":"event",subscriptionId,event}` frames that follow to a
// `Subscription`, installed before the answer is delivered so no event is
// missed; an `{"type":"event",subscriptionId,error}` frame ends it with the
// gateway's error. A client keeps one connection; a subscription past the
// protocol's `MAX_SUBSCRIPTIONS` on it opens another, closed again once it
// holds none (a slot is free once its `events.unsubscribe` is answered). A
// connection that drops fails its calls in flight and ends its
// subscriptions with `unavailable`; the next call or subscription opens a
// new one. The call rules (keys, retries, deadlines, `unsupported`) are
// `HttpCaller`'s; calls go over HTTP instead when the client only wants its
// streams on the socket (`streams: "websocket"`).

import { TalonError } from "./errors.js";
import { MAX_SUBSCRIPTIONS } from "./generated/caps.js";
import type { EventsSubscribeParams, TalonEvent } from "./generated/types.js";
import { HttpCaller, type ClientOptions } from "./http.js";
import { validate } from "./validate.js";

/** How long a socket may take to open and authenticate once made. */
const OPEN_TIMEOUT_MS = 30_000;

/** A signal that never aborts: a request the caller may not take back once sent. */
const NEVER = new AbortController().signal;

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** For `events.subscribe`: where its events go. */
  subscription?: Subscription;
}

/** What came for a subscription before its answer was read: an event, or the error that ended it. */
type Early = { event: unknown } | { error: TalonError };

/** `promise`, or the signal's reason if it aborts first. */
function raced<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function closedError(): TalonError {
  return new TalonError("the WebSocket closed (resume after the last event id)", {
    code: "unavailable",
    retryable: true,
  });
}

/** Sends the `auth` frame on `socket` and waits for `authenticated`; rejects if it closes or takes too long. */
function authenticate(socket: WebSocket, bearer: string, url: URL): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // A socket that did not authenticate is closed (closing a closed one does nothing).
    const fail = () => {
      clearTimeout(timer);
      reject(
        new TalonError(`the WebSocket at ${url.origin}${url.pathname} did not open`, {
          code: "unavailable",
          retryable: true,
        }),
      );
      socket.close();
    };
    const timer = setTimeout(fail, OPEN_TIMEOUT_MS);
    const send = () => {
      socket.send(JSON.stringify({ type: "auth", token: bearer }));
    };
    if (socket.readyState === 1) send();
    else socket.addEventListener("open", send, { once: true });
    socket.addEventListener(
      "message",
      (message) => {
        clearTimeout(timer);
        if (message.data === '{"type":"authenticated"}') resolve();
        else fail();
      },
      { once: true },
    );
    socket.addEventListener("error", fail, { once: true });
    socket.addEventListener(
      "close",
      (closed) => {
        clearTimeout(timer);
        if (closed.code === 4003)
          reject(new TalonError(`the gateway refused the token: ${closed.reason}`, { code: "unauthenticated" }));
        else fail();
      },
      { once: true },
    );
  });
}

/** One WebSocket of a client: opening, then open, until it closes. */
class Connection {
  /** Settles once the socket is authenticated (rejects if it never is). */
  readonly ready: Promise<void>;
  readonly pending = new Map<number, Pending>();
  readonly subscriptions = new Map<string, Subscription>();
  /** What came for subscriptions whose answer has not been read yet. */
  readonly early = new Map<string, Early[]>();
  /**
   * Subscriptions the gateway counts against `MAX_SUBSCRIPTIONS` on this
   * connection: asked for, live, or ended but not yet unsubscribed.
   */
  held = 0;
  nextId = 1;
  closed = false;
  #socket: WebSocket | undefined;
  readonly #settle: { resolve(): void; reject(error: unknown): void } | undefined;
  readonly #ended: (connection: Connection) => void;
  readonly #released: (connection: Connection) => void;

  constructor(
    open: () => Promise<WebSocket>,
    ended: (connection: Connection) => void,
    released: (connection: Connection) => void,
  ) {
    this.#ended = ended;
    this.#released = released;
    let settle: { resolve(): void; reject(error: unknown): void } | undefined;
    this.ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    this.#settle = settle;
    // Its waiters see the failure; nothing else has to.
    this.ready.catch(() => undefined);
    open().then(
      (socket) => {
        this.#attach(socket);
      },
      (error: unknown) => {
        this.#settle?.reject(error);
        this.#close();
      },
    );
  }

  #attach(socket: WebSocket): void {
    if (this.closed) {
      // Shut while it was opening.
      socket.close();
      return;
    }
    this.#socket = socket;
    this.#settle?.resolve();
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

  /** Sends a request once the socket is ready; `signal` takes it back (a call's, never a subscription's). */
  async request(method: string, params: unknown, signal: AbortSignal, subscription?: Subscription): Promise<unknown> {
    await raced(this.ready, signal);
    const socket = this.#socket;
    if (this.closed || !socket) throw closedError();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        reject(signal.reason as Error);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const done = (settle: (value: never) => void) => (value: unknown) => {
        signal.removeEventListener("abort", onAbort);
        settle(value as never);
      };
      const entry: Pending = { resolve: done(resolve), reject: done(reject) };
      if (subscription) entry.subscription = subscription;
      this.pending.set(id, entry);
      socket.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }

  /** A subscription's slot is free again. */
  release(): void {
    this.held = Math.max(0, this.held - 1);
    this.#released(this);
  }

  /** Closes the socket (or, while it opens, closes it as soon as it is made). */
  shut(): void {
    if (this.#socket) this.#socket.close();
    else this.#close();
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
          for (const early of this.early.get(id) ?? []) {
            if ("event" in early) pending.subscription.push(early.event);
            else pending.subscription.end(early.error);
          }
          this.early.delete(id);
        }
        pending.resolve(frame.result);
      } else {
        pending.reject(apiError(frame.error, "the WebSocket answered with an error that is not the protocol's"));
      }
    } else if (frame.type === "event" && typeof frame.subscriptionId === "string") {
      const target = this.subscriptions.get(frame.subscriptionId);
      const early: Early =
        frame.error === undefined
          ? { event: frame.event }
          : { error: apiError(frame.error, "a subscription ended with an error that is not the protocol's") };
      if (!target) {
        const list = this.early.get(frame.subscriptionId) ?? [];
        list.push(early);
        this.early.set(frame.subscriptionId, list);
      } else if ("event" in early) target.push(early.event);
      else target.end(early.error);
    }
  }

  #close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#settle?.reject(closedError());
    for (const pending of this.pending.values()) pending.reject(closedError());
    this.pending.clear();
    for (const subscription of this.subscriptions.values()) subscription.fail(closedError());
    this.subscriptions.clear();
    this.early.clear();
    this.#ended(this);
  }
}

/** The protocol's error in `error`, or an `internal` one saying `otherwise`. */
function apiError(error: unknown, otherwise: string): TalonError {
  if (error !== undefined && validate("ApiError", error) === undefined) return TalonError.fromApiError(error as never);
  return new TalonError(otherwise, { code: "internal" });
}

/** Live events of one `events.subscribe`: `for await (const event of subscription)`. */
export class Subscription implements AsyncIterable<TalonEvent> {
  /** The subscription's id (set once the gateway answered). */
  id = "";
  readonly #queue: unknown[] = [];
  #waiting: { resolve(r: IteratorResult<TalonEvent>): void; reject(e: unknown): void } | undefined;
  #error: unknown;
  #ended = false;
  #released = false;
  readonly #connection: Connection;

  /** @internal Made by `WsCaller.subscribe`. */
  constructor(connection: Connection) {
    this.#connection = connection;
  }

  /** @internal An event frame for it. */
  push(event: unknown): void {
    if (this.#ended) return;
    const issue = validate("TalonEvent", event);
    if (issue) {
      this.end(
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

  /** @internal Ends the iteration with `error` (its connection closed: the gateway holds nothing of it). */
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

  /** @internal Ends the iteration with `error` the gateway sent, and frees its slot. */
  end(error: unknown): void {
    this.fail(error);
    void this.#release();
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
    if (!this.#ended) {
      this.#ended = true;
      this.#waiting?.resolve({ value: undefined, done: true });
      this.#waiting = undefined;
    }
    await this.#release();
  }

  /** Unsubscribes (once): its slot is free when the gateway answered, or when the connection is gone. */
  async #release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    const connection = this.#connection;
    if (this.id) connection.subscriptions.delete(this.id);
    if (!connection.closed && this.id) {
      await connection
        .request("events.unsubscribe", { subscriptionId: this.id }, AbortSignal.timeout(5_000))
        .catch(() => undefined);
    }
    connection.release();
  }
}

/** What a `WsCaller` carries over its sockets. */
export interface WsCarries {
  /** The calls (default true); else they go over HTTP. */
  calls?: boolean;
  /** The client's event streams, as subscriptions (default false: Server-Sent Events). */
  streams?: boolean;
}

/** Calls the gateway's methods, and subscribes, over WebSockets. */
export class WsCaller extends HttpCaller {
  /** Whether event streams travel as subscriptions here (`streams: "websocket"`). */
  readonly carriesStreams: boolean;
  readonly #calls: boolean;
  readonly #webSocket: (url: URL) => WebSocket | Promise<WebSocket>;
  /** Open (or opening) connections, the one calls use first. */
  #connections: Connection[] = [];

  constructor(options: ClientOptions, carries: WsCarries = {}) {
    super(options);
    this.#calls = carries.calls ?? true;
    this.carriesStreams = carries.streams ?? false;
    const open = options.webSocket;
    if (!open && typeof globalThis.WebSocket !== "function") {
      throw new TalonError("this runtime has no global WebSocket (Node 20 needs --experimental-websocket)", {
        code: "unsupported",
      });
    }
    this.#webSocket = open ?? ((url) => new WebSocket(url));
  }

  protected override async send(
    method: string,
    resultSchema: string,
    body: string,
    signal: AbortSignal,
  ): Promise<unknown> {
    if (!this.#calls) return super.send(method, resultSchema, body, signal);
    const connection = this.#connections.find((c) => !c.closed) ?? this.#open();
    return this.checked(method, resultSchema, await connection.request(method, JSON.parse(body), signal));
  }

  /**
   * Live events after a replay from `params.after`, on a connection with
   * room for one more subscription (a new one past `MAX_SUBSCRIPTIONS`).
   */
  async subscribe(params: EventsSubscribeParams = {}, options: { signal?: AbortSignal } = {}): Promise<Subscription> {
    const signal = options.signal ?? NEVER;
    signal.throwIfAborted();
    // The slot is taken now, before any await, so that subscriptions asked for together count each other.
    const connection = this.#connections.find((c) => !c.closed && c.held < MAX_SUBSCRIPTIONS) ?? this.#open();
    connection.held += 1;
    const subscription = new Subscription(connection);
    let answered: Promise<unknown>;
    try {
      await raced(connection.ready, signal);
      // Once sent it is not taken back: the gateway may name it after the caller gave up.
      answered = connection.request("events.subscribe", params, NEVER, subscription);
    } catch (error) {
      connection.release();
      throw error;
    }
    let result: unknown;
    try {
      result = await raced(answered, signal);
    } catch (error) {
      // Refused, or given up on: a subscription named later is ended at once.
      answered.then(
        () => void subscription.close(),
        () => {
          connection.release();
        },
      );
      throw error;
    }
    const issue = validate("EventsSubscribeResult", result);
    if (issue) {
      void subscription.close();
      throw new TalonError(`the answer to events.subscribe does not follow the protocol: ${issue.message}`, {
        code: "internal",
      });
    }
    return subscription;
  }

  /** Closes every connection (their calls fail, their subscriptions end). */
  close(): Promise<void> {
    const connections = this.#connections;
    this.#connections = [];
    for (const connection of connections) connection.shut();
    return Promise.resolve();
  }

  #open(): Connection {
    const connection = new Connection(
      async () => {
        // A browser cannot set `Authorization` on an upgrade: the token goes
        // in the first frame (never in the URL), answered `authenticated`.
        const bearer = (await this.headers()).authorization?.slice("Bearer ".length) ?? "";
        const url = this.url("v1/ws");
        url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
        const socket = await this.#webSocket(url);
        await authenticate(socket, bearer, url);
        return socket;
      },
      (ended) => {
        this.#connections = this.#connections.filter((c) => c !== ended);
      },
      (released) => {
        // A connection that holds nothing while another is open is one opened past the cap: it goes.
        const others = this.#connections.some((c) => c !== released && !c.closed);
        if (released.held === 0 && released.pending.size === 0 && others) released.shut();
      },
    );
    this.#connections.push(connection);
    return connection;
  }
}
