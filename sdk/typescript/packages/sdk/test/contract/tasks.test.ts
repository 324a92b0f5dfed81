// Background tasks through the high-level layer, against both servers: a
// run that spawns a sub-agent (the real gateway's mock model calls
// `sessions_spawn`; the fake plays `FakeRun.spawn`) lists it in
// `run.tasks()` and `talon.tasks.list()`; `task.wait()` follows the stream
// to its end; an ended task refuses `cancel` and `notify` with the table's
// `task_ended`.
import assert from "node:assert/strict";
import { it } from "node:test";

import { TalonError, refusals, type Task, type protocol as P } from "@talon/sdk";

import { DONE, SPAWNED, bothServers, collect, withBackend } from "./backend.js";

/** The statuses of a task's `task.updated` events, each change once. */
async function statuses(task: Task): Promise<P.TaskStatus[]> {
  const out: P.TaskStatus[] = [];
  for await (const event of task.events()) {
    if (event.type !== "task.updated") continue;
    assert.equal(event.taskId, task.id);
    const status = (event.data as P.Task).status;
    if (out.at(-1) !== status) out.push(status);
  }
  return out;
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof TalonError, String(error));
    return { code: error.code, message: error.message };
  }
  assert.fail("not refused");
}

bothServers("tasks", (kind) => {
  it("a spawned sub-agent is listed, waited for, and refuses changes once ended", () =>
    withBackend(kind, "spawn", async (b) => {
      const talon = b.talon();
      const run = await talon.agent().run("plan it");
      await run.wait();
      const [task, ...more] = await collect(run.tasks());
      assert.ok(task);
      assert.deepEqual(more, []);
      assert.equal(task.info?.runId, run.id);
      const ended = await task.wait();
      assert.deepEqual(
        {
          kind: ended.kind,
          status: ended.status,
          label: ended.label,
          description: ended.description,
          result: ended.result,
          runId: ended.runId,
          depth: ended.depth,
        },
        {
          kind: "subagent",
          status: "succeeded",
          label: SPAWNED.label,
          description: SPAWNED.task,
          result: DONE,
          runId: run.id,
          depth: 1,
        },
      );
      assert.equal(task.info, ended);

      const succeeded = await collect(talon.tasks.list({ status: ["succeeded"], limit: 1 }));
      assert.deepEqual(
        succeeded.map((t) => t.id),
        [task.id],
      );
      const firstPage = await talon.tasks.list({ status: ["running"] });
      assert.deepEqual(firstPage, { tasks: [] });
      assert.equal((await talon.task(task.id).get()).status, "succeeded");
      assert.deepEqual(await statuses(task), ["queued", "running", "succeeded"]);

      const endedRefusal = refusals.taskEnded(task.id, "succeeded");
      assert.deepEqual(await refusal(task.cancel("too late")), {
        code: endedRefusal.code,
        message: endedRefusal.message,
      });
      assert.deepEqual(await refusal(task.notify("silent")), {
        code: endedRefusal.code,
        message: endedRefusal.message,
      });
      const missing = refusals.notFound("task", "task_nope");
      assert.deepEqual(await refusal(talon.task("task_nope").get()), { code: missing.code, message: missing.message });
    }));
});
