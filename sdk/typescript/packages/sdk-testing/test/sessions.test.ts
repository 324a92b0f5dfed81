// Sessions and the rest of the table through @talon/sdk: send, messages,
// fork, compact, abort; one run at a time per session and the multitask
// strategies; idempotency keys; pages of runs, sessions and artifacts;
// agents, environments, tools and models.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";
import { TalonError, type TalonEvent } from "@talon/sdk";

import { collect, firstEvents, normalised, post, talonOf, until, withFake } from "./helpers.js";

const REPLY = "Hello from the SDK suite.";

describe("sessions", () => {
  it("send, keep messages, fork, compact and abort, as the gateway does", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply(REPLY));
      const talon = talonOf(fake);
      const session = await talon.agent().createSession({ key: "user-42", metadata: { plan: "pro" } });
      assert.deepEqual(normalised(session.info), {
        agentId: "main",
        createdAt: "<time>",
        id: "<sess_1>",
        key: "user-42",
        metadata: { plan: "pro" },
        updatedAt: "<time>",
      });
      const run = await session.send("first question");
      const result = await run.wait();
      assert.deepEqual(
        normalised({
          status: result.status,
          sessionId: result.sessionId,
          sessionKey: result.sessionKey,
          output: result.output,
        }),
        {
          status: "completed",
          sessionId: "<sess_1>",
          sessionKey: "user-42",
          output: { text: REPLY },
        },
      );
      const { messages } = await session.messages();
      assert.deepEqual(
        messages.map((m) => [m.role, m.text]),
        [
          ["user", "first question"],
          ["assistant", REPLY],
        ],
      );
      assert.deepEqual(
        (await session.messages({ after: messages[0]?.id, limit: 1 })).messages.map((m) => m.text),
        [REPLY],
      );
      await assert.rejects(
        session.messages({ after: "msg_nope" }),
        (e: unknown) => e instanceof TalonError && e.code === "not_found",
      );
      const fork = await session.fork({ atMessageId: messages[0]?.id });
      assert.deepEqual(
        normalised({
          parent: fork.info?.parentId === session.id,
          at: fork.info?.forkedAtMessageId,
          metadata: fork.info?.metadata,
        }),
        {
          parent: true,
          at: `msg_${run.id}_0000`,
          metadata: { plan: "pro" },
        },
      );
      assert.deepEqual(
        (await fork.messages()).messages.map((m) => m.text),
        ["first question"],
      );
      const compacted = await session.compact();
      assert.equal(compacted.id, session.id);
      const after = (await session.messages()).messages;
      assert.deepEqual(after.at(-1)?.role, "compaction");
      assert.deepEqual(normalised(after.at(-1)?.text), "A summary of 2 messages.");
      const [compaction] = await firstEvents(fake, "/v1/events?types=session.compacted", 1);
      assert.deepEqual(normalised({ ...compaction, id: "<event>" }), {
        version: 1,
        id: "<event>",
        ts: "<time>",
        type: "session.compacted",
        sessionId: "<sess_1>",
        agentId: "main",
        requestId: "<req_1>",
        data: { replacedMessages: 2, sessionId: "<sess_1>", summaryMessageId: "<msg_1>" },
        sessionKey: "user-42",
      });
      assert.deepEqual(await session.abort(), { cancelledRunIds: [] });
      assert.ok((await session.artifacts()).length > 0, "every run leaves its trajectory");
      // A key names one session.
      assert.equal((await talon.session("user-42")).id, session.id);
      assert.notEqual((await talon.session("user-43")).id, session.id);
      await assert.rejects(
        talon.agent().createSession({ key: "user-42" }),
        (e: unknown) => e instanceof TalonError && e.code === "conflict",
      );
    });
  });

  it("runs one at a time per session: enqueue, reject, interrupt and rollback", async () => {
    await withFake(async (fake) => {
      for (let i = 0; i < 4; i++) fake.scriptRun(FakeRun.reply("Done.").approval("write", { n: i }));
      const talon = talonOf(fake);
      const session = await talon.agent().createSession();
      const first = await session.send("one");
      await until("the first run to ask", async () => (await first.approvals({ status: "pending" })).length > 0);
      await assert.rejects(session.send("no", { multitaskStrategy: "reject" }), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, details: e.details },
          { code: "conflict", details: { activeRunIds: [first.id] } },
        );
        return true;
      });
      const queued = await session.send("two");
      assert.equal(queued.info.status, "queued");
      const interrupting = await session.send("three", { multitaskStrategy: "interrupt" });
      assert.equal((await first.wait()).status, "cancelled");
      assert.equal((await queued.wait()).status, "cancelled");
      const queuedEvents = await collect(queued.events());
      assert.deepEqual(normalised(queuedEvents.map((e) => [e.type, e.data])), [
        ["run.created", { input: "two" }],
        ["run.queued", { reason: "session" }],
        [
          "run.cancelled",
          { durationMs: "<ms>", error: "the run was cancelled before it started", toolCalls: 0, turns: 0, usage: {} },
        ],
      ]);
      await until("the third run to ask", async () => (await interrupting.approvals({ status: "pending" })).length > 0);
      const rolling = await session.send("four", { multitaskStrategy: "rollback" });
      assert.equal((await interrupting.wait()).status, "cancelled");
      await until("the fourth run to ask", async () => (await rolling.approvals({ status: "pending" })).length > 0);
      assert.deepEqual(await session.abort(), { cancelledRunIds: [rolling.id] });
      // The interrupted runs keep their messages; the rolled-back one leaves none.
      const texts = (await session.messages()).messages.filter((m) => m.role === "user").map((m) => m.text);
      assert.deepEqual(texts, ["one", "four"]);
    });
  });

  it("keeps one run per idempotency key, and refuses the key with other params", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const first = await talon.agent().run({ input: "once", idempotencyKey: "k-1" });
      const again = await talon.agent().run({ input: "once", idempotencyKey: "k-1" });
      assert.equal(again.id, first.id);
      await assert.rejects(talon.agent().run({ input: "other", idempotencyKey: "k-1" }), (e: unknown) => {
        assert.ok(e instanceof TalonError);
        assert.deepEqual(
          { code: e.code, message: e.message },
          { code: "conflict", message: 'idempotency key "k-1" was used with other parameters' },
        );
        return true;
      });
      assert.equal((await talon.client.runs.list()).runs.length, 1);
    });
  });
});

describe("lists", () => {
  it("pages runs newest first, sessions and artifacts oldest first", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      const runs = [];
      for (const input of ["a", "b", "c"]) {
        const run = await talon.agent().run(input);
        await run.wait();
        runs.push(run.id);
      }
      const page = await talon.client.runs.list({ limit: 2 });
      assert.deepEqual(
        page.runs.map((r) => r.id),
        [runs[2], runs[1]],
      );
      assert.equal(page.nextCursor, runs[1]);
      const rest = await talon.client.runs.list({ limit: 2, cursor: page.nextCursor ?? "" });
      assert.deepEqual(
        { runs: rest.runs.map((r) => r.id), next: rest.nextCursor },
        { runs: [runs[0]], next: undefined },
      );
      assert.deepEqual((await talon.client.runs.list({ status: ["running"] })).runs, []);
      assert.deepEqual((await post(fake, "runs.list", { status: ["sleeping"] })).body, {
        error: {
          code: "invalid_request",
          details: { field: "status" },
          message: "status: an unknown run status",
          retryable: false,
        },
      });
      const sessions = await talon.client.sessions.list({ limit: 2 });
      assert.deepEqual(
        sessions.sessions.map((s) => s.key),
        runs.slice(0, 2).map((_, i) => sessions.sessions[i]?.key),
      );
      assert.deepEqual((await talon.client.sessions.list({ cursor: "sess_nope" })).sessions, []);
      const artifacts = await talon.client.artifacts.list({ limit: 2 });
      assert.deepEqual(
        artifacts.artifacts.map((a) => a.runId),
        [runs[0], runs[1]],
      );
      assert.equal(artifacts.nextCursor, artifacts.artifacts[1]?.id);
    });
  });
});

describe("the rest of the table", () => {
  it("agents, models, tools, environments", async () => {
    await withFake(async (fake) => {
      const talon = talonOf(fake);
      assert.deepEqual(normalised(await talon.client.agents.create({ id: "helper", name: "Helper" })), {
        createdAt: "<time>",
        id: "helper",
        name: "Helper",
        source: "api",
        updatedAt: "<time>",
      });
      await assert.rejects(
        talon.client.agents.create({ id: "main" }),
        (e: unknown) => e instanceof TalonError && e.message === 'agent "main" is declared in the config file',
      );
      await assert.rejects(
        talon.client.agents.update("main", { name: "x" }),
        (e: unknown) => e instanceof TalonError && e.code === "conflict",
      );
      assert.equal((await talon.client.agents.update("helper", { description: "helps" })).description, "helps");
      assert.deepEqual(
        (await talon.client.agents.list()).agents.map((a) => a.id),
        ["main", "helper"],
      );
      assert.deepEqual(await talon.client.models.list(), {
        models: [{ id: "mock/mock-model", name: "mock-model", provider: "mock" }],
      });
      assert.deepEqual(await talon.client.models.status(), { providers: [{ authenticated: true, provider: "mock" }] });
      const tools = (await talon.client.tools.list()).tools;
      assert.deepEqual(
        tools.map((t) => [t.id, t.requiresApproval]),
        [
          ["openclaw:core:edit", true],
          ["openclaw:core:exec", true],
          ["openclaw:core:grep", false],
          ["openclaw:core:list", false],
          ["openclaw:core:read", false],
          ["openclaw:core:write", true],
          ["openclaw:runtime:ask_user", false],
        ],
      );
      const mine = { ...tools[0], id: "mcp:files:stat", name: "stat" } as (typeof tools)[number];
      fake.setTools([mine]);
      fake.setInvokeResult("mcp:files:stat", { size: 3 });
      const run = await talon.agent().run("which tools?");
      assert.deepEqual(
        (await run.toolSpace()).list().map((t) => t.name),
        ["stat"],
      );
      const started = (await collect(run.events())).find(
        (e): e is Extract<TalonEvent, { type: "run.started" }> => e.type === "run.started",
      );
      assert.deepEqual(started?.data.tools, ["stat"]);
      assert.deepEqual(await talon.client.tools.invoke("stat", { sessionKey: "tools", arguments: {} }), {
        result: { size: 3 },
      });
      assert.deepEqual((await post(fake, "tools.invoke", { tool: "nope", sessionKey: "tools" })).body, {
        error: {
          code: "not_found",
          details: { outcome: "not_found" },
          message: 'no tool "nope" this agent may call directly',
          retryable: false,
        },
      });
      const environment = await talon.client.environments.create({ provider: "local", settings: { retain: true } });
      assert.deepEqual(normalised(environment), {
        capabilities: {
          artifacts: true,
          checkout: true,
          logs: true,
          longRunning: true,
          networkPolicy: true,
          pullRequests: false,
          sandbox: false,
          secrets: true,
        },
        createdAt: "<time>",
        id: "<env_1>",
        provider: "local",
        settings: { retain: true },
        status: "ready",
        workspace: "/fake-gateway/environments/<env_1>/workspace",
      });
      const inIt = await talon.agent().run({ input: "in it", environmentId: environment.id });
      assert.equal((await inIt.wait()).status, "completed");
      const deleted = await talon.client.environments.delete(environment.id);
      assert.deepEqual([deleted.status, deleted.detail], ["deleted", "the workspace was kept (retain)"]);
      await assert.rejects(
        talon.agent().run({ input: "x", environmentId: environment.id }),
        (e: unknown) => e instanceof TalonError && e.code === "conflict",
      );
      await assert.rejects(
        talon.client.environments.create({ provider: "docker" }),
        (e: unknown) => e instanceof TalonError && e.code === "not_found",
      );
    });
  });
});
