// Sessions and cancellation through the high-level layer, against a real gateway.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Talon, TalonError, type TalonEvent } from "@talon/sdk";
import { startGateway, type RunningGateway } from "@talon/sdk-testing";

const REPLY = "Hello from the SDK suite.";

/** Polls `check` until it holds, failing after `ms`, naming what it waited for. */
async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("sessions", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({ script: { replay: "perRun", turns: [{ text: REPLY }] } });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("sends, keeps messages, forks, compacts and aborts", async () => {
    const session = await talon.agent().createSession();
    const run = await session.send("first question");
    const result = await run.wait();
    assert.deepEqual({ status: result.status, sessionId: result.sessionId }, { status: "completed", sessionId: session.id });
    const { messages } = await session.messages();
    assert.deepEqual(
      messages.map((m) => [m.role, m.text]),
      [
        ["user", "first question"],
        ["assistant", REPLY],
      ],
    );
    const fork = await session.fork({ atMessageId: messages[0]?.id });
    assert.notEqual(fork.id, session.id);
    assert.equal(fork.info?.parentId, session.id);
    assert.deepEqual(
      (await fork.messages()).messages.map((m) => m.text),
      ["first question"],
    );
    assert.equal((await session.compact()).id, session.id);
    assert.deepEqual(await session.abort(), { cancelledRunIds: [] });
    assert.ok((await session.artifacts()).length > 0, "every run leaves its trajectory");
  });

  it("names one session by its key", async () => {
    const a = await talon.session("user-42");
    const again = await talon.agent("main").session("user-42");
    assert.deepEqual(again.info, a.info);
    assert.equal(a.key, "user-42");
    assert.notEqual((await talon.session("user-43")).id, a.id);
  });
});

describe("cancel", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({
      script: {
        replay: "perRun",
        turns: [{ toolCalls: [{ name: "write", arguments: { path: "note.txt", content: "x" } }] }, { text: "Done." }],
      },
    });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("cancelling a run that waits for an approval cancels the approval", async () => {
    const run = await talon.agent().run("write the note");
    await until("the run to ask for an approval", async () => (await run.approvals()).length > 0);
    await run.cancel({ reason: "changed my mind" });
    assert.equal((await run.wait()).status, "cancelled");
    assert.deepEqual(
      (await run.approvals()).map((a) => a.info.status),
      ["cancelled"],
    );
    const events: TalonEvent[] = [];
    for await (const event of run.events()) events.push(event);
    assert.equal(events.at(-1)?.type, "run.cancelled");
  });

  it("a late answer to a cancelled approval is a conflict", async () => {
    const run = await talon.agent().run("write again");
    await until("the run to ask for an approval", async () => (await run.approvals()).length > 0);
    const [approval] = await run.approvals();
    await run.cancel();
    await run.wait();
    await assert.rejects(approval!.approveOnce(), (e: unknown) => (e as { code?: string }).code === "conflict");
  });
});

describe("questions", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({
      script: {
        replay: "perRun",
        turns: [{ toolCalls: [{ name: "ask_user", arguments: { prompt: "Which branch?", choices: ["main", "dev"] } }] }, { text: "Thanks." }],
      },
    });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("a run's question waits for the app's answer", async () => {
    const run = await talon.agent().run("deploy it");
    let pending: Awaited<ReturnType<Talon["questions"]>> = [];
    await until("a question to be asked", async () => {
      pending = await talon.questions({ runId: run.id, status: "pending" });
      return pending.length > 0;
    });
    const [question] = pending;
    assert.deepEqual(
      { prompt: question?.info.prompt, choices: question?.info.choices, status: question?.info.status },
      { prompt: "Which branch?", choices: ["main", "dev"], status: "pending" },
    );
    const answered = await question!.answer("dev");
    assert.deepEqual({ status: answered.status, answer: answered.answer }, { status: "answered", answer: "dev" });
    assert.equal((await run.wait()).status, "completed");
    const types: string[] = [];
    for await (const event of run.events()) types.push(event.type);
    assert.ok(types.includes("question.requested") && types.includes("question.answered"), types.join(", "));
  });
});

describe("retention", () => {
  let gateway: RunningGateway;
  let talon: Talon;
  before(async () => {
    gateway = await startGateway({
      script: { replay: "perRun", turns: [{ text: REPLY }] },
      config: { store: { retention: { maxEvents: 3 } } },
    });
    talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
  });
  after(() => gateway.stop());

  it("a cursor older than retention ends the stream with cursor_expired, never silence", async () => {
    const run = await talon.agent().run("hello");
    assert.equal((await run.wait()).status, "completed");
    let expired: TalonError | undefined;
    await until("the run's first events to be pruned", async () => {
      try {
        for await (const _event of run.events({ after: "1" })) {
          // Events still there: not pruned yet.
        }
        return false;
      } catch (error) {
        if (!(error instanceof TalonError)) throw error;
        expired = error;
        return true;
      }
    });
    assert.deepEqual(
      { code: expired?.code, retryable: expired?.retryable, cursor: (expired?.details as { cursor?: string })?.cursor },
      { code: "cursor_expired", retryable: false, cursor: "1" },
    );
    const oldest = BigInt((expired?.details as { oldestId: string }).oldestId);
    const kept: string[] = [];
    for await (const event of run.events({ after: String(oldest - 1n) })) kept.push(event.type);
    assert.equal(kept.at(-1), "run.completed");
  });
});
