// Scripted background tasks: a held task waited for live (the wait follows
// the stream, never polls, and stops on its signal), added tasks cancelled
// with a reason or failing with an error, a spawning run's events, lists
// paged newest first, and the gateway's refusals for ended and unknown
// tasks.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { FakeRun, FakeTask } from "@talon/sdk-testing";
import { TalonError, refusals } from "@talon/sdk";

import { collect, normalised, talonOf, until, withFake } from "./helpers.js";

describe("scripted tasks", () => {
  it("wait follows the stream until a held task ends, without polling, and stops on its signal", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("spawned").spawn(FakeTask.of("slow work").held()));
      const talon = talonOf(fake);
      const run = await talon.agent().run("go");
      await run.wait();
      const [task] = await collect(run.tasks());
      assert.ok(task);
      assert.equal(task.info?.status, "running");

      const stop = new AbortController();
      const stopped = task.wait({ signal: stop.signal });
      await until("the first wait to follow the stream", () =>
        fake.calls().filter((c) => c.method === "tasks.events").length === 2 ? true : undefined,
      );
      stop.abort(new Error("gave up"));
      await assert.rejects(stopped, /gave up/);

      const waiting = task.wait();
      await until("the second wait to follow the stream", () =>
        fake.calls().filter((c) => c.method === "tasks.events").length === 4 ? true : undefined,
      );
      const finished = fake.finishTask(task.id, "succeeded", "the answer");
      assert.ok(finished);
      assert.deepEqual(await waiting, finished);
      const methods = fake.calls().map((c) => c.method);
      assert.deepEqual(
        methods.filter((m) => m.startsWith("tasks.")),
        ["tasks.list", "tasks.events", "tasks.events", "tasks.events", "tasks.events"],
      );
      assert.equal(fake.finishTask(task.id, "failed", "again"), undefined);
    });
  });

  it("a spawning run calls sessions_spawn and the task's events are its changes", async () => {
    await withFake(async (fake) => {
      fake.scriptRun(FakeRun.reply("spawned").spawn(FakeTask.of("find it").label("finder").result("42")));
      const talon = talonOf(fake);
      const run = await talon.agent().run("go");
      const events = await collect(run.events());
      const ids = new Map<string, string>();
      assert.deepEqual(
        normalised(
          events.filter((e) => e.type.startsWith("tool.call.")).map((e) => ({ type: e.type, data: e.data })),
          ids,
        ),
        [
          {
            type: "tool.call.started",
            data: { callId: "call_1", name: "sessions_spawn", arguments: { task: "find it", label: "finder" } },
          },
          {
            type: "tool.call.completed",
            data: {
              callId: "call_1",
              name: "sessions_spawn",
              durationMs: "<ms>",
              result: { status: "accepted", taskId: "<task_1>" },
            },
          },
        ],
      );
      const [task] = await collect(run.tasks());
      assert.ok(task);
      const ended = await task.wait();
      assert.deepEqual(
        normalised(ended, ids),
        normalised(
          {
            agentId: "main",
            createdAt: 0,
            deliveredAt: 0,
            deliveryStatus: "delivered",
            depth: 1,
            description: "find it",
            endedAt: 0,
            id: task.id,
            kind: "subagent",
            label: "finder",
            notifyPolicy: "done_only",
            result: "42",
            runId: run.id,
            sessionId: run.info.sessionId,
            sessionKey: run.info.sessionKey,
            startedAt: 0,
            status: "succeeded",
            updatedAt: 0,
          },
          ids,
        ),
      );
      const changes = (await collect(task.events())).map((e) => [e.type, (e.data as { status: string }).status]);
      assert.deepEqual(changes, [
        ["task.updated", "queued"],
        ["task.updated", "running"],
        ["task.updated", "succeeded"],
      ]);
    });
  });

  it("an added task is cancelled with its reason, and refuses what an ended task refuses", async () => {
    await withFake(async (fake) => {
      const added = fake.addTask(FakeTask.of("watch the logs").label("watcher").held());
      const talon = talonOf(fake);
      const task = talon.task(added.id);
      assert.deepEqual(await task.get(), added);
      assert.equal((await task.notify("silent")).deliveryStatus, "not_applicable");
      const cancelled = await task.cancel("not needed");
      assert.deepEqual(
        [cancelled.status, cancelled.progressSummary, cancelled.notifyPolicy],
        ["cancelled", "cancelled: not needed", "silent"],
      );
      assert.deepEqual(await task.wait(), cancelled);
      for (const call of [() => task.cancel(), () => task.notify("done_only")]) {
        await assert.rejects(call(), (error: unknown) => {
          const expected = refusals.taskEnded(added.id, "cancelled");
          return error instanceof TalonError && error.code === expected.code && error.message === expected.message;
        });
      }
      await assert.rejects(talon.task("task_nope").cancel(), (error: unknown) => {
        const expected = refusals.notFound("task", "task_nope");
        return error instanceof TalonError && error.code === expected.code && error.message === expected.message;
      });
    });
  });

  it("a failing task carries its error, and lists page newest first", async () => {
    await withFake(async (fake) => {
      const jobs = [0, 1, 2].map((n) => fake.addTask(FakeTask.of(`job ${n}`).takes(5)));
      const doomed = fake.addTask(FakeTask.of("doomed").fail("internal", "it broke"));
      const talon = talonOf(fake);
      const ended = await talon.task(doomed.id).wait();
      assert.deepEqual([ended.status, ended.error?.message], ["failed", "it broke"]);
      const first = await talon.tasks.list({ limit: 2 });
      assert.deepEqual(
        first.tasks.map((t) => t.description),
        ["doomed", "job 2"],
      );
      assert.equal(first.nextCursor, first.tasks[1]?.id);
      const all = await collect(talon.tasks.list({ limit: 2 }));
      assert.deepEqual(
        all.map((t) => t.info?.description),
        ["doomed", "job 2", "job 1", "job 0"],
      );
      // The jobs have ended (on a loaded machine 5 ms can be long): none is
      // in the running list below.
      for (const job of jobs) assert.equal((await talon.task(job.id).wait()).status, "succeeded");
      // Paging goes on from a cursor whose task has left the filter meanwhile.
      for (const n of [3, 4, 5]) fake.addTask(FakeTask.of(`held ${n}`).held());
      const cancelled: string[] = [];
      for await (const task of talon.tasks.list({ status: ["running"], limit: 1 })) {
        cancelled.push((await task.cancel()).description ?? "");
      }
      assert.deepEqual(cancelled, ["held 5", "held 4", "held 3"]);
    });
  });
});
