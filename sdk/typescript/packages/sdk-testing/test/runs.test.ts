// Scripted runs through @talon/sdk: a reply, events and delays, approvals
// approved and denied (and cancelled), questions, artifacts downloaded and
// checked against their length, failures and time limits; whole values,
// with ids and clock readings normalised.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";
import { TalonError, type TalonEvent } from "@talon/sdk";

import { collect, normalised, talonOf, until, withFake } from "./helpers.js";

/** A run's events as a transcript: types and payloads, normalised. */
function transcript(events: TalonEvent[]): unknown {
  return normalised(events.map((e) => ({ type: e.type, data: e.data })));
}

describe("a scripted run", () => {
  it("replies as the mock model streams, with the gateway's envelopes and result", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Hello from the SDK suite."));
      const talon = talonOf(fake);
      const run = await talon.agent().run("What do my notes say?");
      assert.equal(run.info.status, "queued");
      const events = await collect(run.events());
      const result = await run.wait();
      const ids = new Map<string, string>();
      // Event 1 is the run's session's `session.created`.
      assert.deepEqual(normalised(events, ids), [
        {
          version: 1,
          id: "2",
          ts: "<time>",
          type: "run.created",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: { input: "What do my notes say?" },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "3",
          ts: "<time>",
          type: "run.started",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: {
            model: "mock-model",
            surface: "direct",
            tools: ["edit", "exec", "grep", "list", "read", "write", "ask_user"],
          },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "4",
          ts: "<time>",
          type: "assistant.delta",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: { text: "Hello fr" },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "5",
          ts: "<time>",
          type: "assistant.delta",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: { text: "om the S" },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "6",
          ts: "<time>",
          type: "assistant.delta",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: { text: "DK suite" },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "7",
          ts: "<time>",
          type: "assistant.delta",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: { text: "." },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "8",
          ts: "<time>",
          type: "assistant.message",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: {
            finishReason: "stop",
            text: "Hello from the SDK suite.",
            toolCalls: 0,
            usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
          },
          sessionKey: "main:<sess_1>",
        },
        {
          version: 1,
          id: "10",
          ts: "<time>",
          type: "run.completed",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          agentId: "main",
          requestId: "<req_1>",
          data: {
            durationMs: "<ms>",
            telemetry: {
              bridgeCalls: 0,
              bytesSent: 0,
              called: [],
              catalogBySource: {},
              catalogSize: 7,
              codeRuns: 0,
              describes: 0,
              execs: 0,
              modelCalls: 1,
              promptBytes: 0,
              searches: 0,
              surface: "direct",
              toolBytes: 0,
              visibleTools: 7,
              waits: 0,
            },
            text: "Hello from the SDK suite.",
            toolCalls: 0,
            turns: 1,
            usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
          },
          sessionKey: "main:<sess_1>",
        },
      ]);
      assert.deepEqual(normalised(result, ids), {
        artifacts: [
          {
            createdAt: "<time>",
            expiresAt: "<time>",
            id: "<art_1>",
            mimeType: "application/json",
            runId: "<run_1>",
            sessionId: "<sess_1>",
            sizeBytes: result.artifacts?.[0]?.sizeBytes,
            title: "Trajectory of run <run_1>",
            type: "trajectory",
          },
        ],
        endedAt: "<time>",
        output: { text: "Hello from the SDK suite." },
        runId: "<run_1>",
        sessionId: "<sess_1>",
        sessionKey: "main:<sess_1>",
        startedAt: "<time>",
        status: "completed",
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      });
      // The trajectory is announced on the session, after the terminal event.
      const page = await talon.client.runs.events(run.id);
      assert.deepEqual({ done: page.done, count: page.events.length }, { done: true, count: 8 });
      const trajectory = await talon.artifact(result.artifacts?.[0]?.id ?? "");
      const document = JSON.parse(new TextDecoder().decode(await trajectory.bytes())) as {
        events: unknown[];
        status: string;
      };
      assert.deepEqual({ status: document.status, events: document.events.length }, { status: "completed", events: 8 });
      const messages = await (await run.session()).messages();
      assert.deepEqual(normalised(messages.messages, ids), [
        {
          createdAt: "<time>",
          id: `msg_${run.id}_0000`,
          role: "user",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          text: "What do my notes say?",
        },
        {
          createdAt: "<time>",
          id: `msg_${run.id}_0001`,
          role: "assistant",
          runId: "<run_1>",
          sessionId: "<sess_1>",
          text: "Hello from the SDK suite.",
        },
      ]);
    });
  });

  it("plays events and delays in order, and replies ok when unscripted", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(
        FakeRun.reply("Done.")
          .event({ type: "thinking.delta", data: { text: "hmm" } })
          .delay(30)
          .event({ type: "git.branch", data: { action: "created", branch: "fix" } }),
      );
      const talon = talonOf(fake);
      const started = Date.now();
      const scripted = await talon.agent().run("go");
      const events = await collect(scripted.events());
      assert.ok(Date.now() - started >= 30);
      assert.deepEqual(
        events.map((e) => e.type),
        [
          "run.created",
          "run.started",
          "thinking.delta",
          "git.branch",
          "assistant.delta",
          "assistant.message",
          "run.completed",
        ],
      );
      assert.deepEqual(events[3]?.data, { action: "created", branch: "fix" });
      const plain = await talon.agent().run("again");
      assert.deepEqual((await plain.wait()).output, { text: "ok" });
    });
  });

  it("waits for an approval, then goes on approved", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Done.").approval("openclaw:core:write", { path: "note.txt", content: "hi" }));
      const talon = talonOf(fake);
      const run = await talon.agent().run("write the note");
      const asked: unknown[] = [];
      const statuses: string[] = [];
      const stop = run.onApproval(async (request) => {
        // The run says it waits, as the gateway's does.
        statuses.push((await talon.client.runs.get(run.id)).status);
        asked.push(
          normalised({
            kind: request.kind,
            toolName: request.toolName,
            toolId: request.toolId,
            summary: request.summary,
            risk: request.risk,
            decisions: request.decisions,
          }),
        );
        return request.approveOnce({ reason: "fine" });
      });
      const result = await run.wait();
      stop();
      assert.equal(result.status, "completed");
      assert.deepEqual(statuses, ["waiting"]);
      assert.deepEqual(asked, [
        {
          kind: "tool",
          toolName: "write",
          toolId: "openclaw:core:write",
          summary: 'write {"content":"hi","path":"note.txt"}',
          risk: "medium",
          decisions: ["approve_once", "approve_session", "approve_always", "deny"],
        },
      ]);
      const events = await collect(run.events());
      assert.deepEqual(transcript(events.filter((e) => e.type.startsWith("tool.") || e.type.startsWith("approval."))), [
        {
          type: "tool.call.started",
          data: { arguments: { content: "hi", path: "note.txt" }, callId: "call_1", name: "write" },
        },
        {
          type: "approval.requested",
          data: {
            arguments: { content: "hi", path: "note.txt" },
            createdAt: "<time>",
            decisions: ["approve_once", "approve_session", "approve_always", "deny"],
            expiresAt: "<time>",
            id: "<appr_1>",
            kind: "tool",
            reusable: true,
            risk: "medium",
            runId: "<run_1>",
            sessionId: "<sess_1>",
            status: "pending",
            summary: 'write {"content":"hi","path":"note.txt"}',
            toolCallId: "call_1",
            toolId: "openclaw:core:write",
            toolName: "write",
          },
        },
        {
          type: "approval.resolved",
          data: { approvalId: "<appr_1>", decision: "approve_once", reason: "fine", reused: false, status: "approved" },
        },
        {
          type: "tool.call.completed",
          data: { callId: "call_1", durationMs: "<ms>", name: "write", result: { ok: true } },
        },
      ]);
      const terminal = events.at(-1);
      assert.deepEqual(normalised(terminal?.data), {
        durationMs: "<ms>",
        telemetry: {
          bridgeCalls: 0,
          bytesSent: 0,
          called: [],
          catalogBySource: {},
          catalogSize: 7,
          codeRuns: 0,
          describes: 0,
          execs: 0,
          modelCalls: 2,
          promptBytes: 0,
          searches: 0,
          surface: "direct",
          toolBytes: 0,
          visibleTools: 7,
          waits: 0,
        },
        text: "Done.",
        toolCalls: 1,
        turns: 2,
        usage: { inputTokens: 20, outputTokens: 10, totalTokens: 30 },
      });
    });
  });

  it("is denied: the call is blocked and the run goes on", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Done.").approval("write", { path: "x" }));
      const talon = talonOf(fake);
      const run = await talon.agent().run("write");
      const stop = run.onApproval((request) => request.deny({ reason: "not today" }));
      const events = await collect(run.events());
      stop();
      assert.deepEqual(
        transcript(events.filter((e) => ["approval.resolved", "tool.call.failed", "run.completed"].includes(e.type))),
        [
          {
            type: "approval.resolved",
            data: { approvalId: "<appr_1>", decision: "deny", reason: "not today", reused: false, status: "denied" },
          },
          {
            type: "tool.call.failed",
            data: {
              callId: "call_1",
              durationMs: "<ms>",
              error: { error: "the call of write was denied: not today", status: "blocked" },
              name: "write",
              status: "blocked",
            },
          },
          {
            type: "run.completed",
            data: {
              durationMs: "<ms>",
              telemetry: {
                bridgeCalls: 0,
                bytesSent: 0,
                called: [],
                catalogBySource: {},
                catalogSize: 7,
                codeRuns: 0,
                describes: 0,
                execs: 0,
                modelCalls: 2,
                promptBytes: 0,
                searches: 0,
                surface: "direct",
                toolBytes: 0,
                visibleTools: 7,
                waits: 0,
              },
              text: "Done.",
              toolCalls: 1,
              turns: 2,
              usage: { inputTokens: 20, outputTokens: 10, totalTokens: 30 },
            },
          },
        ],
      );
    });
  });

  it("cancelled while it waits: the approval ends cancelled and a late answer is a conflict", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Done.").approval("write", { path: "x" }));
      const talon = talonOf(fake);
      const run = await talon.agent().run("write");
      const [approval] = await until("the approval", async () => {
        const pending = await run.approvals({ status: "pending" });
        return pending.length > 0 ? pending : undefined;
      });
      const cancelled = await run.cancel({ reason: "changed my mind" });
      assert.equal(cancelled.status, "cancelled");
      assert.deepEqual(normalised((await run.approvals()).map((a) => a.info.status)), ["cancelled"]);
      await assert.rejects(
        approval?.approveOnce() ?? Promise.reject(new Error("none")),
        (e: unknown) => e instanceof TalonError && e.code === "conflict" && e.status === 409,
      );
      const events = await collect(run.events());
      assert.deepEqual(transcript(events.slice(-3)), [
        {
          type: "approval.resolved",
          data: { approvalId: "<appr_1>", reason: "the run stopped waiting", reused: false, status: "cancelled" },
        },
        {
          type: "tool.call.failed",
          data: {
            callId: "call_1",
            durationMs: "<ms>",
            error: { error: "the run was aborted", status: "aborted" },
            name: "write",
            status: "aborted",
          },
        },
        {
          type: "run.cancelled",
          data: {
            durationMs: "<ms>",
            telemetry: {
              bridgeCalls: 0,
              bytesSent: 0,
              called: [],
              catalogBySource: {},
              catalogSize: 7,
              codeRuns: 0,
              describes: 0,
              execs: 0,
              modelCalls: 1,
              promptBytes: 0,
              searches: 0,
              surface: "direct",
              toolBytes: 0,
              visibleTools: 7,
              waits: 0,
            },
            error: "the run was aborted",
            toolCalls: 1,
            turns: 1,
            usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
          },
        },
      ]);
    });
  });

  it("asks a question and waits for the app's answer", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("Thanks.").question("Which branch?", ["main", "dev"]));
      const talon = talonOf(fake);
      const run = await talon.agent().run("deploy");
      const [question] = await until("the question", async () => {
        const pending = await talon.questions({ runId: run.id, status: "pending" });
        return pending.length > 0 ? pending : undefined;
      });
      assert.ok(question);
      await assert.rejects(
        question.answer("prod"),
        (e: unknown) => e instanceof TalonError && e.code === "invalid_request",
      );
      const answered = await question.answer("dev");
      assert.deepEqual(normalised(answered), {
        answer: "dev",
        answeredAt: "<time>",
        choices: ["main", "dev"],
        createdAt: "<time>",
        expiresAt: "<time>",
        id: "<q_1>",
        prompt: "Which branch?",
        runId: "<run_1>",
        sessionId: "<sess_1>",
        status: "answered",
        toolCallId: "call_1",
      });
      assert.equal((await run.wait()).status, "completed");
      const events = await collect(run.events());
      assert.deepEqual(
        events.filter((e) => e.type.startsWith("question.") || e.type.startsWith("tool.")).map((e) => e.type),
        ["tool.call.started", "question.requested", "question.answered", "tool.call.completed"],
      );
      assert.deepEqual(normalised(events.find((e) => e.type === "question.answered")?.data), {
        answer: "dev",
        questionId: "<q_1>",
      });
    });
  });

  it("produces artifacts, listed and downloaded whole and in ranges", async () => {
    await withFake(async (fake) => {
      const bytes = new Uint8Array(1000).map((_, i) => i % 251);
      fake.scriptRun(
        FakeRun.reply("Made.").artifact("report.md", "file", "# Report\n").artifact("blob.bin", "media", bytes),
      );
      const talon = talonOf(fake);
      const run = await talon.agent().run("make");
      const result = await run.wait();
      const artifacts = await run.artifacts.list();
      assert.deepEqual(
        artifacts.map((a) =>
          normalised({
            type: a.info.type,
            title: a.info.title,
            mimeType: a.info.mimeType,
            sizeBytes: a.info.sizeBytes,
          }),
        ),
        [
          { type: "file", title: "report.md", mimeType: "text/markdown", sizeBytes: 9 },
          { type: "media", title: "blob.bin", mimeType: "application/octet-stream", sizeBytes: 1000 },
          {
            type: "trajectory",
            title: "Trajectory of run <run_1>",
            mimeType: "application/json",
            sizeBytes: artifacts[2]?.info.sizeBytes,
          },
        ],
      );
      assert.deepEqual(
        result.artifacts?.map((a) => a.id),
        artifacts.map((a) => a.id),
      );
      for (const artifact of artifacts) {
        const got = await artifact.bytes();
        assert.equal(got.length, artifact.info.sizeBytes);
      }
      assert.deepEqual(await artifacts[1]?.bytes(), bytes);
      const blob = artifacts[1]?.id ?? "";
      const download = await talon.client.artifacts.download(blob);
      assert.equal(download.url, `/v1/artifacts/${blob}/content`);
      const ranged = await fetch(`${fake.url}${download.url}`, {
        headers: { authorization: `Bearer ${fake.token}`, range: "bytes=10-19" },
      });
      assert.deepEqual(
        {
          status: ranged.status,
          range: ranged.headers.get("content-range"),
          length: ranged.headers.get("content-length"),
          body: [...new Uint8Array(await ranged.arrayBuffer())],
        },
        { status: 206, range: "bytes 10-19/1000", length: "10", body: [...bytes.slice(10, 20)] },
      );
    });
  });

  it("fails with the scripted error, and times out past its own limit", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("never").fail("unavailable", "the model is down"));
      fake.scriptRun(FakeRun.reply("late").delay(10_000));
      const talon = talonOf(fake);
      const failing = await talon.agent().run("try");
      const failed = await failing.wait();
      assert.deepEqual(normalised((await collect(failing.events())).at(-1)?.data), {
        durationMs: "<ms>",
        error: "the model is down",
        telemetry: {
          bridgeCalls: 0,
          bytesSent: 0,
          called: [],
          catalogBySource: {},
          catalogSize: 7,
          codeRuns: 0,
          describes: 0,
          execs: 0,
          modelCalls: 1,
          promptBytes: 0,
          searches: 0,
          surface: "direct",
          toolBytes: 0,
          visibleTools: 7,
          waits: 0,
        },
        toolCalls: 0,
        turns: 1,
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      });
      assert.deepEqual(normalised(failed), {
        artifacts: [
          {
            createdAt: "<time>",
            expiresAt: "<time>",
            id: "<art_1>",
            mimeType: "application/json",
            runId: "<run_1>",
            sessionId: "<sess_1>",
            sizeBytes: failed.artifacts?.[0]?.sizeBytes,
            title: "Trajectory of run <run_1>",
            type: "trajectory",
          },
        ],
        endedAt: "<time>",
        error: { code: "unavailable", message: "the model is down", retryable: true },
        runId: "<run_1>",
        sessionId: "<sess_1>",
        sessionKey: "main:<sess_1>",
        startedAt: "<time>",
        status: "failed",
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      });
      const slow = await talon.agent().run({ input: "slow", timeoutMs: 50 });
      const timedOut = await slow.wait();
      assert.deepEqual(normalised(timedOut.error), {
        code: "timeout",
        message: "the run exceeded its time limit of 50 ms",
        retryable: true,
      });
      assert.equal(timedOut.status, "timed_out");
      const last = (await collect(slow.events())).at(-1);
      assert.deepEqual(normalised({ type: last?.type, data: last?.data }), {
        type: "run.timed_out",
        data: {
          durationMs: "<ms>",
          error: "the run exceeded its time limit of 50 ms",
          telemetry: {
            bridgeCalls: 0,
            bytesSent: 0,
            called: [],
            catalogBySource: {},
            catalogSize: 7,
            codeRuns: 0,
            describes: 0,
            execs: 0,
            modelCalls: 1,
            promptBytes: 0,
            searches: 0,
            surface: "direct",
            toolBytes: 0,
            visibleTools: 7,
            waits: 0,
          },
          toolCalls: 0,
          turns: 1,
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        },
      });
    });
  });
});
