// Hostile input gets a clear error with a stable code, never a crash, and
// the fake keeps serving: huge bodies, deep nesting, invalid JSON, wrong
// types, bad WebSocket frames (and one over the limit), unknown and
// malformed run ids, floods of concurrent connections and streams, and 50
// concurrent answers to one approval (exactly one wins).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";

import { authenticatedSocket, normalised, post, rawOf, talonOf, until, withFake } from "./helpers.js";

/** The error's code and message of a raw answer. */
function refusal(answer: { status: number; body: unknown }): [number, string, string] {
  const error = (answer.body as { error: { code: string; message: string } }).error;
  return [answer.status, error.code, error.message];
}

describe("hostile input", () => {
  it("refuses huge bodies, deep nesting, invalid JSON and wrong types, and goes on serving", async () => {
    await withFake(async (fake) => {
      const huge = JSON.stringify({ input: "x".repeat(5 << 20) });
      assert.deepEqual(refusal(await post(fake, "runs.create", huge)), [
        400,
        "invalid_request",
        "the body exceeds 4194304 bytes (or was cut off)",
      ]);
      assert.deepEqual(refusal(await post(fake, "runs.create", "[".repeat(200_000))), [
        400,
        "invalid_request",
        "the body is not JSON: nested 128 deep at byte 127",
      ]);
      const deep = `{"input":"x","tools":[{"name":"a","parameters":${'{"a":'.repeat(150)}1${"}".repeat(150)}}]}`;
      assert.deepEqual(refusal(await post(fake, "runs.create", deep)).slice(0, 2), [400, "invalid_request"]);
      assert.equal(
        refusal(await post(fake, "runs.create", "{nope"))
          .slice(0, 2)
          .join(),
        "400,invalid_request",
      );
      assert.deepEqual(await post(fake, "runs.create", { input: [{ role: "user", content: 5 }] }), {
        status: 400,
        headers: { "content-type": "application/json" },
        body: {
          error: {
            code: "invalid_request",
            details: { field: "input[0].content" },
            message: "runs.create: input[0].content: expected string, got integer",
            retryable: false,
          },
        },
      });
      assert.deepEqual((await post(fake, "runs.get", { runId: "r".repeat(200) })).body, {
        error: {
          code: "invalid_request",
          details: { field: "runId" },
          message: "runs.get: runId: 200 characters long; the cap is 128",
          retryable: false,
        },
      });
      assert.deepEqual(refusal(await post(fake, "runs.create", { input: "x".repeat(2 << 20) })), [
        400,
        "invalid_request",
        "input: 2097152 bytes, more than the 1048576 a run takes",
      ]);
      assert.deepEqual(refusal(await post(fake, "runs.create", { input: [] })), [
        400,
        "invalid_request",
        "input: the input has no message",
      ]);
      assert.deepEqual(
        refusal(
          await post(fake, "runs.create", {
            input: "x",
            tools: [{ name: "bad name", parameters: { type: "object" } }],
          }),
        ),
        [400, "invalid_request", 'tools[0].name "bad name": 1 to 64 ASCII letters, digits, `_` or `-`'],
      );
      assert.deepEqual(refusal(await post(fake, "runs.create", 42)), [
        400,
        "invalid_request",
        "runs.create: params must be a JSON object",
      ]);
      assert.deepEqual(
        refusal(
          await rawOf(
            await fetch(`${fake.url}/v1/%ZZ`, { method: "POST", headers: { authorization: `Bearer ${fake.token}` } }),
          ),
        ),
        [404, "not_found", "no method `%ZZ`"],
      );
      // Still serving.
      assert.equal((await post(fake, "agents.list")).status, 200);
      assert.equal((await (await talonOf(fake).agent().run("still here")).wait()).status, "completed");
    });
  });

  it("answers unknown and malformed run ids on every run method and stream", async () => {
    await withFake(async (fake) => {
      const id = "run_000000000000000000000000";
      const notFound = [404, "not_found", `run "${id}" not found`];
      for (const method of ["runs.get", "runs.events", "runs.wait", "runs.cancel"]) {
        assert.deepEqual(refusal(await post(fake, method, { runId: id })), notFound, method);
      }
      const auth = { authorization: `Bearer ${fake.token}` };
      assert.deepEqual(
        refusal(await rawOf(await fetch(`${fake.url}/v1/runs/${id}/events`, { headers: auth }))),
        notFound,
      );
      assert.deepEqual(
        refusal(await rawOf(await fetch(`${fake.url}/v1/runs/${"r".repeat(300)}/events`, { headers: auth }))),
        [400, "invalid_request", "runId: a run id is 300 characters long; the cap is 128"],
      );
      assert.deepEqual(refusal(await rawOf(await fetch(`${fake.url}/v1/runs/a%01b/events`, { headers: auth }))), [
        400,
        "invalid_request",
        "runId: a run id may not contain control characters",
      ]);
      assert.deepEqual(refusal(await post(fake, "approvals.respond", { approvalId: "appr_x", decision: "deny" })), [
        404,
        "not_found",
        'approval "appr_x" not found',
      ]);
      assert.deepEqual(refusal(await post(fake, "questions.respond", { questionId: "q_x", answer: 1 })), [
        404,
        "not_found",
        'question "q_x" not found',
      ]);
      assert.deepEqual(refusal(await post(fake, "sessions.send", { sessionId: "sess_x", input: "hi" })), [
        404,
        "not_found",
        'session "sess_x" not found',
      ]);
    });
  });

  it("survives bad WebSocket frames, one over the size limit only closing its own connection", async () => {
    await withFake(async (fake) => {
      const open = () => authenticatedSocket(fake);
      const ws = await open();
      const answers: unknown[] = [];
      ws.addEventListener("message", (m) => answers.push(JSON.parse(String(m.data))));
      ws.send("[".repeat(10_000));
      ws.send(
        '{"type":"req","id":1,"method":"agents.list","params":{"deep":' + "[".repeat(500) + "]".repeat(500) + "}}",
      );
      ws.send("null");
      ws.send(JSON.stringify({ type: "req", id: 2, method: "runs.get", params: { runId: 7 } }));
      await until("four answers", () => answers.length >= 4);
      assert.deepEqual(
        answers
          .map((a) => normalised(a))
          .map((a) => {
            const frame = a as { id: unknown; error?: { code: string } };
            return [frame.id, frame.error?.code];
          }),
        [
          [null, "invalid_request"],
          [null, "invalid_request"],
          [null, "invalid_request"],
          [2, "invalid_request"],
        ],
      );
      const big = await open();
      const closed = new Promise<number>((resolve) => {
        big.addEventListener("close", (e) => {
          resolve(e.code);
        });
      });
      big.send("x".repeat((4 << 20) + 10));
      assert.equal(await closed, 1009);
      ws.send(JSON.stringify({ type: "req", id: 3, method: "agents.get", params: { agentId: "main" } }));
      await until("the first connection to answer still", () => answers.length >= 5);
      assert.deepEqual((answers[4] as { ok: boolean }).ok, true);
      ws.close();
    });
  });

  it("serves floods of concurrent connections and streams", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const run = await talon.agent().run("flood");
      await run.wait();
      const calls = Array.from({ length: 300 }, (_, i) =>
        post(fake, i % 2 ? "agents.list" : "runs.get", i % 2 ? {} : { runId: run.id }).then((r) => r.status),
      );
      const streams = Array.from({ length: 100 }, async () => {
        const response = await fetch(`${fake.url}/v1/runs/${run.id}/events`, {
          headers: { authorization: `Bearer ${fake.token}` },
        });
        return [response.status, (await response.text()).split("\n\n").filter((f) => f.startsWith("id:")).length];
      });
      const sockets = Array.from({ length: 30 }, async () => {
        const ws = talonOf(fake, { transport: "websocket" });
        try {
          return (await ws.client.agents.list()).agents.length;
        } finally {
          await ws.close();
        }
      });
      assert.deepEqual(new Set(await Promise.all(calls)), new Set([200]));
      assert.deepEqual(
        await Promise.all(streams),
        Array.from({ length: 100 }, () => [200, 5]),
      );
      assert.deepEqual(
        await Promise.all(sockets),
        Array.from({ length: 30 }, () => 1),
      );
      // Streams left open are ended by close() (this fake's `withFake`), the process exits.
      for (let i = 0; i < 20; i++)
        void fetch(`${fake.url}/v1/events`, { headers: { authorization: `Bearer ${fake.token}` } })
          .then((r) => r.text())
          .catch(() => undefined);
      await until("the log streams to open", async () => (await post(fake, "agents.list")).status === 200);
    });
  });

  it("lets exactly one of 50 concurrent answers to an approval win", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Done.").approval("write", { path: "x" }));
      const talon = talonOf(fake);
      const run = await talon.agent().run("write");
      const [approval] = await until("the approval", async () => {
        const pending = await run.approvals({ status: "pending" });
        return pending.length > 0 ? pending : undefined;
      });
      assert.ok(approval);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          post(fake, "approvals.respond", {
            approvalId: approval.id,
            decision: i % 2 ? "deny" : "approve_once",
            reason: `answer ${i}`,
          }),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      const lost = answers.filter((a) => a.status === 409);
      assert.deepEqual([won.length, lost.length], [1, 49]);
      const winner = won[0]?.body as { decision: string; reason: string };
      for (const loser of lost) {
        assert.deepEqual(loser.body, {
          error: {
            code: "conflict",
            details: { approval: winner },
            message: "this approval was already resolved",
            retryable: false,
          },
        });
      }
      const result = await run.wait();
      assert.equal(result.status, "completed");
      const events = (await talon.client.runs.events(run.id)).events.filter((e) => e.type === "approval.resolved");
      assert.deepEqual(
        events.map((e) => (e.data as { reason: string }).reason),
        [winner.reason],
      );
    });
  });
});
