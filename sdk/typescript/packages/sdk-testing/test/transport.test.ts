// The transports as the gateway serves them: authentication (bearer
// tokens, minted tokens and their scopes, single-use stream tickets),
// routes (405 with Allow, 404, healthz, request ids), SSE streams (filters,
// Last-Event-ID, the live tail, heartbeats), artifact content (ETag,
// Content-Length, ranges) and the WebSocket's frames and subscriptions.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";
import { Talon, TalonError } from "@talon/sdk";

import {
  authenticatedSocket,
  collect,
  normalised,
  post,
  rawOf,
  sseEvents,
  sseText,
  talonOf,
  until,
  withFake,
} from "./helpers.js";

const refusal = (reason: string, message: string) => ({
  error: { code: "unauthenticated", details: { reason }, message, retryable: false },
});

describe("authentication", () => {
  it("refuses a missing, malformed or unknown token with the gateway's challenge", async () => {
    await withFake(async (fake) => {
      assert.deepEqual(await post(fake, "agents.list", {}, null), {
        status: 401,
        headers: { "content-type": "application/json", "www-authenticate": 'Bearer realm="talon"' },
        body: refusal("missing", "no token: send Authorization: Bearer <token> (`talon token create` makes one)"),
      });
      assert.deepEqual(await post(fake, "agents.list", {}, "not-a-talon-token"), {
        status: 401,
        headers: {
          "content-type": "application/json",
          "www-authenticate": 'Bearer realm="talon", error="invalid_token", error_description="the token is malformed"',
        },
        body: refusal("malformed", "the Authorization header is not `Bearer talon_<secret>`"),
      });
      assert.deepEqual(
        (await post(fake, "agents.list", {}, `talon_${"0".repeat(64)}`)).body,
        refusal("unknown", "this token is not known to this gateway"),
      );
      await assert.rejects(
        new Talon({ baseUrl: fake.url, token: "talon_x" }).agent().run("hi"),
        (e: unknown) => e instanceof TalonError && e.code === "unauthenticated",
      );
    });
  });

  it("mints tokens with tokens.create: scoped, expiring, replaced by a retry with the same key", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const viewer = await talon.createToken({ name: "dashboard", preset: "viewer", expiresInMs: 60_000 });
      assert.deepEqual(normalised(viewer), {
        expiresAt: "<time>",
        id: viewer.id,
        name: "dashboard",
        scopes: ["agent.read", "session.read", "task.read", "schedule.read", "artifacts.read"],
        token: "<secret>",
      });
      assert.match(viewer.id, /^tok_[0-9a-f]{16}$/);
      assert.equal((await post(fake, "agents.list", {}, viewer.token)).status, 200);
      assert.deepEqual((await post(fake, "runs.create", { input: "hi" }, viewer.token)).body, {
        error: {
          code: "forbidden",
          details: { scope: "agent.run" },
          message: "this token lacks the `agent.run` scope",
          retryable: false,
        },
      });
      const first = await talon.createToken({
        name: "app",
        preset: "app",
        expiresInMs: 60_000,
        idempotencyKey: "app-1",
      });
      const retry = await talon.createToken({
        name: "app",
        preset: "app",
        expiresInMs: 60_000,
        idempotencyKey: "app-1",
      });
      assert.deepEqual([retry.id === first.id, retry.token === first.token], [true, false]);
      assert.equal((await post(fake, "agents.list", {}, first.token)).status, 401);
      assert.equal((await post(fake, "agents.list", {}, retry.token)).status, 200);
      await assert.rejects(
        talon.createToken({ name: "other", preset: "app", expiresInMs: 60_000, idempotencyKey: "app-1" }),
        (e: unknown) => {
          assert.ok(e instanceof TalonError);
          assert.deepEqual({ code: e.code, details: e.details }, { code: "conflict", details: { tokenId: first.id } });
          return true;
        },
      );
      assert.deepEqual((await post(fake, "tokens.create", { name: "x", expiresInMs: 10 })).body, {
        error: {
          code: "invalid_request",
          details: { field: "scopes" },
          message: "scopes: give scopes, a preset, or both",
          retryable: false,
        },
      });
      const brief = await talon.createToken({ name: "brief", scopes: ["agent.read"], expiresInMs: 1000 });
      await until(
        "the token to expire",
        async () => (await post(fake, "agents.list", {}, brief.token)).status === 401,
        5_000,
      );
      assert.deepEqual(
        (await post(fake, "agents.list", {}, brief.token)).body,
        refusal("expired", "this token has expired"),
      );
    });
  });

  it("opens one stream per ticket, once; a ticket reads the stream it names and nothing else", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const run = await talon.agent().run("hi");
      await run.wait();
      const ticket = await talon.client.tokens.ticket({ stream: { run: { runId: run.id } } });
      assert.deepEqual(normalised(ticket), {
        expiresAt: "<time>",
        scopes: ["session.read"],
        stream: { run: { runId: "<run_1>" } },
        ticket: "<secret>",
      });
      const url = `${fake.url}/v1/runs/${run.id}/events?ticket=${ticket.ticket}`;
      assert.equal(sseEvents(await sseText(await fetch(url))).at(-1)?.type, "run.completed");
      const reused = await rawOf(await fetch(url));
      assert.deepEqual(reused, {
        status: 401,
        headers: {
          "content-type": "application/json",
          "www-authenticate": 'Bearer realm="talon", error="invalid_token", error_description="the token is ticket"',
        },
        body: refusal("ticket", "the stream ticket is unknown, used or expired: mint a new one with tokens.ticket"),
      });
      const viewer = await talon.createToken({ name: "v", preset: "viewer", expiresInMs: 60_000 });
      assert.deepEqual((await post(fake, "tokens.ticket", { scopes: ["agent.run"] }, viewer.token)).body, {
        error: {
          code: "invalid_request",
          details: { field: "scopes" },
          message: "scopes: a ticket reads one stream: it takes session.read and nothing else",
          retryable: false,
        },
      });
      const log = (await post(fake, "tokens.ticket", {})).body as { stream: unknown; ticket: string };
      assert.deepEqual(log.stream, { events: {} });
      const other = await rawOf(await fetch(`${fake.url}/v1/runs/${run.id}/events?ticket=${log.ticket}`));
      assert.deepEqual(
        [other.status, (other.body as { error: { details: unknown } }).error.details],
        [403, { reason: "ticket" }],
      );
    });
  });
});

describe("routes", () => {
  it("answers a wrong verb 405 with Allow, an unknown path 404, and mints its own request ids", async () => {
    await withFake(async (fake) => {
      const auth = { authorization: `Bearer ${fake.token}` };
      assert.deepEqual(await rawOf(await fetch(`${fake.url}/v1/agents.list`, { headers: auth })), {
        status: 405,
        headers: { "content-type": "application/json", allow: "POST" },
        body: { error: { code: "method_not_allowed", message: "this path takes POST only", retryable: false } },
      });
      assert.deepEqual((await rawOf(await fetch(`${fake.url}/v1/events`, { method: "POST", headers: auth }))).headers, {
        "content-type": "application/json",
        allow: "GET",
      });
      assert.deepEqual(await rawOf(await fetch(`${fake.url}/v2/nothing`)), {
        status: 404,
        headers: { "content-type": "application/json" },
        body: {
          error: {
            code: "not_found",
            message:
              "no such route: methods are POST /v1/<method>, described by /v1/openapi.json and readable at /docs",
            retryable: false,
          },
        },
      });
      const health = await fetch(`${fake.url}/healthz`, { headers: { "x-request-id": "mine-1" } });
      assert.deepEqual([health.status, await health.text()], [200, "ok\n"]);
      assert.match(health.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/);
      assert.match((await fetch(`${fake.url}/healthz`)).headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/);
    });
  });
});

describe("event streams", () => {
  it("serve the whole log filtered, Last-Event-ID over after, and the live tail", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Hello from the SDK suite."));
      const talon = talonOf(fake);
      const a = await talon.agent().run({ input: "a", sessionKey: "alpha" });
      await a.wait();
      const auth = { authorization: `Bearer ${fake.token}` };
      const controller = new AbortController();
      const live = fetch(`${fake.url}/v1/events?types=run.created,run.completed&sessionKey=beta`, {
        headers: auth,
        signal: controller.signal,
      });
      const response = await live;
      assert.deepEqual(
        [response.headers.get("content-type"), response.headers.get("cache-control")],
        ["text/event-stream", "no-cache"],
      );
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const b = await talon.agent().run({ input: "b", sessionKey: "beta" });
      let text = "";
      while (!text.includes("event: run.completed")) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      const stream = talon.events({ sessionKey: "beta", types: ["run.completed"] });
      for await (const event of stream) {
        assert.equal(event.runId, b.id);
        break;
      }
      controller.abort();
      assert.deepEqual(normalised(sseEvents(text).map((e) => [e.type, e.runId])), [
        ["run.created", "<run_1>"],
        ["run.completed", "<run_1>"],
      ]);
      // Run a's events are 2 to 8, then 10 (1 is its session's
      // `session.created`, 9 its trajectory's `artifact.created`, made just
      // before its end).
      const resumed = sseEvents(
        await sseText(
          await fetch(`${fake.url}/v1/runs/${a.id}/events?after=1`, { headers: { ...auth, "last-event-id": "8" } }),
        ),
      );
      assert.deepEqual(
        resumed.map((e) => e.id),
        ["10"],
      );
      const bad = [
        [`/v1/runs/${a.id}/events?after=x`, 400, '"x" is not an event id'],
        ["/v1/events?types=nope", 400, 'unknown event type "nope"'],
        [
          "/v1/events?foo=1",
          400,
          "the query: foo: not a parameter of this stream (it takes `after`, `sessionKey`, `agentId`, `types`, `ticket`)",
        ],
        ["/v1/runs/run_nope/events", 404, 'run "run_nope" not found'],
      ] as const;
      for (const [path, status, message] of bad) {
        const answer = await rawOf(await fetch(`${fake.url}${path}`, { headers: auth }));
        assert.deepEqual(
          [answer.status, (answer.body as { error: { message: string } }).error.message],
          [status, message],
          path,
        );
      }
    });
  });

  it("sends a heartbeat comment on a quiet stream", async () => {
    await withFake(
      async (fake) => {
        const controller = new AbortController();
        const response = await fetch(`${fake.url}/v1/events`, {
          headers: { authorization: `Bearer ${fake.token}` },
          signal: controller.signal,
        });
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        const first = await reader.read();
        controller.abort();
        assert.equal(new TextDecoder().decode(first.value), ":\n\n");
      },
      { heartbeatMs: 30 },
    );
  });
});

describe("artifact content", () => {
  it("is served with ETag, Content-Length and ranges, as the gateway serves it", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Made.").artifact("notes.txt", "file", "hello, world"));
      const talon = talonOf(fake);
      const run = await talon.agent().run("make");
      await run.wait();
      const [artifact] = await run.artifacts.list();
      assert.ok(artifact);
      const url = `${fake.url}/v1/artifacts/${artifact.id}/content`;
      const auth = { authorization: `Bearer ${fake.token}` };
      const etag = `"${createHash("sha256").update("hello, world").digest("hex")}"`;
      const whole = await fetch(url, { headers: auth });
      assert.deepEqual(await rawOf(whole), {
        status: 200,
        headers: { "content-type": "text/plain; charset=utf-8", etag, "accept-ranges": "bytes" },
        body: "hello, world",
      });
      const part = await fetch(url, { headers: { ...auth, range: "bytes=-5" } });
      assert.deepEqual(
        [part.status, part.headers.get("content-range"), part.headers.get("content-length"), await part.text()],
        [206, "bytes 7-11/12", "5", "world"],
      );
      const several = await fetch(url, { headers: { ...auth, range: "bytes=0-1,3-4" } });
      assert.deepEqual([several.status, await several.text()], [200, "hello, world"]);
      assert.deepEqual(await rawOf(await fetch(url, { headers: { ...auth, range: "bytes=99-" } })), {
        status: 416,
        headers: { "content-type": "application/json", "content-range": "bytes */12" },
        body: {
          error: {
            code: "invalid_request",
            details: { size: 12 },
            message: "the range is outside the content (12 bytes)",
            retryable: false,
          },
        },
      });
      assert.equal((await fetch(url)).status, 401);
      assert.equal((await fetch(`${fake.url}/v1/artifacts/art_nope/content`, { headers: auth })).status, 404);
    });
  });
});

/** A raw WebSocket to the fake, authenticated by its first frame; its frames as they come. */
async function socket(fake: {
  url: string;
  token: string;
}): Promise<{ send(frame: string | Uint8Array): void; next(): Promise<unknown>; close(): void }> {
  const ws = await authenticatedSocket(fake);
  const frames: unknown[] = [];
  const waiting: ((frame: unknown) => void)[] = [];
  ws.addEventListener("message", (message) => {
    const frame = JSON.parse(String(message.data)) as unknown;
    const take = waiting.shift();
    if (take) take(frame);
    else frames.push(frame);
  });
  return {
    send: (frame) => {
      ws.send(frame);
    },
    next: () => (frames.length > 0 ? Promise.resolve(frames.shift()) : new Promise((resolve) => waiting.push(resolve))),
    close: () => {
      ws.close();
    },
  };
}

describe("the WebSocket", () => {
  it("answers calls and refuses what is not a request, keeping the connection", async () => {
    await withFake(async (fake) => {
      const ws = await socket(fake);
      try {
        const request = 'a request is {"type":"req","id":..,"method":..,"params":{..}}';
        ws.send("not json");
        assert.deepEqual(await ws.next(), {
          error: { code: "invalid_request", message: normalisedMessage(), retryable: false },
          id: null,
          ok: false,
          type: "res",
        });
        ws.send(JSON.stringify({ type: "req", id: "a" }));
        assert.deepEqual(await ws.next(), {
          error: { code: "invalid_request", message: request, retryable: false },
          id: "a",
          ok: false,
          type: "res",
        });
        ws.send(new Uint8Array([1, 2, 3]));
        assert.deepEqual(await ws.next(), {
          error: { code: "invalid_request", message: "binary frames are not requests", retryable: false },
          id: null,
          ok: false,
          type: "res",
        });
        ws.send(JSON.stringify({ type: "req", id: 1, method: "agents.get", params: { agentId: "main" } }));
        assert.deepEqual(await ws.next(), {
          id: 1,
          ok: true,
          result: { description: "The default agent", id: "main", source: "config" },
          type: "res",
        });
        ws.send(JSON.stringify({ type: "req", id: 2, method: "runs.get", params: [] }));
        assert.deepEqual(await ws.next(), {
          error: { code: "invalid_request", message: "runs.get: params must be a JSON object", retryable: false },
          id: 2,
          ok: false,
          type: "res",
        });
      } finally {
        ws.close();
      }
    });
  });

  it("subscribes: the answer first, then event frames; unsubscribes; at most 16 at once", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const run = await talon.agent().run("hi");
      await run.wait();
      const ws = await socket(fake);
      try {
        ws.send(
          JSON.stringify({
            type: "req",
            id: 1,
            method: "events.subscribe",
            params: { after: "0", types: ["run.created"] },
          }),
        );
        assert.deepEqual(await ws.next(), { id: 1, ok: true, result: { subscriptionId: "sub_1" }, type: "res" });
        const frame = (await ws.next()) as {
          type: string;
          subscriptionId: string;
          event: { id: string; type: string };
        };
        assert.deepEqual(
          [frame.type, frame.subscriptionId, frame.event.id, frame.event.type],
          ["event", "sub_1", "2", "run.created"],
        );
        ws.send(
          JSON.stringify({ type: "req", id: 2, method: "events.unsubscribe", params: { subscriptionId: "sub_1" } }),
        );
        assert.deepEqual(await ws.next(), { id: 2, ok: true, result: {}, type: "res" });
        ws.send(
          JSON.stringify({ type: "req", id: 3, method: "events.unsubscribe", params: { subscriptionId: "sub_1" } }),
        );
        assert.deepEqual(await ws.next(), {
          error: { code: "not_found", message: 'no subscription "sub_1"', retryable: false },
          id: 3,
          ok: false,
          type: "res",
        });
        for (let i = 0; i < 16; i++)
          ws.send(
            JSON.stringify({ type: "req", id: 10 + i, method: "events.subscribe", params: { types: ["git.pr"] } }),
          );
        for (let i = 0; i < 16; i++) assert.equal(((await ws.next()) as { ok: boolean }).ok, true);
        ws.send(JSON.stringify({ type: "req", id: 99, method: "events.subscribe", params: {} }));
        assert.deepEqual(await ws.next(), {
          error: { code: "rate_limited", message: "at most 16 subscriptions per connection", retryable: true },
          id: 99,
          ok: false,
          type: "res",
        });
      } finally {
        ws.close();
      }
      const events = await collect(run.events());
      assert.deepEqual(
        events.map((e) => e.type),
        ["run.created", "run.started", "assistant.delta", "assistant.message", "run.completed"],
      );
    });
  });
});

/** JSON.parse's wording of "not json", prefixed as the transport says it. */
function normalisedMessage(): string {
  try {
    JSON.parse("not json");
    return "";
  } catch (error) {
    return `not JSON: ${(error as Error).message}`;
  }
}
