// @talon/sdk against a real `talon gateway` serving the mock model.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Talon, TalonError, type TalonEvent } from "@talon/sdk";
import { startGateway, type RunningGateway } from "@talon/sdk-testing";

const reply = { replay: "perRun" as const, turns: [{ text: "The notes say the answer is 42." }] };
const write = {
  replay: "perRun" as const,
  turns: [
    { toolCalls: [{ name: "write", arguments: { path: "summary.txt", content: "42" } }] },
    { text: "I wrote summary.txt." },
  ],
};

/** The events' types, deltas left out (how a stream is cut into deltas is not the run's behaviour). */
function kinds(events: TalonEvent[]): string[] {
  return events.map((e) => e.type).filter((t) => !t.endsWith(".delta"));
}

async function collect(events: AsyncIterable<TalonEvent>): Promise<TalonEvent[]> {
  const out: TalonEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

describe("a run", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({ script: reply });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("runs, waits and streams its events once each, in order", async () => {
    const run = await talon.agent("main").run("What do my notes say?");
    const result = await run.wait();
    assert.deepEqual(
      { status: result.status, text: result.output?.text, runId: result.runId },
      { status: "completed", text: "The notes say the answer is 42.", runId: run.id },
    );
    const events = await collect(run.events());
    assert.deepEqual(kinds(events), ["run.created", "run.started", "assistant.message", "run.completed"]);
    const ids = events.map((e) => BigInt(e.id));
    assert.deepEqual(ids, [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(events.every((e) => e.runId === run.id));
  });

  it("resumes from a saved cursor", async () => {
    const run = await talon.agent().run("again");
    const all = await collect(run.events());
    const cursor = all[1]?.id;
    assert.ok(cursor);
    const rest = await collect(run.events({ after: cursor }));
    assert.deepEqual(
      rest.map((e) => e.id),
      all.slice(2).map((e) => e.id),
    );
  });

  it("is the same run when created twice with one idempotency key", async () => {
    const first = await talon.agent().run({ input: "once", idempotencyKey: "sdk-test-once" });
    const second = await talon.agent().run({ input: "once", idempotencyKey: "sdk-test-once" });
    assert.equal(second.id, first.id);
  });

  it("gives typed errors", async () => {
    await assert.rejects(talon.run("run_000000000000000000000000"), (e: unknown) => {
      assert.ok(e instanceof TalonError);
      assert.deepEqual({ code: e.code, retryable: e.retryable, status: e.status }, {
        code: "not_found",
        retryable: false,
        status: 404,
      });
      return true;
    });
    const stranger = new Talon({ baseUrl: gateway.url, token: "talon_not_a_token" });
    await assert.rejects(stranger.agent().run("hi"), (e: unknown) => e instanceof TalonError && e.code === "unauthenticated");
    await assert.rejects(talon.client.tasks.list(), (e: unknown) => e instanceof TalonError && e.code === "unsupported");
  });

  it("streams the whole log with a ticket instead of the token", async () => {
    const ticketed = new Talon({ baseUrl: gateway.url, token: gateway.token, streamAuth: "ticket" });
    const run = await ticketed.agent().run("via a ticket");
    const events = await collect(run.events());
    assert.equal(events.at(-1)?.type, "run.completed");
    const controller = new AbortController();
    const seen: TalonEvent[] = [];
    for await (const event of ticketed.events({ signal: controller.signal, types: ["run.completed"] })) {
      seen.push(event);
      if (event.runId === run.id) break;
    }
    assert.ok(seen.some((e) => e.runId === run.id && e.type === "run.completed"));
  });
});

describe("approvals", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({ script: write });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("approves a write with the app's policy, in the seed's shape", async () => {
    const run = await talon.agent().run("Write a summary to summary.txt");
    const asked: Array<{ kind: string; toolName: string | undefined; toolId: string | undefined }> = [];
    const stop = run.onApproval(async (request) => {
      asked.push({ kind: request.kind, toolName: request.toolName, toolId: request.toolId });
      // The gateway names a tool as the model calls it; `toolId` is its catalog id.
      return request.kind === "tool" && request.toolName === "write"
        ? request.approveOnce({ reason: "allowed by the test" })
        : request.deny();
    });
    const result = await run.wait();
    stop();
    assert.deepEqual(asked, [{ kind: "tool", toolName: "write", toolId: "openclaw:core:write" }]);
    assert.equal(result.status, "completed");
    assert.equal(readFileSync(join(gateway.workspace, "summary.txt"), "utf8"), "42");
  });

  it("denies, and the run goes on without the write", async () => {
    const run = await talon.agent().run("Write again");
    run.onApproval((request) => request.deny({ reason: "not today" }));
    const events = await collect(run.events());
    const resolved = events.find((e) => e.type === "approval.resolved");
    assert.equal(resolved?.type === "approval.resolved" ? resolved.data.decision : undefined, "deny");
    assert.equal(events.at(-1)?.type, "run.completed");
  });

  it("lists the run's ToolSpace", async () => {
    const run = await talon.agent().run("tools?");
    run.onApproval((request) => request.deny());
    const space = await run.toolSpace();
    const writeTool = space.list().find((t) => t.name === "write");
    assert.deepEqual(
      writeTool && { name: writeTool.name, source: writeTool.source, requiresApproval: writeTool.requiresApproval },
      { name: "write", source: "core", requiresApproval: true },
    );
    await run.wait();
  });
});

describe("artifacts and handles", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({ script: write, config: { tools: { approvals: "allow" } } });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("lists a run's artifacts and downloads each whole, checked against its length", async () => {
    const run = await talon.agent().run("Write a summary");
    assert.equal((await run.wait()).status, "completed");
    const artifacts = await run.artifacts.list();
    assert.ok(artifacts.length > 0);
    for (const artifact of artifacts) {
      const bytes = await artifact.bytes();
      assert.equal(bytes.length, artifact.info.sizeBytes);
      const again = await talon.artifact(artifact.id);
      assert.deepEqual(again.info, artifact.info);
    }
  });

  it("gives tasks as the seed's future API: unsupported", async () => {
    await assert.rejects(talon.task("task_1").get(), (e: unknown) => e instanceof TalonError && e.code === "unsupported");
  });
});

describe("the WebSocket transport", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({ script: reply });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token, transport: "websocket" });
  });
  after(async () => {
    await talon.close();
    await gateway.stop();
  });

  it("carries calls and a subscription's replay and live tail", async () => {
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
    const listed = await talon.client.runs.list({ limit: 5 });
    assert.ok(listed.runs.some((r) => r.id === run.id));
  });

  it("gives the gateway's typed errors over the socket", async () => {
    await assert.rejects(talon.client.runs.get("run_000000000000000000000000"), (e: unknown) => e instanceof TalonError && e.code === "not_found");
  });
});
