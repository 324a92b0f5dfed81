// Event streams as subscriptions on one WebSocket (`streams: "websocket"`),
// against both servers: a run's events and the log's arrive as over SSE,
// with no `GET …/events` and one socket; a socket dropped mid-run is
// replaced and every stream resumes after its last event, none twice and
// none missing.
import assert from "node:assert/strict";
import { it } from "node:test";

import type { TalonEvent } from "@talon/sdk";

import { bothServers, collect, until, withBackend, type Backend } from "./backend.js";

/** A client whose streams ride a WebSocket: the sockets it opened, and the SSE requests it made (none, it should). */
function overSocket(b: Backend): {
  talon: ReturnType<Backend["talon"]>;
  sockets: WebSocket[];
  sse: string[];
} {
  const sockets: WebSocket[] = [];
  const sse: string[] = [];
  const talon = b.talon({
    streams: "websocket",
    webSocket: (url) => {
      const socket = new WebSocket(url);
      sockets.push(socket);
      return socket;
    },
    fetch: (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (new URL(url).pathname.endsWith("/events")) sse.push(url);
      return fetch(input, init);
    },
  });
  return { talon, sockets, sse };
}

const summary = (events: readonly TalonEvent[]) => events.map((e) => `${e.id} ${e.type}`);

bothServers("streams on the WebSocket", (kind) => {
  it("carries a run's events and the log's on one socket, as SSE would", () =>
    withBackend(kind, "reply", async (b) => {
      const { talon, sockets, sse } = overSocket(b);
      const stop = new AbortController();
      const ends: TalonEvent[] = [];
      const log = (async () => {
        for await (const event of talon.events({ types: ["run.completed"], signal: stop.signal })) ends.push(event);
      })().catch(() => undefined);
      try {
        const run = await talon.agent("main").run("over the socket");
        const live = await collect(run.events());
        const replayed = await collect((await talon.run(run.id)).events());
        const overSse = await collect((await b.talon().run(run.id)).events());
        assert.equal(overSse.at(-1)?.type, "run.completed");
        assert.deepEqual(summary(live), summary(overSse));
        assert.deepEqual(summary(replayed), summary(overSse));
        await until("the log's run.completed", () => Promise.resolve(ends.some((e) => e.runId === run.id)));
        assert.equal(sockets.length, 1, "one socket for every stream");
        assert.deepEqual(sse, [], "no Server-Sent Events request");
      } finally {
        stop.abort();
        await log;
        await talon.close();
      }
    }));

  it("replaces a dropped socket and resumes every stream after its last event", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const { talon, sockets, sse } = overSocket(b);
      const stop = new AbortController();
      const logged: TalonEvent[] = [];
      const types = ["approval.requested", "approval.resolved", "run.completed"] as const;
      const log = (async () => {
        for await (const event of talon.events({ types: [...types], signal: stop.signal })) logged.push(event);
      })().catch(() => undefined);
      try {
        const run = await talon.agent("main").run("write the note");
        const events: TalonEvent[] = [];
        const stream = run.events()[Symbol.asyncIterator]();
        for (;;) {
          const next = await stream.next();
          assert.ok(!next.done, "the run waits for its approval");
          events.push(next.value);
          if (next.value.type === "approval.requested") break;
        }
        await until("the log's approval.requested", () => Promise.resolve(logged.length === 1));
        const [socket] = sockets;
        assert.ok(socket);
        socket.close();
        const [approval] = await talon.approvals({ runId: run.id, status: "pending" });
        assert.ok(approval, "the approval is pending");
        await approval.approveOnce();
        for (;;) {
          const next = await stream.next();
          if (next.done) break;
          events.push(next.value);
        }
        const whole = await collect((await b.talon().run(run.id)).events());
        assert.equal(whole.at(-1)?.type, "run.completed");
        assert.deepEqual(summary(events), summary(whole), "none twice, none missing");
        await until("the log's run.completed", () => Promise.resolve(logged.some((e) => e.type === "run.completed")));
        assert.deepEqual(
          logged.map((e) => e.type),
          [...types],
        );
        assert.equal(sockets.length, 2, "the dropped socket was replaced once");
        assert.deepEqual(sse, []);
      } finally {
        stop.abort();
        await log;
        await talon.close();
      }
    }));
});
