// Each fault the fake injects, and what a client of @talon/sdk makes of
// it: a stream dropped after n events (the SDK's EventStream reopens from
// the last id it delivered: no gap, no duplicate; a WebSocket subscription
// resumes after its last id), an expired cursor (410, never silence),
// rate limits and unavailability (retried after `retryAfterMs`), slow
// answers; and `calls()`, which records every call.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";
import { TalonError, type TalonEvent } from "@talon/sdk";

import { collect, normalised, post, rawOf, sseEvents, sseText, talonOf, withFake } from "./helpers.js";

const LONG = "A reply long enough to be streamed in many small deltas, one after another.";

/** Event ids, checked to be increasing without a repeat. */
function ids(events: TalonEvent[]): number[] {
  const out = events.map((e) => Number(e.id));
  assert.deepEqual(
    out,
    [...new Set(out)].sort((a, b) => a - b),
    "ids increase, none repeated",
  );
  return out;
}

describe("dropStream", () => {
  it("cuts the next SSE stream after n events, with no terminal event and no error frame", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const run = await talon.agent().run("hi");
      await run.wait();
      fake.inject({ kind: "dropStream", afterEvents: 3 });
      const cut = await sseText(
        await fetch(`${fake.url}/v1/runs/${run.id}/events`, { headers: { authorization: `Bearer ${fake.token}` } }),
      );
      assert.deepEqual(
        sseEvents(cut).map((e) => [e.id, e.type]),
        // Event 1 is the run's session's `session.created`.
        [
          ["2", "run.created"],
          ["3", "run.started"],
          ["4", "assistant.delta"],
        ],
      );
      assert.ok(!cut.includes("event: error"));
      // Used up: the next stream is whole.
      const whole = sseEvents(
        await sseText(
          await fetch(`${fake.url}/v1/runs/${run.id}/events`, { headers: { authorization: `Bearer ${fake.token}` } }),
        ),
      );
      assert.equal(whole.at(-1)?.type, "run.completed");
    });
  });

  it("is resumed by the SDK's EventStream from the last id delivered: no gap, no duplicate", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(
        FakeRun.reply(LONG)
          .delay(20)
          .event({ type: "thinking.delta", data: { text: "more" } }),
      );
      const talon = talonOf(fake, { initialBackoffMs: 5 });
      const run = await talon.agent().run("stream it");
      fake.inject({ kind: "dropStream", afterEvents: 2 });
      fake.inject({ kind: "dropStream", afterEvents: 4 });
      const events = await collect(run.events());
      const seen = ids(events);
      const all = (await talon.client.runs.events(run.id)).events;
      assert.deepEqual(
        seen,
        all.map((e) => Number(e.id)),
      );
      assert.deepEqual(
        events.map((e) => e.type),
        all.map((e) => e.type),
      );
      assert.equal(events.at(-1)?.type, "run.completed");
    });
  });

  it("is resumed with a fresh ticket per connection when streams authenticate with tickets", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake, { streamAuth: "ticket", initialBackoffMs: 5 });
      const run = await talon.agent().run("ticketed");
      fake.inject({ kind: "dropStream", afterEvents: 1 });
      const events = await collect(run.events());
      assert.equal(events.at(-1)?.type, "run.completed");
      ids(events);
      assert.deepEqual(
        fake.calls().map((c) => [c.method, c.params]),
        [
          [
            "runs.create",
            {
              input: "ticketed",
              agentId: "main",
              idempotencyKey:
                fake.calls()[0]?.params && (fake.calls()[0]?.params as { idempotencyKey: string }).idempotencyKey,
            },
          ],
          ["tokens.ticket", { scopes: ["session.read"], stream: { run: { runId: run.id } } }],
          ["tokens.ticket", { scopes: ["session.read"], stream: { run: { runId: run.id } } }],
        ],
      );
    });
  });

  it("drops a WebSocket subscription's whole connection; it resumes after its last id", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake, { transport: "websocket" });
      try {
        const run = await talon.agent().run("over the socket");
        await run.wait();
        fake.inject({ kind: "dropStream", afterEvents: 2 });
        const subscription = await talon.subscribe({ after: "0" });
        const first: TalonEvent[] = [];
        await assert.rejects(
          (async () => {
            for await (const event of subscription) first.push(event);
          })(),
          (e: unknown) => e instanceof TalonError && e.code === "unavailable",
        );
        assert.deepEqual(
          first.map((e) => e.id),
          ["1", "2"],
        );
        const rest = await talon.subscribe({ after: first.at(-1)?.id ?? "0", types: ["run.completed"] });
        for await (const event of rest) {
          assert.equal(event.type, "run.completed");
          break;
        }
      } finally {
        await talon.close();
      }
    });
  });
});

describe("expireCursor", () => {
  const expired = (cursor: string) => ({
    error: {
      code: "cursor_expired",
      details: { cursor, oldestId: String(Number(cursor) + 1) },
      message: `cursor ${cursor} has expired; the oldest event kept is ${Number(cursor) + 1}`,
      retryable: false,
    },
  });

  it("answers the next stream made with a cursor 410, worded as the gateway does", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const run = await talon.agent().run("hi");
      await run.wait();
      fake.inject({ kind: "expireCursor" });
      // A stream without a cursor does not use it up.
      const whole = await collect(run.events());
      assert.equal(whole.at(-1)?.type, "run.completed");
      const answer = await rawOf(
        await fetch(`${fake.url}/v1/runs/${run.id}/events?after=1`, {
          headers: { authorization: `Bearer ${fake.token}` },
        }),
      );
      assert.deepEqual(answer, { status: 410, headers: { "content-type": "application/json" }, body: expired("1") });
      fake.inject({ kind: "expireCursor" });
      await assert.rejects(collect(run.events({ after: "3" })), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, status: e.status, details: e.details },
          { code: "cursor_expired", status: 410, details: { cursor: "3", oldestId: "4" } },
        );
        return true;
      });
    });
  });

  it("expires runs.events and events.subscribe made with a cursor", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake, { transport: "websocket" });
      try {
        const run = await talon.agent().run("hi");
        await run.wait();
        fake.inject({ kind: "expireCursor" });
        assert.deepEqual((await post(fake, "runs.events", { runId: run.id, after: "2" })).body, expired("2"));
        fake.inject({ kind: "expireCursor" });
        await assert.rejects(
          talon.subscribe({ after: "5" }),
          (e: unknown) => e instanceof TalonError && e.code === "cursor_expired",
        );
      } finally {
        await talon.close();
      }
    });
  });
});

describe("call faults", () => {
  it("rateLimited answers 429 with retryAfterMs and Retry-After, as many times as asked", async () => {
    await withFake(async (fake) => {
      fake.inject({ kind: "rateLimited", method: "agents.list", times: 2, retryAfterMs: 1500 });
      const limited = {
        status: 429,
        headers: { "content-type": "application/json", "retry-after": "2" },
        body: {
          error: {
            code: "rate_limited",
            message: "this token is over its rate (injected by the fake gateway)",
            retryAfterMs: 1500,
            retryable: true,
          },
        },
      };
      assert.deepEqual(await post(fake, "agents.list"), limited);
      assert.deepEqual(await post(fake, "agents.list"), limited);
      assert.equal((await post(fake, "agents.list")).status, 200);
    });
  });

  it("rateLimited and unavailable are retried by the SDK after the gateway's delay", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake, { initialBackoffMs: 5 });
      fake.inject({ kind: "rateLimited", method: "runs.create", retryAfterMs: 30 });
      fake.inject({ kind: "unavailable", method: "runs.list", times: 2 });
      const started = Date.now();
      const run = await talon.agent().run("retried");
      assert.ok(Date.now() - started >= 30);
      const listed = await talon.client.runs.list();
      assert.deepEqual(
        listed.runs.map((r) => r.id),
        [run.id],
      );
      const calls = fake.calls().map((c) => c.method);
      assert.deepEqual(calls, ["runs.create", "runs.create", "runs.list", "runs.list", "runs.list"]);
      // A keyed write retried is the same call: one run.
      const keys = fake
        .calls()
        .filter((c) => c.method === "runs.create")
        .map((c) => (c.params as { idempotencyKey: string }).idempotencyKey);
      assert.equal(new Set(keys).size, 1);
      fake.inject({ kind: "unavailable", method: "models.list" });
      assert.deepEqual(normalised(await post(fake, "models.list")), {
        status: 503,
        headers: { "content-type": "application/json" },
        body: {
          error: {
            code: "unavailable",
            message: "the gateway is unavailable (injected by the fake gateway)",
            retryable: true,
          },
        },
      });
    });
  });

  it("slow answers the next call of its method late, and only that one", async () => {
    await withFake(async (fake) => {
      fake.inject({ kind: "slow", method: "models.list", delayMs: 80 });
      const started = Date.now();
      const [slow, quick] = await Promise.all([
        post(fake, "models.list").then((r) => [r.status, Date.now() - started] as const),
        post(fake, "agents.list").then((r) => [r.status, Date.now() - started] as const),
      ]);
      assert.equal(slow[0], 200);
      assert.ok(slow[1] >= 80, `slow took ${slow[1]} ms`);
      assert.ok(quick[1] < 80, `quick took ${quick[1]} ms`);
      const again = Date.now();
      await post(fake, "models.list");
      assert.ok(Date.now() - again < 80);
    });
  });
});

describe("calls()", () => {
  it("records every call in order, with its params and transport, faulted and refused ones too", async () => {
    await withFake(async (fake) => {
      fake.inject({ kind: "unavailable", method: "models.status" });
      await post(fake, "models.status");
      await post(fake, "agents.list", "");
      await post(fake, "runs.get", { runId: "run_nope" });
      await post(fake, "no.such", { a: 1 });
      await post(fake, "agents.list", "{not json");
      await post(fake, "agents.list", {}, "wrong-token");
      const ws = talonOf(fake, { transport: "websocket" });
      try {
        await ws.client.agents.get("main");
      } finally {
        await ws.close();
      }
      // Not recorded: a body that is not JSON and a caller not authenticated (the gateway never reads their params).
      assert.deepEqual(fake.calls(), [
        { method: "models.status", params: {}, transport: "http" },
        { method: "agents.list", params: {}, transport: "http" },
        { method: "runs.get", params: { runId: "run_nope" }, transport: "http" },
        { method: "no.such", params: { a: 1 }, transport: "http" },
        { method: "agents.get", params: { agentId: "main" }, transport: "websocket" },
      ]);
    });
  });
});
