// The WebSocket's bookkeeping, against a scripted socket given as the
// client's `webSocket` (no gateway): the `auth` frame (empty without a
// token, for a cookie to stand in), an error frame ending its subscription
// with the gateway's error and freeing its slot, a second socket only past
// `MAX_SUBSCRIPTIONS` (closed once it holds none), a subscription the
// caller gave up on unsubscribed once named, a socket factory that holds
// every stream back until it gives a socket, and `streams: "websocket"`
// sending calls over HTTP and streams over the socket.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Talon, TalonError, caps, type TalonEvent } from "@talon/sdk";

/** A frame the client sent, parsed. */
interface Sent {
  type: string;
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  token?: string;
}

/** How the scripted gateway answers a request (the default: as the gateway would). */
type Answer = (frame: Sent, socket: ScriptedSocket) => unknown;

/** A socket standing in for the browser's: what the client sends is answered by a script. */
class ScriptedSocket extends EventTarget {
  readyState = 0;
  readonly sent: Sent[] = [];
  #subscriptions = 0;
  readonly live = new Set<string>();

  constructor(
    readonly url: URL,
    readonly answer: Answer | undefined,
  ) {
    super();
    setTimeout(() => {
      this.readyState = 1;
      this.dispatchEvent(new Event("open"));
    }, 0);
  }

  send(text: string): void {
    const frame = JSON.parse(text) as Sent;
    this.sent.push(frame);
    setTimeout(() => {
      this.#respond(frame);
    }, 0);
  }

  close(code = 1000, reason = ""): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    setTimeout(() => {
      this.dispatchEvent(Object.assign(new Event("close"), { code, reason }));
    }, 0);
  }

  /** A frame from the gateway. */
  receive(frame: unknown): void {
    if (this.readyState !== 1) return;
    this.dispatchEvent(Object.assign(new Event("message"), { data: JSON.stringify(frame) }));
  }

  #respond(frame: Sent): void {
    if (frame.type === "auth") {
      this.receive({ type: "authenticated" });
      return;
    }
    const custom = this.answer?.(frame, this);
    if (custom !== undefined) {
      if (custom !== null) this.receive(custom);
      return;
    }
    if (frame.method === "events.subscribe") {
      const name = `sub_${++this.#subscriptions}`;
      this.live.add(name);
      this.receive({ type: "res", id: frame.id, ok: true, result: { subscriptionId: name } });
    } else if (frame.method === "events.unsubscribe") {
      this.live.delete(String(frame.params?.subscriptionId));
      this.receive({ type: "res", id: frame.id, ok: true, result: {} });
    }
  }
}

/** A client whose sockets are scripted; `opened` lists them. */
function scripted(options: { answer?: Answer; token?: string; fetch?: typeof fetch; hold?: Promise<void> } = {}): {
  talon: Talon;
  opened: ScriptedSocket[];
} {
  const opened: ScriptedSocket[] = [];
  const talon = new Talon({
    baseUrl: "http://gateway.test/ops",
    ...(options.token === undefined ? {} : { token: options.token }),
    streams: "websocket",
    fetch:
      options.fetch ??
      (() => {
        throw new Error("no HTTP here");
      }),
    webSocket: async (url) => {
      if (options.hold) await options.hold;
      const socket = new ScriptedSocket(url, options.answer);
      opened.push(socket);
      return socket as unknown as WebSocket;
    },
  });
  return { talon, opened };
}

function delta(id: number, text: string): TalonEvent {
  const event: TalonEvent = {
    version: 1,
    id: String(id),
    ts: id,
    type: "assistant.delta",
    runId: "run_1",
    data: { text },
  };
  return event;
}

async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("the client's WebSocket", () => {
  it("authenticates in its first frame, its token empty when it has none (a cookie stands in)", async () => {
    for (const token of [undefined, "talon_secret"]) {
      const { talon, opened } = scripted(token === undefined ? {} : { token });
      const subscription = await talon.subscribe({ types: ["assistant.delta"] });
      const [socket] = opened;
      assert.ok(socket);
      assert.equal(socket.url.href, "ws://gateway.test/ops/v1/ws");
      assert.deepEqual(socket.sent[0], { type: "auth", token: token ?? "" });
      assert.equal(socket.sent[1]?.method, "events.subscribe");
      await subscription.close();
      await talon.close();
    }
  });

  it("ends a subscription with the gateway's error frame, and frees its slot", async () => {
    const { talon, opened } = scripted();
    const subscription = await talon.subscribe({ after: "5" });
    const socket = opened[0];
    assert.ok(socket);
    socket.receive({ type: "event", subscriptionId: "sub_1", event: delta(6, "a") });
    socket.receive({
      type: "event",
      subscriptionId: "sub_1",
      error: { code: "cursor_expired", message: "cursor 5 has expired", retryable: false, details: { oldestId: "9" } },
    });
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of subscription) seen.push(event.id);
      })(),
      (e: unknown) => e instanceof TalonError && e.code === "cursor_expired" && e.details?.oldestId === "9",
    );
    assert.deepEqual(seen, ["6"]);
    await until("the unsubscribe", () => socket.live.size === 0);
    assert.deepEqual(
      socket.sent.filter((f) => f.method === "events.unsubscribe").map((f) => f.params),
      [{ subscriptionId: "sub_1" }],
    );
    await talon.close();
  });

  it("ends a stream with the error frame's code, as an SSE error event does", async () => {
    const { talon, opened } = scripted({
      answer: (frame, socket) => {
        if (frame.method !== "events.subscribe") return undefined;
        socket.receive({ type: "res", id: frame.id, ok: true, result: { subscriptionId: "sub_9" } });
        socket.receive({
          type: "event",
          subscriptionId: "sub_9",
          error: { code: "cursor_expired", message: "gone", retryable: false },
        });
        return null;
      },
    });
    await assert.rejects(
      async () => {
        for await (const event of talon.events({ after: "3" })) assert.fail(`no event, got ${event.id}`);
      },
      (e: unknown) => e instanceof TalonError && e.code === "cursor_expired",
    );
    assert.equal(opened.length, 1);
    await talon.close();
  });

  it(`opens a second socket only past ${caps.MAX_SUBSCRIPTIONS} subscriptions, and closes it once it holds none`, async () => {
    const { talon, opened } = scripted();
    const max = caps.MAX_SUBSCRIPTIONS;
    const subscriptions = await Promise.all(Array.from({ length: max + 1 }, () => talon.subscribe()));
    assert.equal(opened.length, 2);
    assert.deepEqual(
      opened.map((s) => s.live.size),
      [max, 1],
    );
    // The first socket's slot freed by an unsubscribe is used again before a new socket opens.
    await subscriptions[0]?.close();
    const again = await talon.subscribe();
    const [first, extra] = opened;
    assert.ok(first && extra);
    assert.equal(first.live.size, max);
    await subscriptions.at(-1)?.close();
    await until("the extra socket to close", () => extra.readyState === 3);
    assert.equal(first.readyState, 1, "the first socket stays");
    for (const s of [again, ...subscriptions.slice(1, -1)]) await s.close();
    assert.equal(first.live.size, 0);
    await talon.close();
  });

  it("unsubscribes a subscription the caller gave up on, once the gateway names it", async () => {
    let release: () => void = () => undefined;
    const late = new Promise<void>((resolve) => (release = resolve));
    const { talon, opened } = scripted({
      answer: (frame, socket) => {
        if (frame.method !== "events.subscribe") return undefined;
        void late.then(() => {
          socket.live.add("sub_late");
          socket.receive({ type: "res", id: frame.id, ok: true, result: { subscriptionId: "sub_late" } });
        });
        return null;
      },
    });
    const controller = new AbortController();
    const asked = talon.subscribe({}, { signal: controller.signal });
    await until("the subscribe", () => opened[0]?.sent.some((f) => f.method === "events.subscribe") === true);
    controller.abort(new Error("gave up"));
    await assert.rejects(asked, /gave up/);
    release();
    await until(
      "the late subscription to be ended",
      () => opened[0]?.sent.some((f) => f.method === "events.unsubscribe") === true && opened[0].live.size === 0,
    );
    assert.deepEqual(opened[0]?.sent.at(-1), {
      type: "req",
      id: 2,
      method: "events.unsubscribe",
      params: { subscriptionId: "sub_late" },
    });
    await talon.close();
  });

  it("holds every stream back while its socket factory waits, then opens one socket for them all", async () => {
    let show: () => void = () => undefined;
    const shown = new Promise<void>((resolve) => (show = resolve));
    const { talon, opened } = scripted({ hold: shown });
    const controller = new AbortController();
    const seen: string[][] = [[], [], []];
    const streams = seen.map(async (into, i) => {
      for await (const event of talon.events({ after: "1", types: ["assistant.delta"], signal: controller.signal })) {
        into.push(`${i}:${event.id}`);
      }
    });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(opened.length, 0, "nothing opens while held");
    show();
    await until("three subscriptions", () => opened[0]?.live.size === 3);
    assert.equal(opened.length, 1);
    const subscribes = opened[0]?.sent.filter((f) => f.method === "events.subscribe").map((f) => f.params);
    assert.deepEqual(subscribes, Array(3).fill({ after: "1", types: ["assistant.delta"] }));
    for (const name of opened[0]?.live ?? []) {
      opened[0]?.receive({ type: "event", subscriptionId: name, event: delta(2, "x") });
    }
    await until("each stream's event", () => seen.every((s) => s.length === 1));
    controller.abort(new Error("done"));
    for (const stream of streams) await assert.rejects(stream, /done/);
    await until("every subscription ended", () => opened[0]?.live.size === 0);
    await talon.close();
  });

  it("with streams on the socket, sends calls over HTTP", async () => {
    const urls: string[] = [];
    const { talon, opened } = scripted({
      fetch: (input) => {
        urls.push(input instanceof Request ? input.url : input instanceof URL ? input.href : input);
        return Promise.resolve(
          new Response(JSON.stringify({ agents: [] }), { headers: { "content-type": "application/json" } }),
        );
      },
    });
    await talon.client.agents.list();
    assert.deepEqual(urls, ["http://gateway.test/ops/v1/agents.list"]);
    assert.equal(opened.length, 0, "a call opens no socket");
    await talon.close();
  });
});
