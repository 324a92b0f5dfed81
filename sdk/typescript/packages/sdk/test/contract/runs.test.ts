// Runs through the high-level layer, against both servers: events,
// results, resuming after a cut and from a saved cursor, the whole log,
// approvals (approve, deny, ask a person, late answers), questions,
// cancelling with a pending approval, artifacts, the session and the
// ToolSpace.
import assert from "node:assert/strict";
import { it } from "node:test";

import { TalonError, type TalonEvent, type ToolSummary } from "@talon/sdk";

import { DONE, QUESTION, REPLY, WRITE, WRITE_ARGS, bothServers, collect, until, withBackend } from "./backend.js";
import { transcript } from "./redact.js";

bothServers("a run", (kind) => {
  it("streams typed events in order and waits for its result", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("hello");
      const events = await collect(run.events());
      const types = events.map((e) => e.type).filter((t) => !t.endsWith(".delta"));
      assert.deepEqual(types, ["run.created", "run.started", "assistant.message", "run.completed"]);
      const numbers = events.map((e) => BigInt(e.id));
      assert.ok(
        numbers.every((n, i) => {
          const before = numbers[i - 1];
          return before === undefined || before < n;
        }),
        `ids in order: ${numbers.join(", ")}`,
      );
      assert.ok(events.every((e) => e.runId === run.id && e.version === 1));
      const text = events.flatMap((e) => (e.type === "assistant.delta" ? [e.data.text] : [])).join("");
      assert.equal(text, REPLY);
      const result = await run.wait();
      assert.deepEqual(
        { runId: result.runId, status: result.status, text: result.output?.text },
        { runId: run.id, status: "completed", text: REPLY },
      );
      const message = events.find((e) => e.type === "assistant.message");
      assert.equal(message?.type === "assistant.message" ? message.data.text : undefined, REPLY);
    }));

  it("resumes after a dropped connection with no gap and no duplicate", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("hello");
      await run.wait();
      const whole = await collect(run.events());
      b.cutNextStream(2);
      const resumed = await collect(run.events());
      assert.deepEqual(resumed, whole);
      if (b.cuts !== undefined) assert.equal(b.cuts, 1, "the proxy cut the stream");
    }));

  it("resumes from a saved cursor in another stream", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("hello");
      const first = run.events();
      let head: TalonEvent | undefined;
      for await (const event of first) {
        head = event;
        break; // `break` closes the connection.
      }
      assert.ok(head);
      assert.equal(first.cursor, head.id);
      // Another process attaches by id and resumes from the saved cursor.
      const attached = await talon.run(run.id);
      const rest = await collect(attached.events({ after: head.id }));
      assert.deepEqual([head, ...rest], await collect(run.events()));
    }));

  it("replays the whole log, then follows it across a cut", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const first = await talon.agent("main").run("one");
      await first.wait();
      b.cutNextStream(1);
      const controller = new AbortController();
      const seen: [string, string | undefined][] = [];
      let second: string | undefined;
      for await (const event of talon.events({ types: ["run.created", "run.completed"], signal: controller.signal })) {
        seen.push([event.type, event.runId ?? undefined]);
        // The live tail: a run started after the replay.
        if (seen.length === 2) second = (await talon.agent("main").run("two")).id;
        if (seen.length === 4) break;
      }
      assert.deepEqual(seen, [
        ["run.created", first.id],
        ["run.completed", first.id],
        ["run.created", second],
        ["run.completed", second],
      ]);
      if (b.cuts !== undefined) assert.equal(b.cuts, 1);
    }));

  it("tells the same story on both servers", () =>
    withBackend(kind, "reply", async (b) => {
      const run = await b.talon().agent("main").run("hello");
      await run.wait();
      const story = transcript(await collect(run.events())).map((e) => {
        const { type, runId, sessionId, agentId } = e as Record<string, unknown>;
        return { type, runId, sessionId, agentId };
      });
      assert.deepEqual(story, [
        { type: "run.created", runId: "<run_1>", sessionId: "<sess_1>", agentId: "main" },
        { type: "run.started", runId: "<run_1>", sessionId: "<sess_1>", agentId: "main" },
        { type: "assistant.message", runId: "<run_1>", sessionId: "<sess_1>", agentId: "main" },
        { type: "run.completed", runId: "<run_1>", sessionId: "<sess_1>", agentId: "main" },
      ]);
    }));
});

bothServers("approvals", (kind) => {
  it("an approval handler approves once, in the seed's shape", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const run = await b.talon().agent("main").run("write the note");
      const asked: { kind: string; toolName: string | undefined; toolId: string | undefined }[] = [];
      const stop = run.onApproval((request) => {
        asked.push({ kind: request.kind, toolName: request.toolName, toolId: request.toolId });
        // The seed's shape: a policy reads the tool's name.
        return request.kind === "tool" && request.toolName === "write"
          ? request.approveOnce()
          : request.deny({ reason: "only writes" });
      });
      const result = await run.wait();
      stop();
      assert.deepEqual({ status: result.status, text: result.output?.text }, { status: "completed", text: DONE });
      assert.deepEqual(asked, [{ kind: "tool", toolName: "write", toolId: WRITE }]);
      assert.deepEqual(
        (await run.approvals()).map((a) => ({
          toolName: a.info.toolName,
          toolId: a.info.toolId,
          status: a.info.status,
          decision: a.info.decision,
        })),
        [{ toolName: "write", toolId: WRITE, status: "approved", decision: "approve_once" }],
      );
      if (kind === "real") assert.equal(b.note(), WRITE_ARGS.content);
    }));

  it("an async handler approves with a reason", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("write the note");
      run.onApproval(async (request) => {
        // An async policy may ask the gateway (or the app's own service) first.
        const space = await run.toolSpace();
        const known = space.list().some((t) => t.id === request.toolId && t.requiresApproval);
        return known ? request.approveOnce({ reason: "policy: writes in the workspace" }) : request.askUser();
      });
      assert.equal((await run.wait()).status, "completed");
      assert.deepEqual(
        (await run.approvals()).map((a) => ({ status: a.info.status, reason: a.info.reason })),
        [{ status: "approved", reason: "policy: writes in the workspace" }],
      );
    }));

  it("a handler denies and the run goes on without the call", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const run = await b.talon().agent("main").run("write the note");
      run.onApproval((request) => request.deny({ reason: "not today" }));
      assert.equal((await run.wait()).status, "completed");
      assert.deepEqual(
        (await run.approvals()).map((a) => ({
          status: a.info.status,
          decision: a.info.decision,
          reason: a.info.reason,
        })),
        [{ status: "denied", decision: "deny", reason: "not today" }],
      );
      const events = await collect(run.events());
      const types = events.map((e) => e.type).filter((t) => t.startsWith("tool.call.") || t.startsWith("approval."));
      assert.deepEqual(types, ["tool.call.started", "approval.requested", "approval.resolved", "tool.call.failed"]);
      assert.equal(b.note(), undefined);
    }));

  it("askUser leaves the approval to a person; a second decision is a conflict", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("write the note");
      run.onApproval((request) => request.askUser());
      // The person: another client, who finds the pending approval.
      const [pending] = await until("an approval to be pending", async () => {
        const listed = await talon.approvals();
        return listed.length > 0 && listed;
      });
      assert.ok(pending);
      assert.equal((await run.wait({ timeoutMs: 100 })).status, "accepted");
      assert.equal((await pending.approveOnce()).status, "approved");
      await assert.rejects(
        pending.deny({ reason: "too late" }),
        (e: unknown) => e instanceof TalonError && e.code === "conflict" && !e.retryable,
      );
      assert.equal((await run.wait()).status, "completed");
    }));

  it("cancelling a run that waits for an approval cancels the approval; a late answer conflicts", () =>
    withBackend(kind, "approvedWrite", async (b) => {
      const run = await b.talon().agent("main").run("write the note");
      const [approval] = await until("the run to ask for an approval", async () => {
        const listed = await run.approvals();
        return listed.length > 0 && listed;
      });
      await run.cancel({ reason: "changed my mind" });
      assert.equal((await run.wait()).status, "cancelled");
      assert.deepEqual(
        (await run.approvals()).map((a) => a.info.status),
        ["cancelled"],
      );
      assert.ok(approval);
      await assert.rejects(approval.approveOnce(), (e: unknown) => e instanceof TalonError && e.code === "conflict");
      assert.equal((await collect(run.events())).at(-1)?.type, "run.cancelled");
    }));
});

bothServers("questions", (kind) => {
  it("a run's question waits for the app's answer", () =>
    withBackend(kind, "question", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("deploy it");
      const [question] = await until("a question to be asked", async () => {
        const pending = await talon.questions({ runId: run.id, status: "pending" });
        return pending.length > 0 && pending;
      });
      assert.deepEqual(
        { prompt: question?.info.prompt, choices: question?.info.choices, status: question?.info.status },
        { ...QUESTION, status: "pending" },
      );
      assert.ok(question);
      const answered = await question.answer("dev");
      assert.deepEqual({ status: answered.status, answer: answered.answer }, { status: "answered", answer: "dev" });
      assert.equal((await run.wait()).status, "completed");
      const types = (await collect(run.events())).map((e) => e.type).filter((t) => t.startsWith("question."));
      assert.deepEqual(types, ["question.requested", "question.answered"]);
    }));
});

bothServers("artifacts, the session and the ToolSpace", (kind) => {
  it("a run lists its artifacts and downloads each whole, checked against its length", () =>
    withBackend(kind, "reply", async (b) => {
      const talon = b.talon();
      const run = await talon.agent("main").run("hello");
      const result = await run.wait();
      const artifacts = await run.artifacts.list();
      const trajectory = artifacts.find((a) => a.info.type === "trajectory");
      assert.ok(trajectory, "every run leaves its trajectory");
      assert.ok(result.artifacts?.some((a) => a.id === trajectory.id));
      const bytes = await trajectory.bytes();
      assert.equal(bytes.length, trajectory.info.sizeBytes);
      JSON.parse(new TextDecoder().decode(bytes));
      assert.deepEqual((await talon.artifact(trajectory.id)).info, trajectory.info);
      await assert.rejects(
        talon.artifact("art_missing"),
        (e: unknown) => e instanceof TalonError && e.code === "not_found",
      );
    }));

  it("a run knows its session and its tool space", () =>
    withBackend(kind, "reply", async (b) => {
      const read: ToolSummary = {
        id: "openclaw:core:read",
        name: "read",
        source: "core",
        owner: "core",
        description: "Reads a file.",
        arguments: [],
        parameters: { type: "object" },
        approval: "allow",
        requiresApproval: false,
        reach: ["direct"],
        hidden: false,
        readOnly: true,
        writable: false,
        hostCapable: false,
        effect: "read_only",
      };
      b.fake?.setTools([read]);
      const talon = b.talon();
      const session = await talon.agent("main").session("sdk-user-1");
      const run = await talon.agent("main").run({ input: "hello", sessionKey: "sdk-user-1" });
      await run.wait();
      const ofRun = await run.session();
      assert.deepEqual({ id: ofRun.id }, { id: session.id });
      const tools = (await run.toolSpace()).list();
      const found = tools.find((t) => t.name === "read");
      assert.deepEqual(found && { name: found.name, source: found.source, requiresApproval: found.requiresApproval }, {
        name: "read",
        source: "core",
        requiresApproval: false,
      });
    }));
});
