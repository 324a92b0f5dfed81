// Faults only the fake gateway can inject, and how the SDK rides them: a
// lost create retried with its key, rate limits waited out as asked, a
// gateway that stays unavailable, a slow answer, an expired cursor, a
// stream dropped mid-run, a dropped WebSocket.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Talon, TalonError, type TalonEvent } from "@talon/sdk";
import { FakeGateway, FakeRun } from "@talon/sdk-testing";

import { collect } from "./backend.js";

async function withFake(test: (fake: FakeGateway, talon: Talon) => Promise<void>): Promise<void> {
  const fake = await FakeGateway.start();
  try {
    await test(fake, new Talon({ baseUrl: fake.url, token: fake.token }));
  } finally {
    await fake.close();
  }
}

const paramsOf = (fake: FakeGateway, method: string) =>
  fake
    .calls()
    .filter((c) => c.method === method)
    .map((c) => c.params as Record<string, unknown>);

describe("faults (fake only)", () => {
  it("a lost create is retried with the same idempotency key", () =>
    withFake(async (fake, talon) => {
      fake.inject({ kind: "unavailable", method: "runs.create", times: 1 });
      const run = await talon.agent("main").run("hello");
      const creates = paramsOf(fake, "runs.create");
      assert.equal(creates.length, 2);
      assert.match(String(creates[0]?.idempotencyKey), /^sdk-[0-9a-f]{32}$/);
      assert.equal(creates[1]?.idempotencyKey, creates[0]?.idempotencyKey);
      assert.equal((await run.wait()).output?.text, "ok");
    }));

  it("rate limits are waited out as the gateway asks", () =>
    withFake(async (fake, talon) => {
      const run = await talon.agent("main").run("hello");
      fake.inject({ kind: "rateLimited", method: "runs.get", times: 2, retryAfterMs: 60 });
      const started = performance.now();
      assert.equal((await run.refresh()).id, run.id);
      assert.ok(performance.now() - started >= 120, "waited twice the 60 ms asked");
      assert.equal(paramsOf(fake, "runs.get").length, 3);
      // A client that never retries sees the error and the delay asked.
      fake.inject({ kind: "rateLimited", method: "agents.list", times: 1, retryAfterMs: 1500 });
      const once = new Talon({ baseUrl: fake.url, token: fake.token, maxRetries: 0 });
      await assert.rejects(once.client.agents.list(), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, retryable: e.retryable, retryAfterMs: e.retryAfterMs, status: e.status },
          { code: "rate_limited", retryable: true, retryAfterMs: 1500, status: 429 },
        );
        return true;
      });
    }));

  it("a gateway that stays unavailable surfaces after the policy's tries", () =>
    withFake(async (fake, talon) => {
      fake.inject({ kind: "unavailable", method: "agents.list", times: 10 });
      await assert.rejects(
        talon.client.agents.list(),
        (e: unknown) => e instanceof TalonError && e.code === "unavailable" && e.retryable,
      );
      assert.equal(paramsOf(fake, "agents.list").length, 3, "one call and two retries");
    }));

  it("a slow answer is waited for", () =>
    withFake(async (fake, talon) => {
      const run = await talon.agent("main").run("hello");
      fake.inject({ kind: "slow", method: "runs.wait", delayMs: 300 });
      const started = performance.now();
      assert.equal((await run.wait()).output?.text, "ok");
      assert.ok(performance.now() - started >= 300);
    }));

  it("a call slower than its deadline is a timeout", () =>
    withFake(async (fake, talon) => {
      fake.inject({ kind: "slow", method: "agents.list", delayMs: 2_000 });
      await assert.rejects(
        talon.client.agents.list({}, { timeoutMs: 100, maxRetries: 0 }),
        (e: unknown) => e instanceof TalonError && e.code === "timeout",
      );
    }));

  it("an expired cursor is an error, never silence", () =>
    withFake(async (fake, talon) => {
      const run = await talon.agent("main").run("hello");
      await run.wait();
      fake.inject({ kind: "expireCursor" });
      await assert.rejects(collect(run.events({ after: "1" })), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, retryable: e.retryable, details: e.details },
          {
            code: "cursor_expired",
            retryable: false,
            details: { cursor: "1", oldestId: "2" },
          },
        );
        return true;
      });
    }));

  it("a stream dropped mid-run resumes with no gap and no duplicate", () =>
    withFake(async (fake, talon) => {
      fake.scriptRun(
        FakeRun.reply("slowly")
          .delay(40)
          .event({ type: "assistant.delta", data: { text: "slow" } } as never)
          .delay(40),
      );
      const run = await talon.agent("main").run("hello");
      fake.inject({ kind: "dropStream", afterEvents: 2 });
      const seen: TalonEvent[] = await collect(run.events());
      const stored = await talon.client.runs.events(run.id, {});
      assert.deepEqual(
        seen.map((e) => e.id),
        stored.events.map((e) => e.id),
      );
      assert.equal(seen.at(-1)?.type, "run.completed");
    }));

  it("a dropped WebSocket ends its subscriptions and the next call reconnects", () =>
    withFake(async (fake, http) => {
      await (await http.agent("main").run("hello")).wait();
      const talon = new Talon({ baseUrl: fake.url, token: fake.token, transport: "websocket" });
      try {
        fake.inject({ kind: "dropStream", afterEvents: 1 });
        const subscription = await talon.subscribe();
        const seen: TalonEvent[] = [];
        await assert.rejects(
          (async () => {
            for await (const event of subscription) seen.push(event);
          })(),
          (e: unknown) => e instanceof TalonError && e.code === "unavailable" && e.retryable,
        );
        assert.equal(seen.length, 1);
        // The next call opens a new connection; a new subscription resumes after the last id seen.
        assert.ok((await talon.client.agents.list()).agents.length > 0);
        const [last] = seen;
        assert.ok(last);
        const resumed = await talon.subscribe({ after: last.id });
        for await (const event of resumed) {
          assert.equal(BigInt(event.id), BigInt(last.id) + 1n);
          break;
        }
      } finally {
        await talon.close();
      }
    }));
});
