// The scenarios of @talon/sdk's own suite against a real gateway
// (packages/sdk/test/gateway.test.ts and sessions.test.ts), played against
// the fake with the equivalent scripts: what passes against the real
// gateway passes here unchanged (the retention test's pruning stands in as
// the `expireCursor` fault).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun, type FakeGateway } from "@talon/sdk-testing";
import { TalonError, type TalonEvent } from "@talon/sdk";

import { collect, talonOf, until, withFake } from "./helpers.js";

const REPLY = "The notes say the answer is 42.";

function kinds(events: TalonEvent[]): string[] {
  return events.map((e) => e.type).filter((t) => !t.endsWith(".delta"));
}

function scripted(fake: FakeGateway, make: () => FakeRun, runs = 8): void {
  for (let i = 0; i < runs; i++) fake.scriptRun(make());
}

describe("the SDK suite's scenarios, against the fake", () => {
  it("a run: waits and streams once each, resumes from a cursor, one run per key, typed errors, tickets", async () => {
    await withFake(async (fake) => {
      scripted(fake, () => FakeRun.reply(REPLY));
      const talon = talonOf(fake);
      const run = await talon.agent("main").run("What do my notes say?");
      const result = await run.wait();
      assert.deepEqual(
        { status: result.status, text: result.output?.text, runId: result.runId },
        { status: "completed", text: REPLY, runId: run.id },
      );
      const events = await collect(run.events());
      assert.deepEqual(kinds(events), ["run.created", "run.started", "assistant.message", "run.completed"]);
      assert.ok(events.every((e) => e.runId === run.id));
      const again = await talon.agent().run("again");
      const all = await collect(again.events());
      const rest = await collect(again.events({ after: all[1]?.id }));
      assert.deepEqual(
        rest.map((e) => e.id),
        all.slice(2).map((e) => e.id),
      );
      const first = await talon.agent().run({ input: "once", idempotencyKey: "sdk-test-once" });
      assert.equal((await talon.agent().run({ input: "once", idempotencyKey: "sdk-test-once" })).id, first.id);
      await assert.rejects(talon.run("run_000000000000000000000000"), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, retryable: e.retryable, status: e.status },
          { code: "not_found", retryable: false, status: 404 },
        );
        return true;
      });
      const stranger = talonOf(fake, { token: "talon_not_a_token" });
      await assert.rejects(
        stranger.agent().run("hi"),
        (e: unknown) => e instanceof TalonError && e.code === "unauthenticated",
      );
      assert.deepEqual((await talon.client.tasks.list()).tasks, []);
      const ticketed = talonOf(fake, { streamAuth: "ticket" });
      const viaTicket = await ticketed.agent().run("via a ticket");
      assert.equal((await collect(viaTicket.events())).at(-1)?.type, "run.completed");
      for await (const event of ticketed.events({ types: ["run.completed"] })) {
        if (event.runId === viaTicket.id) break;
      }
    });
  });

  it("approvals: approved with the app's policy, denied, and the run's ToolSpace", async () => {
    await withFake(async (fake) => {
      scripted(fake, () =>
        FakeRun.reply("I wrote summary.txt.").approval("write", { path: "summary.txt", content: "42" }),
      );
      const talon = talonOf(fake);
      const run = await talon.agent().run("Write a summary to summary.txt");
      const asked: { kind: string; toolName: string | undefined; toolId: string | undefined }[] = [];
      const stop = run.onApproval((request) => {
        asked.push({ kind: request.kind, toolName: request.toolName, toolId: request.toolId });
        return request.toolName === "write" ? request.approveOnce({ reason: "allowed by the test" }) : request.deny();
      });
      const result = await run.wait();
      stop();
      assert.deepEqual(asked, [{ kind: "tool", toolName: "write", toolId: "openclaw:core:write" }]);
      assert.equal(result.status, "completed");
      const denied = await talon.agent().run("Write again");
      const stopDenying = denied.onApproval((request) => request.deny({ reason: "not today" }));
      const events = await collect(denied.events());
      stopDenying();
      const resolved = events.find((e) => e.type === "approval.resolved");
      assert.equal(resolved?.type === "approval.resolved" ? resolved.data.decision : undefined, "deny");
      assert.equal(events.at(-1)?.type, "run.completed");
      const third = await talon.agent().run("tools?");
      const stopThird = third.onApproval((request) => request.deny());
      const writeTool = (await third.toolSpace()).list().find((t) => t.name === "write");
      assert.deepEqual(
        writeTool && { name: writeTool.name, source: writeTool.source, requiresApproval: writeTool.requiresApproval },
        { name: "write", source: "core", requiresApproval: true },
      );
      await third.wait();
      stopThird();
    });
  });

  it("artifacts and handles; a task the fake does not hold is not found", async () => {
    await withFake(async (fake) => {
      scripted(fake, () => FakeRun.reply("I wrote summary.txt.").artifact("summary.txt", "file", "42"));
      const talon = talonOf(fake);
      const run = await talon.agent().run("Write a summary");
      assert.equal((await run.wait()).status, "completed");
      const artifacts = await run.artifacts.list();
      assert.ok(artifacts.length > 0);
      for (const artifact of artifacts) {
        assert.equal((await artifact.bytes()).length, artifact.info.sizeBytes);
        assert.deepEqual((await talon.artifact(artifact.id)).info, artifact.info);
      }
      await assert.rejects(
        talon.task("task_1").get(),
        (e: unknown) => e instanceof TalonError && e.code === "not_found",
      );
    });
  });

  it("the WebSocket transport: calls, a subscription's replay and live tail, typed errors", async () => {
    await withFake(async (fake) => {
      scripted(fake, () => FakeRun.reply(REPLY));
      const talon = talonOf(fake, { transport: "websocket" });
      try {
        const subscription = await talon.subscribe({ types: ["run.created", "run.completed"] });
        const run = await talon.agent().run("over the socket");
        assert.equal((await run.wait()).status, "completed");
        const seen: string[] = [];
        for await (const event of subscription) {
          if (event.runId !== run.id) continue;
          seen.push(event.type);
          if (event.type === "run.completed") break;
        }
        assert.deepEqual(seen, ["run.created", "run.completed"]);
        assert.ok((await talon.client.runs.list({ limit: 5 })).runs.some((r) => r.id === run.id));
        await assert.rejects(
          talon.client.runs.get("run_000000000000000000000000"),
          (e: unknown) => e instanceof TalonError && e.code === "not_found",
        );
      } finally {
        await talon.close();
      }
    });
  });

  it("sessions, cancel, questions and an expired cursor", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      fake.scriptRun(FakeRun.reply("Hello from the SDK suite."));
      const session = await talon.agent().createSession();
      const sent = await session.send("first question");
      assert.deepEqual((({ status, sessionId }) => ({ status, sessionId }))(await sent.wait()), {
        status: "completed",
        sessionId: session.id,
      });
      const { messages } = await session.messages();
      assert.deepEqual(
        messages.map((m) => [m.role, m.text]),
        [
          ["user", "first question"],
          ["assistant", "Hello from the SDK suite."],
        ],
      );
      const fork = await session.fork({ atMessageId: messages[0]?.id });
      assert.equal(fork.info?.parentId, session.id);
      assert.deepEqual(
        (await fork.messages()).messages.map((m) => m.text),
        ["first question"],
      );
      assert.equal((await session.compact()).id, session.id);
      assert.deepEqual(await session.abort(), { cancelledRunIds: [] });
      assert.ok((await session.artifacts()).length > 0);
      fake.scriptRun(FakeRun.reply("Done.").approval("write", { path: "note.txt", content: "x" }));
      const waiting = await talon.agent().run("write the note");
      await until("the run to ask for an approval", async () => (await waiting.approvals()).length > 0);
      const [approval] = await waiting.approvals();
      await waiting.cancel({ reason: "changed my mind" });
      assert.equal((await waiting.wait()).status, "cancelled");
      assert.deepEqual(
        (await waiting.approvals()).map((a) => a.info.status),
        ["cancelled"],
      );
      assert.equal((await collect(waiting.events())).at(-1)?.type, "run.cancelled");
      await assert.rejects(
        approval?.approveOnce() ?? Promise.reject(new Error("none")),
        (e: unknown) => (e as { code?: string }).code === "conflict",
      );
      fake.scriptRun(FakeRun.reply("Thanks.").question("Which branch?", ["main", "dev"]));
      const asking = await talon.agent().run("deploy it");
      const [question] = await until("a question", async () => {
        const pending = await talon.questions({ runId: asking.id, status: "pending" });
        return pending.length > 0 ? pending : undefined;
      });
      assert.deepEqual(
        { prompt: question?.info.prompt, choices: question?.info.choices, status: question?.info.status },
        { prompt: "Which branch?", choices: ["main", "dev"], status: "pending" },
      );
      assert.deepEqual(
        (({ status, answer }) => ({ status, answer }))(await (question ?? assert.fail()).answer("dev")),
        { status: "answered", answer: "dev" },
      );
      assert.equal((await asking.wait()).status, "completed");
      fake.inject({ kind: "expireCursor" });
      const expired = await collect(sent.events({ after: "1" })).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(expired instanceof TalonError);
      assert.deepEqual(
        { code: expired.code, retryable: expired.retryable, cursor: (expired.details as { cursor?: string }).cursor },
        { code: "cursor_expired", retryable: false, cursor: "1" },
      );
      const oldest = BigInt((expired.details as { oldestId: string }).oldestId);
      const kept = await collect(sent.events({ after: String(oldest - 1n) }));
      assert.equal(kept.at(-1)?.type, "run.completed");
    });
  });
});
