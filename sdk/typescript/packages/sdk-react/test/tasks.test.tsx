// `useTasks` against the FakeGateway: seeded from the list, kept live from
// the log's `task.updated` (a new task arrives, a change replaces its old
// version, a task leaving the filter's statuses leaves), one stream and no
// polling, and cancelling through the hook.
import { act, renderHook, waitFor } from "@testing-library/react";
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";

import { FakeRun, FakeTask } from "@talon/sdk-testing";
import { useTasks } from "@talon/sdk-react";

import { env, present, provider, teardown, type Env } from "./helpers.js";

describe("useTasks", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("is seeded from the list and follows task.updated, never polling", async () => {
    const { fake, talon, streams } = present(e);
    const first = fake.addTask(FakeTask.of("first").held());
    const { result } = renderHook(() => useTasks(), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "ready");
    });
    assert.deepEqual(
      result.current.tasks.map((t) => [t.description, t.status]),
      [["first", "running"]],
    );
    // A run that spawns: its task arrives, newest first.
    fake.scriptRun(FakeRun.reply("spawned").spawn(FakeTask.of("second").held()));
    const run = await talon.agent().run("go");
    await waitFor(() => {
      assert.equal(result.current.tasks.length, 2);
    });
    assert.deepEqual(
      result.current.tasks.map((t) => [t.description, t.status, t.runId ?? null]),
      [
        ["second", "running", run.id],
        ["first", "running", null],
      ],
    );
    // A change replaces the task's old version.
    fake.finishTask(first.id, "succeeded", "done");
    await waitFor(() => {
      assert.equal(result.current.tasks[1]?.status, "succeeded");
    });
    assert.deepEqual(
      result.current.tasks.map((t) => [t.description, t.status, t.result ?? null]),
      [
        ["second", "running", null],
        ["first", "succeeded", "done"],
      ],
    );
    assert.equal(streams.opened(), 1);
    const listed = fake.calls().filter((c) => c.method === "tasks.list").length;
    assert.equal(listed, 2, "one call for the cursor, one for the list; none after");
  });

  it("a task leaving the filter's statuses leaves, and cancel goes through the hook", async () => {
    const { fake, talon } = present(e);
    const a = fake.addTask(FakeTask.of("a").held());
    fake.addTask(FakeTask.of("b").held());
    const { result } = renderHook(() => useTasks({ status: ["queued", "running"] }), {
      wrapper: provider(talon),
    });
    await waitFor(() => {
      assert.equal(result.current.tasks.length, 2);
    });
    const cancelled = await act(() => result.current.cancel(a.id, "not needed"));
    assert.equal(cancelled.status, "cancelled");
    assert.deepEqual(
      result.current.tasks.map((t) => t.description),
      ["b"],
    );
    // A task added later that is already running arrives; one that ends leaves.
    const c = fake.addTask(FakeTask.of("c").held());
    await waitFor(() => {
      assert.equal(result.current.tasks.length, 2);
    });
    fake.finishTask(c.id, "failed", "broke");
    await waitFor(() => {
      assert.deepEqual(
        result.current.tasks.map((t) => t.description),
        ["b"],
      );
    });
    assert.equal(result.current.error, undefined);
  });
});
