// Every method of the generated table is served, over HTTP and over the
// WebSocket: never 404, 405 or `internal`; `unsupported` ones answer
// `unsupported`. The sample params are typed by the table, so a method
// added to it fails to compile here until it is covered.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun, type FakeGateway } from "@talon/sdk-testing";
import { METHODS, TalonError, WsCaller, type MethodName, type MethodTypes } from "@talon/sdk";

import { normalised, post, talonOf, until, withFake } from "./helpers.js";

/** What each method is called with, given the ids a setup made. */
type Samples = { [M in MethodName]: MethodTypes[M]["params"] };

interface Made {
  runId: string;
  sessionId: string;
  sessionKey: string;
  artifactId: string;
  approvalId: string;
  questionId: string;
  environmentId: string;
  tokenId: string;
  /** A session and an ended run for the deletes. */
  doomedSessionId: string;
  doomedRunId: string;
}

function samples(made: Made): Samples {
  return {
    "agents.list": {},
    "agents.get": { agentId: "main" },
    "agents.create": { id: "helper", name: "Helper" },
    "agents.update": { agentId: "helper", description: "helps" },
    "sessions.list": { limit: 5 },
    "sessions.create": { agentId: "main", key: "sample" },
    "sessions.resolve": { key: "resolved" },
    "sessions.send": { sessionId: made.sessionId, input: "again" },
    "sessions.messages": { sessionId: made.sessionId },
    "sessions.fork": { sessionId: made.sessionId },
    "sessions.update": { sessionId: made.sessionId, metadata: { topic: "colors" } },
    "sessions.compact": { sessionId: made.sessionId },
    "sessions.abort": { sessionId: made.sessionId },
    "sessions.delete": { sessionId: made.doomedSessionId },
    "runs.create": { input: "hello" },
    "runs.list": { limit: 2 },
    "usage.summary": {},
    "runs.get": { runId: made.runId },
    "runs.events": { runId: made.runId, limit: 3 },
    "runs.wait": { runId: made.runId, timeoutMs: 10 },
    "runs.cancel": { runId: made.runId },
    "runs.delete": { runId: made.doomedRunId },
    "tasks.list": {},
    "tasks.get": { taskId: "task_1" },
    "tasks.cancel": { taskId: "task_1" },
    "tasks.notify": { taskId: "task_1", notifyPolicy: "silent" },
    "tasks.events": { taskId: "task_1" },
    "schedules.list": {},
    "schedules.get": { scheduleId: "sch_1" },
    "schedules.create": {
      name: "nightly",
      schedule: { kind: "cron", expr: "0 3 * * *", tz: "Europe/Berlin" },
      payload: { kind: "agentTurn", message: "report" },
    },
    "schedules.update": { scheduleId: "sch_1", enabled: false },
    "schedules.run": { scheduleId: "sch_1" },
    "schedules.delete": { scheduleId: "sch_1" },
    "models.list": {},
    "models.status": {},
    "tools.list": {},
    "tools.invoke": { tool: "read", sessionKey: made.sessionKey, arguments: { path: "a.txt" } },
    "artifacts.list": { runId: made.runId },
    "artifacts.get": { artifactId: made.artifactId, runId: made.runId },
    "artifacts.download": { artifactId: made.artifactId },
    "approvals.list": { status: "pending" },
    "approvals.get": { approvalId: made.approvalId },
    "approvals.respond": { approvalId: made.approvalId, decision: "approve_once" },
    "questions.list": {},
    "questions.respond": { questionId: made.questionId, answer: "yes" },
    "environments.list": {},
    "environments.create": { provider: "local" },
    "environments.status": { environmentId: made.environmentId },
    "environments.delete": { environmentId: made.environmentId },
    "events.subscribe": { types: ["run.completed"] },
    "events.unsubscribe": { subscriptionId: "sub_1" },
    "tokens.ticket": {},
    "tokens.create": { name: "browser", preset: "app", expiresInMs: 60_000 },
    "tokens.list": { includeRevoked: true },
    "tokens.revoke": { tokenId: made.tokenId },
  };
}

/** Makes a run with an artifact, a pending approval, a pending question and an environment. */
async function setup(fake: FakeGateway): Promise<Made> {
  const talon = talonOf(fake);
  fake.scriptRun(FakeRun.reply("Made.").artifact("a.txt", "file", "hello"));
  fake.scriptRun(FakeRun.reply("Asked.").approval("write", { path: "b.txt" }));
  fake.scriptRun(FakeRun.reply("Asked.").question("Proceed?", ["yes", "no"]));
  fake.setInvokeResult("read", { text: "hello" });
  const first = await talon.agent().run("make");
  assert.equal((await first.wait()).status, "completed");
  await talon.agent().run("ask");
  await talon.agent().run("question");
  const approval = await until("an approval", async () => (await talon.approvals())[0]);
  const question = await until("a question", async () => (await talon.questions())[0]);
  const environment = await talon.client.environments.create({ provider: "local" });
  const token = await talon.createToken({ name: "to revoke", preset: "viewer", expiresInMs: 60_000 });
  const doomed = await talon.client.sessions.create({ agentId: "main", key: "doomed" });
  const gone = await talon.agent().run("gone");
  await gone.wait();
  const artifact = (await first.artifacts.list())[0];
  assert.ok(artifact);
  return {
    runId: first.id,
    sessionId: first.info.sessionId ?? "",
    sessionKey: first.info.sessionKey ?? "",
    artifactId: artifact.id,
    approvalId: approval.id,
    questionId: question.id,
    environmentId: environment.id,
    tokenId: token.id,
    doomedSessionId: doomed.id,
    doomedRunId: gone.id,
  };
}

/** Whether the table marks `m` unsupported (none is now; the client answers one itself). */
function unsupported(m: MethodName): boolean {
  const { stability }: { stability: string } = METHODS[m];
  return stability === "unsupported";
}

/**
 * What each answers beside success (`200` over HTTP): the table's unsupported methods, the WebSocket's own over
 * HTTP, and a task or schedule the fake does not hold (it spawns and fires none).
 */
function expected(transport: "http" | "websocket"): Record<string, unknown> {
  return Object.fromEntries(
    (Object.keys(METHODS) as MethodName[]).map((m) => {
      if (unsupported(m)) return [m, "unsupported"];
      if (m.startsWith("tasks.") && m !== "tasks.list") return [m, "not_found"];
      // It holds no schedule, and makes none: it has no clock that fires.
      if (m === "schedules.create") return [m, "unsupported"];
      if (m.startsWith("schedules.") && m !== "schedules.list") return [m, "not_found"];
      if (transport === "http" && m.startsWith("events.")) return [m, "invalid_request"];
      return [m, "ok"];
    }),
  );
}

describe("the method table", () => {
  it("has a sample for every method, and every one is served over HTTP", async () => {
    await withFake(async (fake) => {
      const table = samples(await setup(fake));
      assert.deepEqual(Object.keys(table).sort(), Object.keys(METHODS).sort());
      const outcomes: Record<string, unknown> = {};
      for (const method of Object.keys(METHODS) as MethodName[]) {
        const answer = await post(fake, method, table[method]);
        const code = (answer.body as { error?: { code?: string } }).error?.code;
        outcomes[method] = answer.status === 200 ? "ok" : code;
        // A 404 is a task the fake does not hold, never a missing route.
        assert.ok(
          ![405, 500].includes(answer.status) &&
            (answer.status !== 404 || method.startsWith("tasks.") || method.startsWith("schedules.")),
          `${method}: ${answer.status}`,
        );
      }
      assert.deepEqual(outcomes, expected("http"));
      // Every call was recorded, in order, with its transport.
      const recorded = fake
        .calls()
        .filter((c) => c.transport === "http")
        .map((c) => c.method);
      assert.deepEqual(recorded.slice(-Object.keys(METHODS).length), Object.keys(METHODS));
    });
  });

  it("serves every method over the WebSocket too", async () => {
    await withFake(async (fake) => {
      const table = samples(await setup(fake));
      const caller = new WsCaller({ baseUrl: fake.url, token: fake.token });
      try {
        const outcomes: Record<string, unknown> = {};
        for (const method of Object.keys(METHODS) as MethodName[]) {
          outcomes[method] = await caller.call(method, table[method] as never).then(
            () => "ok",
            (e: unknown) => (e instanceof TalonError ? e.code : e),
          );
        }
        assert.deepEqual(outcomes, expected("websocket"));
        const sent = fake.calls().filter((c) => c.transport === "websocket");
        // The client answers `unsupported` itself, without a request.
        assert.deepEqual(
          sent.map((c) => c.method),
          (Object.keys(METHODS) as MethodName[]).filter((m) => !unsupported(m)),
        );
        assert.deepEqual(normalised(sent.find((c) => c.method === "events.subscribe")), {
          method: "events.subscribe",
          params: { types: ["run.completed"] },
          transport: "websocket",
        });
      } finally {
        await caller.close();
      }
    });
  });

  it("answers a store without tasks and unknown methods as the gateway does", async () => {
    await withFake(async (fake) => {
      assert.deepEqual(await post(fake, "tasks.list", {}), {
        status: 200,
        headers: { "content-type": "application/json" },
        body: { tasks: [] },
      });
      const unknown = await post(fake, "nope.nothing", {});
      assert.deepEqual(unknown.body, {
        error: {
          code: "not_found",
          details: { method: "nope.nothing" },
          message: "no method `nope.nothing`",
          retryable: false,
        },
      });
      assert.equal(unknown.status, 404);
    });
  });
});
