// `useSession`, `useApprovals`, `useEvents`, the provider and the cursor
// stores, against the FakeGateway.
import { act, render, renderHook, waitFor } from "@testing-library/react";
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";

import { Talon, type TalonEvent } from "@talon/sdk";
import { FakeRun } from "@talon/sdk-testing";
import {
  TalonProvider,
  memoryCursorStore,
  useApprovals,
  useEvents,
  useSession,
  useTalon,
  webCursorStore,
} from "@talon/sdk-react";

import { env, present, provider, teardown, until, type Env } from "./helpers.js";

const WRITE = ["openclaw:core:write", { path: "a.txt" }] as const;

describe("useSession", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("sends, and its messages follow the run, and runs sent by another client", async () => {
    const { fake, talon } = present(e);
    const { result } = renderHook(() => useSession("user-42"), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "idle");
    });
    assert.deepEqual(
      {
        key: result.current.session?.key,
        id: result.current.sessionId,
        messages: result.current.messages,
        error: result.current.error,
      },
      { key: "user-42", id: result.current.session?.id, messages: [], error: undefined },
    );
    fake.scriptRun(FakeRun.reply("Hello, user 42."));
    const run = await act(() => result.current.send("Hi"));
    assert.equal(run.info.sessionId, result.current.sessionId);
    await waitFor(() => {
      assert.equal(result.current.messages.length, 2);
    });
    await waitFor(() => {
      assert.equal(result.current.status, "idle");
    });
    assert.deepEqual(
      result.current.messages.map((m) => [m.role, m.text, m.runId]),
      [
        ["user", "Hi", run.id],
        ["assistant", "Hello, user 42.", run.id],
      ],
    );
    // A run another client starts on the session shows up too.
    fake.scriptRun(FakeRun.reply("From elsewhere."));
    const other = await (await talon.session("user-42")).send("Another question");
    await waitFor(() => {
      assert.equal(result.current.messages.length, 4);
    });
    await waitFor(() => {
      assert.equal(result.current.status, "idle");
    });
    assert.deepEqual(
      result.current.messages.slice(2).map((m) => [m.role, m.text, m.runId]),
      [
        ["user", "Another question", other.id],
        ["assistant", "From elsewhere.", other.id],
      ],
    );
    assert.equal(result.current.activeRunId, undefined);
  });

  it("says which run is going on while one is", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("Done.").approval(...WRITE));
    const { result } = renderHook(() => useSession("user-7"), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "idle");
    });
    const run = await act(() => result.current.send("write a.txt"));
    await waitFor(() => {
      assert.deepEqual([result.current.status, result.current.activeRunId], ["running", run.id]);
    });
    await until("the approval", async () => (await talon.approvals()).length === 1);
    const [approval] = await talon.approvals();
    await present(approval).approveOnce();
    await waitFor(() => {
      assert.deepEqual([result.current.status, result.current.activeRunId], ["idle", undefined]);
    });
    await waitFor(() => {
      assert.equal(result.current.messages.at(-1)?.text, "Done.");
    });
  });

  it("a session given as a handle without a key is listed again when its run ends", async () => {
    const { talon } = present(e);
    const session = talon.sessionById((await talon.session("by-id")).id);
    const { result } = renderHook(() => useSession(session), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "idle");
    });
    await act(() => result.current.send("hello"));
    await waitFor(() => {
      assert.equal(result.current.messages.length, 2);
    });
    assert.deepEqual(
      result.current.messages.map((m) => [m.role, m.text]),
      [
        ["user", "hello"],
        ["assistant", "ok"],
      ],
    );
  });
});

describe("useApprovals", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("is seeded from the list, kept live, and a resolved approval leaves", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("a written").approval("openclaw:core:write", { path: "a.txt" }));
    const runA = await talon.agent().run("write a.txt");
    await until("a's approval", async () => (await talon.approvals()).length === 1);
    const { result } = renderHook(() => useApprovals(), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "ready");
    });
    assert.deepEqual(
      result.current.approvals.map((a) => [a.runId, a.arguments]),
      [[runA.id, { path: "a.txt" }]],
    );
    // Live: a new run's approval arrives.
    fake.scriptRun(FakeRun.reply("b written").approval("openclaw:core:write", { path: "b.txt" }));
    const runB = await talon.agent().run("write b.txt");
    await waitFor(() => {
      assert.equal(result.current.approvals.length, 2);
    });
    assert.deepEqual(
      result.current.approvals.map((a) => [a.runId, a.arguments]),
      [
        [runA.id, { path: "a.txt" }],
        [runB.id, { path: "b.txt" }],
      ],
    );
    // Approved here: it leaves at once.
    await act(() => result.current.approve(present(result.current.approvals[0])));
    assert.deepEqual(
      result.current.approvals.map((a) => a.runId),
      [runB.id],
    );
    // Denied by another client: it leaves when the event comes.
    await talon.client.approvals.respond(present(result.current.approvals[0]).id, { decision: "deny" });
    await waitFor(() => {
      assert.deepEqual(result.current.approvals, []);
    });
    assert.deepEqual(
      [(await runA.wait()).status, (await runB.wait()).status, result.current.error],
      ["completed", "completed", undefined],
    );
  });

  it("loses no approval requested between the list and the stream's start", async () => {
    const { fake, talon, streams } = present(e);
    // A run before: the inbox's cursor is just before its first event, not the log's start.
    await (await talon.agent().run("earlier")).wait();
    let release!: () => void;
    streams.holdNext(new Promise<void>((resolve) => (release = resolve)));
    const { result } = renderHook(() => useApprovals(), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "ready");
    });
    // Listed (empty); the stream is held back while an approval is requested.
    fake.scriptRun(FakeRun.reply("late").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    await until("the approval", async () => (await talon.approvals()).length === 1);
    assert.equal(result.current.approvals.length, 0);
    release();
    await waitFor(() => {
      assert.equal(result.current.approvals.length, 1);
    });
    assert.equal(result.current.approvals[0]?.runId, run.id);
  });

  it("filters by run; a cancelled run's approval leaves", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("x").approval(...WRITE));
    fake.scriptRun(FakeRun.reply("y").approval("openclaw:core:write", { path: "b.txt" }));
    const runA = await talon.agent().run("a");
    const runB = await talon.agent().run("b");
    await until("both approvals", async () => (await talon.approvals()).length === 2);
    const { result } = renderHook(() => useApprovals({ runId: runB.id }), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.approvals.length, 1);
    });
    assert.deepEqual(
      result.current.approvals.map((a) => [a.runId, a.arguments]),
      [[runB.id, { path: "b.txt" }]],
    );
    await runB.cancel();
    await waitFor(() => {
      assert.deepEqual(result.current.approvals, []);
    });
    await runA.cancel();
  });
});

describe("useEvents", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  const summary = (events: readonly TalonEvent[]) => events.map((x) => [x.type, x.runId]);

  it("follows the log filtered by type", async () => {
    const { fake, talon, streams } = present(e);
    const { result } = renderHook(() => useEvents({ types: ["run.completed", "run.failed"] }), {
      wrapper: provider(talon),
    });
    await waitFor(() => {
      assert.equal(streams.opened(), 1);
    });
    // Inside act: the events of these runs update the hook while they are started.
    const [first, second] = await act(async () => {
      const one = await talon.agent().run("one");
      fake.scriptRun(FakeRun.reply("no").fail("internal", "boom"));
      return [one, await talon.agent().run("two")] as const;
    });
    await waitFor(() => {
      assert.equal(result.current.events.length, 2);
    });
    assert.deepEqual(summary(result.current.events), [
      ["run.completed", first.id],
      ["run.failed", second.id],
    ]);
    assert.deepEqual([result.current.following, result.current.error], [true, undefined]);
  });

  it("follows one run, filtered, in a bounded buffer", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("A reply long enough for three deltas.").approval(...WRITE));
    const run = await talon.agent().run("go");
    const { result } = renderHook(
      () => ({
        tools: useEvents({ runId: run.id, types: ["tool.call.started", "tool.call.completed"] }),
        last: useEvents({ runId: run.id, limit: 2 }),
      }),
      { wrapper: provider(talon) },
    );
    await waitFor(() => {
      assert.equal(result.current.tools.events.length, 1);
    });
    await talon.client.approvals.respond(present((await talon.approvals())[0]).id, { decision: "approve_once" });
    await waitFor(() => {
      assert.equal(result.current.last.following, false);
    });
    assert.deepEqual(summary(result.current.tools.events), [
      ["tool.call.started", run.id],
      ["tool.call.completed", run.id],
    ]);
    assert.deepEqual(summary(result.current.last.events), [
      ["assistant.message", run.id],
      ["run.completed", run.id],
    ]);
  });
});

describe("useEvents with resumeKey", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("saves its cursor and resumes after it on its next mount", async () => {
    const { talon, streams } = present(e);
    const cursors = memoryCursorStore();
    const options = { types: ["run.completed"] as const, resumeKey: "feed", from: "start" as const };
    const first = renderHook(() => useEvents({ ...options, types: [...options.types] }), {
      wrapper: provider(talon, cursors),
    });
    const one = await act(() => talon.agent().run("one"));
    await waitFor(() => {
      assert.equal(first.result.current.events.length, 1);
    });
    first.unmount();
    await waitFor(() => {
      assert.equal(streams.open(), 0);
    });
    assert.equal(await cursors.get("events:feed"), first.result.current.events[0]?.id);
    const two = await talon.agent().run("two");
    await two.wait();
    const second = renderHook(() => useEvents({ ...options, types: [...options.types] }), {
      wrapper: provider(talon, cursors),
    });
    await waitFor(() => {
      assert.equal(second.result.current.events.length, 1);
    });
    assert.deepEqual(
      [...first.result.current.events, ...second.result.current.events].map((x) => [x.type, x.runId]),
      [
        ["run.completed", one.id],
        ["run.completed", two.id],
      ],
    );
  });
});

describe("the provider and cursor stores", () => {
  afterEach(() => teardown(undefined));

  it("makes one client from options and keeps it across renders", () => {
    const seen: Talon[] = [];
    function Probe() {
      seen.push(useTalon());
      return null;
    }
    const ui = () => (
      <TalonProvider baseUrl="http://127.0.0.1:9" token="talon_x">
        <Probe />
      </TalonProvider>
    );
    const { rerender } = render(ui());
    rerender(ui());
    assert.equal(seen.length, 2);
    assert.ok(seen[0] instanceof Talon);
    assert.equal(seen[1], seen[0]);
  });

  it("a hook outside a provider throws an error that says so", () => {
    // React reports the error it rethrows; keep the output quiet.
    const error = console.error;
    console.error = () => undefined;
    try {
      assert.throws(() => renderHook(() => useApprovals()), {
        message: "useApprovals must be used inside <TalonProvider> (none is above this component)",
      });
    } finally {
      console.error = error;
    }
  });

  it("webCursorStore keeps cursors in sessionStorage (or localStorage), prefixed", () => {
    const session = webCursorStore();
    session.set("run:r1", "42");
    assert.deepEqual([session.get("run:r1"), sessionStorage.getItem("talon:cursor:run:r1")], ["42", "42"]);
    session.delete?.("run:r1");
    assert.deepEqual([session.get("run:r1"), sessionStorage.getItem("talon:cursor:run:r1")], [undefined, null]);
    const local = webCursorStore({ storage: "local", prefix: "app:" });
    local.set("events:feed", "7");
    assert.deepEqual(
      [
        localStorage.getItem("app:events:feed"),
        webCursorStore({ storage: "local", prefix: "app:" }).get("events:feed"),
      ],
      ["7", "7"],
    );
  });
});
