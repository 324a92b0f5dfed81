// The WebSocket transport, `GET /v1/ws` (the bearer token on the upgrade,
// or a `tokens.ticket` ticket as `?ticket=`), as the gateway serves it:
//
// - `{"type":"req","id":..,"method":..,"params":..}` is answered by
//   `{"type":"res","id":..,"ok":true,"result":..}` or `{…,"ok":false,
//   "error":{..}}`, through the same path as HTTP; calls run concurrently.
// - `events.subscribe` answers `{subscriptionId}` (`sub_<n>`, at most 16 live
//   per connection), then sends `{"type":"event","subscriptionId":..,
//   "event":{..}}` frames (the envelopes and ids SSE sends);
//   `events.unsubscribe` ends one.
//
// A frame that is not a request (not JSON, binary, no `id`) gets an
// `invalid_request` answer with the id it had (else null) and the
// connection stays; a frame over 4 MiB closes it. A subscription cut by
// `dropStream` drops the whole connection, with no close frame.

import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";

import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { caps, METHODS, type protocol as P, refusals } from "@talon/sdk";

import { arrive, serveCall } from "./api.js";
import { Failure, errorOf } from "./errors.js";
import { decodeParams, parseJson, queryOf } from "./params.js";
import { cursorOf } from "./runs.js";
import type { Caller, State } from "./state.js";
import { Follow } from "./stream.js";
import { askedBy, authenticate, requireScope, streamCaller, ticketRefusal } from "./tokens.js";

/** The close code of a socket whose `auth` frame was missing or refused. */
const CLOSE_UNAUTHENTICATED = 4003;
/** How long a socket opened without credentials may take to send its `auth` frame. */
const AUTH_WITHIN_MS = 10_000;
import { errorHeaders, httpStatus, json, mintRequestId } from "./wire.js";

/** The largest frame taken (the gateway's body limit). */
export const MAX_FRAME_BYTES = caps.DEFAULT_MAX_BODY_BYTES;
/** Subscriptions one connection may hold at once. */
const MAX_SUBSCRIPTIONS = caps.MAX_SUBSCRIPTIONS;

/** A decoded request frame, or why the frame is none. */
type Incoming = { id: unknown; method: string; params: unknown } | { refused: P.ApiError; id: unknown };

function decode(text: string): Incoming {
  const parsed = parseJson(text);
  if ("error" in parsed) return { id: null, refused: refusals.frameNotJson(parsed.error) };
  const frame = parsed.value;
  const field = (name: string): unknown =>
    frame !== null && typeof frame === "object" && !Array.isArray(frame)
      ? (frame as Record<string, unknown>)[name]
      : undefined;
  const id = field("id") ?? null;
  const method = field("method");
  if (field("type") === "req" && typeof method === "string" && id !== null)
    return { id, method, params: field("params") };
  return { id, refused: refusals.frameNotRequest() };
}

function answer(id: unknown, outcome: { ok: true; result: unknown } | { ok: false; error: P.ApiError }): string {
  return outcome.ok
    ? json({ type: "res", id, ok: true, result: outcome.result })
    : json({ type: "res", id, ok: false, error: outcome.error });
}

/** Writes a plain HTTP answer on a socket that asked to upgrade (the upgrade is refused). */
export function refuse(socket: Duplex, status: number, body: string, headers: Record<string, string>): void {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`];
  const all = { ...headers, "content-length": String(Buffer.byteLength(body)), connection: "close" };
  for (const [name, value] of Object.entries(all)) lines.push(`${name}: ${value}`);
  socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
}

/** The transport: upgrades, and the connections it holds. */
export class WsTransport {
  readonly #state: State;
  readonly #server = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });

  constructor(state: State) {
    this.#state = state;
  }

  /** An upgrade request (to any path: only `/v1/ws` upgrades). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    const requestId = mintRequestId();
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const json_ = (error: P.ApiError) => {
      refuse(socket, httpStatus(error.code), json({ error }), {
        ...errorHeaders(error),
        "content-type": "application/json",
        "x-request-id": requestId,
      });
    };
    if (url.pathname !== "/v1/ws") {
      json_(refusals.noRoute());
      return;
    }
    let caller: Caller | undefined;
    try {
      const query = queryOf(url.searchParams, ["ticket"]);
      const authorization = req.headers.authorization;
      // Neither: the token comes in the first frame (a browser cannot set the header).
      if (authorization !== undefined || query.ticket !== undefined) {
        caller = streamCaller(this.#state, authorization, query.ticket);
        if (caller.ticket !== undefined && !("socket" in caller.ticket))
          throw ticketRefusal("this ticket opens another stream");
      }
    } catch (thrown) {
      json_(errorOf(thrown));
      return;
    }
    if (this.#state.closing) {
      socket.destroy();
      return;
    }
    this.#server.handleUpgrade(req, socket, head, (ws) => new Connection(this.#state, ws, caller, requestId));
  }

  /** Ends every connection (no close handshake is waited for). */
  close(): void {
    for (const client of this.#server.clients) client.terminate();
    this.#server.close();
  }
}

/** One connection: its calls, its subscriptions. */
class Connection {
  readonly #state: State;
  readonly #ws: WebSocket;
  #caller: Caller | undefined;
  /** Closes a socket whose `auth` frame does not come in time. */
  #deadline: NodeJS.Timeout | undefined;
  readonly #requestId: string;
  readonly #subscriptions = new Map<string, Follow>();
  #named = 0;
  /** `events.subscribe` and `events.unsubscribe` are taken in order, one at a time. */
  #serial: Promise<void> = Promise.resolve();
  /** The last frame sent (a cut waits for it to be written). */
  #sent: Promise<void> = Promise.resolve();

  constructor(state: State, ws: WebSocket, caller: Caller | undefined, requestId: string) {
    this.#state = state;
    this.#ws = ws;
    this.#caller = caller;
    this.#requestId = requestId;
    if (caller === undefined) {
      this.#deadline = setTimeout(() => {
        ws.close(CLOSE_UNAUTHENTICATED, 'the first frame must be {"type":"auth","token":..}');
      }, AUTH_WITHIN_MS);
    }
    // Each frame in flight listens for the close (many may be in flight at once).
    ws.setMaxListeners(0);
    ws.on("message", (data, isBinary) => {
      this.#frame(data, isBinary);
    });
    ws.on("close", () => {
      this.#end();
    });
    ws.on("error", () => {
      this.#end();
    });
  }

  #send(text: string): Promise<void> {
    this.#sent = new Promise((resolve) => {
      if (this.#ws.readyState !== this.#ws.OPEN) {
        resolve();
        return;
      }
      const done = () => {
        this.#ws.off("close", done);
        resolve();
      };
      this.#ws.on("close", done);
      this.#ws.send(text, () => {
        done();
      });
    });
    return this.#sent;
  }

  /** The first frame of a socket opened without credentials: `{"type":"auth","token":..}`, answered `{"type":"authenticated"}`, else the socket closes (4003). */
  #authenticate(text: string): void {
    clearTimeout(this.#deadline);
    let token: unknown;
    try {
      const frame: unknown = JSON.parse(text);
      if (typeof frame === "object" && frame !== null && Object.keys(frame).length === 2) {
        const fields = frame as Record<string, unknown>;
        if (fields.type === "auth") token = fields.token;
      }
    } catch {
      token = undefined;
    }
    if (typeof token !== "string") {
      this.#ws.close(CLOSE_UNAUTHENTICATED, 'the first frame must be {"type":"auth","token":..}');
      return;
    }
    try {
      this.#caller = authenticate(this.#state, `Bearer ${token}`);
    } catch (thrown) {
      this.#ws.close(CLOSE_UNAUTHENTICATED, errorOf(thrown).message.slice(0, 100));
      return;
    }
    void this.#send(JSON.stringify({ type: "authenticated" }));
  }

  #end(): void {
    clearTimeout(this.#deadline);
    for (const follow of this.#subscriptions.values()) follow.stop();
    this.#subscriptions.clear();
    this.#state.touch();
  }

  #frame(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      void this.#send(answer(null, { ok: false, error: refusals.binaryFrame() }));
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString("utf8")
      : Buffer.from(data as ArrayBuffer).toString("utf8");
    const caller = this.#caller;
    if (caller === undefined) {
      this.#authenticate(text);
      return;
    }
    const incoming = decode(text);
    if ("refused" in incoming) {
      void this.#send(answer(incoming.id, { ok: false, error: incoming.refused }));
      return;
    }
    const { id, method, params } = incoming;
    if (caller.ticket !== undefined && method !== "events.subscribe" && method !== "events.unsubscribe") {
      void this.#send(
        answer(id, { ok: false, error: ticketRefusal(`\`${[...method].slice(0, 64).join("")}\``).error }),
      );
      return;
    }
    if (method === "events.subscribe" || method === "events.unsubscribe") {
      this.#serial = this.#serial.then(() =>
        method === "events.subscribe" ? this.#subscribe(id, params) : this.#unsubscribe(id, params),
      );
      return;
    }
    void serveCall(this.#state, caller, method, params, "websocket", this.#requestId).then((outcome) =>
      this.#send(answer(id, outcome)),
    );
  }

  async #subscribe(id: unknown, params: unknown): Promise<void> {
    let follow: Follow;
    try {
      await arrive(this.#state, "events.subscribe", params, "websocket");
      const caller = this.#caller;
      if (caller === undefined) throw new Failure(refusals.socketUnauthenticated());
      requireScope(caller, METHODS["events.subscribe"].scope);
      const p = decodeParams("events.subscribe", params);
      if (caller.ticket !== undefined && !("socket" in caller.ticket && askedBy(caller.ticket.socket, p))) {
        throw ticketRefusal("this ticket subscribes with another filter");
      }
      for (const [name, live] of this.#subscriptions) if (live.done) this.#subscriptions.delete(name);
      if (this.#subscriptions.size >= MAX_SUBSCRIPTIONS) {
        throw new Failure(refusals.tooManySubscriptions(MAX_SUBSCRIPTIONS));
      }
      const cursor = cursorOf(p.after);
      follow = Follow.start(
        this.#state,
        { sessionKey: p.sessionKey ?? undefined, agentId: p.agentId ?? undefined, types: p.types ?? [] },
        cursor,
        false,
      );
    } catch (thrown) {
      await this.#send(answer(id, { ok: false, error: errorOf(thrown) }));
      return;
    }
    this.#named += 1;
    const name = `sub_${this.#named}`;
    this.#subscriptions.set(name, follow);
    // The answer naming it goes out before its events.
    void this.#send(answer(id, { ok: true, result: { subscriptionId: name } }));
    void this.#forward(name, follow);
  }

  async #forward(name: string, follow: Follow): Promise<void> {
    const prefix = `{"type":"event","subscriptionId":${JSON.stringify(name)},"event":`;
    for (;;) {
      const next = await follow.next();
      if (next === undefined) return;
      if (next === "cut") {
        // Cut: what was sent is written, then the socket goes, with no close frame.
        await this.#sent;
        this.#ws.terminate();
        return;
      }
      await this.#send(`${prefix}${next.event.json}}`);
    }
  }

  async #unsubscribe(id: unknown, params: unknown): Promise<void> {
    try {
      await arrive(this.#state, "events.unsubscribe", params, "websocket");
      const caller = this.#caller;
      if (caller === undefined) throw new Failure(refusals.socketUnauthenticated());
      requireScope(caller, METHODS["events.unsubscribe"].scope);
      const p = decodeParams("events.unsubscribe", params);
      const follow = this.#subscriptions.get(p.subscriptionId);
      if (!follow) throw new Failure(refusals.noSubscription(p.subscriptionId));
      follow.stop();
      this.#subscriptions.delete(p.subscriptionId);
      this.#state.touch();
      await this.#send(answer(id, { ok: true, result: {} }));
    } catch (thrown) {
      await this.#send(answer(id, { ok: false, error: errorOf(thrown) }));
    }
  }
}
