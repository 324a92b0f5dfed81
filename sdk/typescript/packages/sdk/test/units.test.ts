// The parts that need no gateway: the validator, the SSE decoder, the
// error mapping, the client's call rules.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { GatewayClient, HttpCaller, METHODS, Talon, TalonError, frames, validate } from "@talon/sdk";

function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

/** The URL a `fetch` was called with. */
function urlOf(input: RequestInfo | URL): string {
  return input instanceof Request ? input.url : String(input);
}

/** The JSON a `fetch` was sent (the client sends its params as text). */
function sentJson(init: RequestInit | undefined): unknown {
  const sent = init?.body;
  assert.ok(typeof sent === "string", "a text body");
  return JSON.parse(sent);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("validate", () => {
  const event = {
    version: 1,
    id: "7",
    ts: 1,
    type: "tool.call.started",
    runId: "run_1",
    data: { callId: "c1", name: "write", arguments: {}, replaySafe: false },
  };

  it("accepts an event of its type and says where one fails", () => {
    assert.equal(validate("TalonEvent", event), undefined);
    assert.deepEqual(validate("TalonEvent", { ...event, data: { name: "write" } }), {
      path: "/data/callId",
      message: "missing",
    });
    assert.deepEqual(validate("TalonEvent", { ...event, ts: "soon" }), {
      path: "/ts",
      message: "expected integer, got string",
    });
  });

  it("lets through what a newer gateway may send", () => {
    assert.equal(validate("TalonEvent", { ...event, type: "future.kind", data: { x: 1 } }), undefined);
    assert.equal(validate("TalonEvent", { ...event, newField: true }), undefined);
    assert.equal(validate("RunResult", { runId: "r", status: "paused_for_lunch" }), undefined);
  });

  it("refuses nesting deeper than its bound instead of overflowing", () => {
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { arguments: deep };
    const issue = validate("TalonEvent", { ...event, data: { ...event.data, arguments: deep } });
    assert.equal(issue, undefined, "arguments are free-form: not descended into");
    let nested: unknown = [];
    for (let i = 0; i < 100_000; i++) nested = [nested];
    assert.deepEqual(validate("RunsEventsResult", { done: false, events: nested }), {
      path: "/events/0",
      message: "expected object, got array",
    });
  });

  it("closes params only when asked", () => {
    const params = { runId: "r", extra: 1 };
    assert.equal(validate("RunRef", params), undefined);
    assert.deepEqual(validate("RunRef", params, { closed: true }), { path: "/extra", message: "not allowed" });
  });
});

describe("frames", () => {
  it("decodes frames cut anywhere, with CRLF, comments and multi-line data", async () => {
    const text = ':hb\r\n\r\nid: 1\r\nevent: run.created\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: 2\ndata: x\n\n';
    const cuts = Array.from(text); // one chunk per character
    const got = await collect(frames(body(...cuts)));
    assert.deepEqual(got, [
      { id: "1", event: "run.created", data: '{"a":\n1}' },
      { id: "2", data: "x" },
    ]);
  });

  it("decodes multi-byte characters split across chunks", async () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const b of bytes) controller.enqueue(new Uint8Array([b]));
        controller.close();
      },
    });
    assert.deepEqual(await collect(frames(stream)), [{ data: "héllo ✓" }]);
  });
});

describe("the call path", () => {
  it("serves every method of the table: none is marked unsupported", () => {
    assert.deepEqual(
      Object.entries(METHODS)
        .filter(([, m]) => (m.stability as string) === "unsupported")
        .map(([name]) => name),
      [],
    );
  });

  it("says an unreachable gateway is likely CORS from a page of another origin", async () => {
    const broken = new HttpCaller({
      baseUrl: "http://127.0.0.1:9",
      maxRetries: 0,
      fetch: () => Promise.reject(new TypeError("Failed to fetch")),
    });
    const client = new GatewayClient(broken);
    const messageOf = async () => {
      try {
        await client.agents.list();
      } catch (e) {
        assert.ok(e instanceof TalonError && e.code === "unavailable");
        return e.message;
      }
      assert.fail("the call should fail");
    };
    assert.equal(
      await messageOf(),
      "the gateway at http://127.0.0.1:9 could not be reached: TypeError: Failed to fetch",
    );
    const global = globalThis as { location?: unknown };
    global.location = { origin: "https://app.example.com" };
    try {
      assert.equal(
        await messageOf(),
        "the gateway at http://127.0.0.1:9 could not be reached: TypeError: Failed to fetch. " +
          "From this page (https://app.example.com) the likely cause is the browser's CORS check: " +
          "the gateway answers pages of another origin only when it is listed in gateway.security.allowedOrigins",
      );
    } finally {
      delete global.location;
    }
  });

  it("a list is its first page awaited, and every item of every page iterated", async () => {
    const agents = ["a", "b", "c", "d", "e"].map((id) => ({ id, source: "config" }));
    const asked: unknown[] = [];
    const caller = new HttpCaller({
      baseUrl: "http://127.0.0.1:9",
      fetch: (_url, init) => {
        const params = sentJson(init) as { cursor?: string; limit?: number };
        asked.push(params);
        const from = params.cursor === undefined ? 0 : agents.findIndex((a) => a.id === params.cursor) + 1;
        const page = agents.slice(from, from + (params.limit ?? 100));
        const more = from + page.length < agents.length;
        return Promise.resolve(
          Response.json({ agents: page, ...(more ? { nextCursor: page[page.length - 1]?.id } : {}) }),
        );
      },
    });
    const client = new GatewayClient(caller);
    assert.deepEqual(await client.agents.list({ limit: 2 }), { agents: agents.slice(0, 2), nextCursor: "b" });
    assert.deepEqual(asked, [{ limit: 2 }]);
    asked.length = 0;
    const seen: string[] = [];
    for await (const agent of client.agents.list({ limit: 2 })) seen.push(agent.id);
    assert.deepEqual(seen, ["a", "b", "c", "d", "e"]);
    assert.deepEqual(asked, [{ limit: 2 }, { limit: 2, cursor: "b" }, { limit: 2, cursor: "d" }]);
    // Nothing is asked until it is awaited or iterated; a break stops it.
    asked.length = 0;
    const lazy = client.agents.list({ limit: 2 });
    assert.deepEqual(asked, []);
    for await (const agent of lazy) {
      assert.equal(agent.id, "a");
      break;
    }
    assert.deepEqual(asked, [{ limit: 2 }]);
  });

  it("maps a foreign body by its status and honours Retry-After on a read", async () => {
    const seen: { url: string; body: unknown }[] = [];
    let calls = 0;
    const caller = new HttpCaller({
      baseUrl: "http://127.0.0.1:9",
      initialBackoffMs: 1,
      fetch: (url, init) => {
        calls += 1;
        seen.push({ url: urlOf(url), body: sentJson(init) });
        if (calls === 1) {
          return Promise.resolve(new Response("<html>busy</html>", { status: 503, headers: { "retry-after": "0" } }));
        }
        return Promise.resolve(Response.json({ agents: [] }));
      },
    });
    const client = new GatewayClient(caller);
    assert.deepEqual(await client.agents.list(), { agents: [] });
    assert.deepEqual(seen, [
      { url: "http://127.0.0.1:9/v1/agents.list", body: {} },
      { url: "http://127.0.0.1:9/v1/agents.list", body: {} },
    ]);
  });

  it("gives a keyed write a key and retries it with the same key; sends an unkeyed write once", async () => {
    const keys: unknown[] = [];
    const caller = new HttpCaller({
      baseUrl: "http://127.0.0.1:9",
      initialBackoffMs: 1,
      fetch: (_url, init) => {
        const sent = sentJson(init) as { idempotencyKey?: string };
        keys.push(sent.idempotencyKey);
        return Promise.resolve(
          Response.json(
            { error: { code: "unavailable", message: "draining", retryable: true, retryAfterMs: 1 } },
            { status: 503, headers: { "x-request-id": `req_${keys.length}` } },
          ),
        );
      },
    });
    const client = new GatewayClient(caller);
    await assert.rejects(client.runs.create({ input: "hi" }), (e: unknown) => {
      assert.ok(e instanceof TalonError);
      assert.deepEqual(
        {
          code: e.code,
          retryable: e.retryable,
          retryAfterMs: e.retryAfterMs,
          status: e.status,
          method: e.method,
          requestId: e.requestId,
        },
        {
          code: "unavailable",
          retryable: true,
          retryAfterMs: 1,
          status: 503,
          method: "runs.create",
          requestId: "req_3",
        },
      );
      return true;
    });
    assert.equal(keys.length, 3);
    assert.match(String(keys[0]), /^sdk-[0-9a-f]{32}$/);
    assert.deepEqual(new Set(keys).size, 1);
    keys.length = 0;
    await assert.rejects(client.events.unsubscribe({ subscriptionId: "s" }));
    assert.equal(keys.length, 3, "events.unsubscribe is a read: retried");
  });

  it("refuses an answer that does not follow the protocol", async () => {
    const caller = new HttpCaller({
      baseUrl: "http://127.0.0.1:9",
      fetch: () => Promise.resolve(Response.json({ agents: "none" })),
    });
    await assert.rejects(new GatewayClient(caller).agents.list(), (e: unknown) => {
      assert.ok(e instanceof TalonError);
      assert.equal(e.code, "internal");
      assert.match(e.message, /agents\.list does not follow the protocol at \/agents: expected array, got string/);
      return true;
    });
  });

  it("rejects with the caller's abort reason, and a deadline as timeout", async () => {
    // Like fetch: rejects with the signal's reason, at once when it is already aborted.
    const hang: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) => {
        if (init?.signal?.aborted) {
          reject(init.signal.reason);
          return;
        }
        init?.signal?.addEventListener("abort", () => {
          reject(init.signal?.reason);
        });
      });
    const client = new GatewayClient(new HttpCaller({ baseUrl: "http://127.0.0.1:9", fetch: hang }));
    const controller = new AbortController();
    const pending = client.agents.list({}, { signal: controller.signal });
    controller.abort(new Error("user left"));
    await assert.rejects(pending, /user left/);
    await assert.rejects(
      client.agents.list({}, { timeoutMs: 20 }),
      (e: unknown) => e instanceof TalonError && e.code === "timeout",
    );
  });
});

describe("event streams", () => {
  const frame = (id: number, type: string, data: object) =>
    `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ version: 1, id: String(id), ts: 1, type, runId: "run_1", data })}\n\n`;
  const created = (id: number) => frame(id, "run.created", { input: "hi" });

  it("reopens a stream cut after delivering at once, from its cursor, with no duplicate and no gap", async () => {
    const afters: (string | null)[] = [];
    let opened = 0;
    const fetcher: typeof fetch = (url) => {
      opened += 1;
      afters.push(new URL(urlOf(url)).searchParams.get("after"));
      const encoder = new TextEncoder();
      if (opened === 1) {
        // Two events, then the connection breaks mid-body.
        let pulls = 0;
        return Promise.resolve(
          new Response(
            new ReadableStream({
              pull(controller) {
                pulls += 1;
                if (pulls === 1) controller.enqueue(encoder.encode(created(1) + created(2)));
                else controller.error(new TypeError("terminated"));
              },
            }),
          ),
        );
      }
      // The gateway replays from the cursor; an old event is sent again to check it is skipped.
      return Promise.resolve(
        new Response(
          created(2) +
            created(3) +
            frame(4, "run.completed", {
              turns: 1,
              toolCalls: 0,
              durationMs: 1,
              usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
            }),
        ),
      );
    };
    const talon = new Talon({ baseUrl: "http://127.0.0.1:9", fetch: fetcher });
    const ids: string[] = [];
    // No retries allowed: a cut after delivering is not a failure (it would
    // end the stream here), and is reopened at once, without a backoff.
    for await (const event of talon.events({ maxRetries: 0 })) {
      ids.push(event.id);
      if (event.type === "run.completed") break;
    }
    assert.deepEqual(ids, ["1", "2", "3", "4"]);
    assert.deepEqual(afters, [null, "2"]);
  });

  it("hands over no event once the caller aborted, even one already read", async () => {
    // Three events in one chunk: all three are read before the first is handed over.
    const fetcher: typeof fetch = () => Promise.resolve(new Response(created(1) + created(2) + created(3)));
    const talon = new Talon({ baseUrl: "http://127.0.0.1:9", fetch: fetcher });
    const controller = new AbortController();
    const ids: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of talon.events({ signal: controller.signal })) {
          ids.push(event.id);
          controller.abort(new Error("the app stopped"));
        }
      })(),
      { message: "the app stopped" },
    );
    assert.deepEqual(ids, ["1"]);
  });
});
