// `useRun` against the FakeGateway: streaming text and the result,
// approvals and questions answered from the hook, cancel beside detach,
// a remount that resumes from the stored cursor, a dropped stream,
// `cursor_expired`, a failed run, and StrictMode.
import { act, renderHook, waitFor } from "@testing-library/react";
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";

import { FakeRun } from "@talon/sdk-testing";
import { memoryCursorStore, useRun, type RunState } from "@talon/sdk-react";

import { env, ids, kinds, logOf, present, provider, recordingCursors, teardown, until, type Env } from "./helpers.js";

const REPLY = "Hello from the fake gateway.";
const WRITE = ["openclaw:core:write", { path: "a.txt" }] as const;

/** What a test compares of the state, whole: everything but the events (compared by id) and the result (by its status and text). */
function view(s: RunState) {
  return {
    runId: s.runId,
    status: s.status,
    text: s.text,
    result: s.result
      ? { status: s.result.status, text: s.result.output?.text, error: s.result.error?.code }
      : undefined,
    pendingApprovals: s.pendingApprovals.map((a) => [a.toolName, a.toolId, a.arguments, a.status]),
    pendingQuestions: s.pendingQuestions.map((q) => [q.prompt, q.choices, q.status]),
    error: s.error?.code,
    following: s.following,
    detached: s.detached,
    cursor: s.cursor,
  };
}

describe("useRun", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("streams the assistant's text and ends with the run's result", async () => {
    const { fake, talon, streams } = present(e);
    fake.scriptRun(FakeRun.reply(REPLY));
    const run = await talon.agent().run("hi");
    const texts: string[] = [];
    const { result } = renderHook(
      () => {
        const state = useRun(run);
        if (texts.at(-1) !== state.text) texts.push(state.text);
        return state;
      },
      { wrapper: provider(talon) },
    );
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    const log = await logOf(talon, run.id);
    assert.deepEqual(view(result.current), {
      runId: run.id,
      status: "completed",
      text: REPLY,
      result: { status: "completed", text: REPLY, error: undefined },
      pendingApprovals: [],
      pendingQuestions: [],
      error: undefined,
      following: false,
      detached: false,
      cursor: log.at(-1)?.id,
    });
    assert.deepEqual(ids(result.current.events), ids(log));
    assert.deepEqual(kinds(result.current.events), [
      "run.created",
      "run.started",
      "assistant.message",
      "run.completed",
    ]);
    // Every text shown on the way was the reply so far.
    assert.ok(
      texts.every((t) => REPLY.startsWith(t)),
      texts.join(" | "),
    );
    assert.equal(streams.opened(), 1);
  });

  it("approves a pending approval from the hook; it leaves the list", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("Wrote a.txt.").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    const { result } = renderHook(() => useRun(run.id), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.pendingApprovals.length, 1);
    });
    assert.deepEqual(view(result.current).pendingApprovals, [
      ["write", "openclaw:core:write", { path: "a.txt" }, "pending"],
    ]);
    assert.equal(result.current.status, "waiting");
    const decided = await act(() =>
      result.current.approve(present(result.current.pendingApprovals[0]), { reason: "fine" }),
    );
    assert.deepEqual(
      { status: decided.status, decision: decided.decision, reason: decided.reason },
      { status: "approved", decision: "approve_once", reason: "fine" },
    );
    assert.deepEqual(result.current.pendingApprovals, []);
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.deepEqual(view(result.current).result, { status: "completed", text: "Wrote a.txt.", error: undefined });
    assert.deepEqual(kinds(result.current.events), [
      "run.created",
      "run.started",
      "assistant.message",
      "tool.call.started",
      "approval.requested",
      "approval.resolved",
      "tool.call.completed",
      "assistant.message",
      "run.completed",
    ]);
  });

  it("answers a question from the hook", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("You chose b.").question("Which?", ["a", "b"]));
    const run = await talon.agent().run("ask me");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.pendingQuestions.length, 1);
    });
    assert.deepEqual(
      { status: result.current.status, questions: view(result.current).pendingQuestions },
      { status: "waiting", questions: [["Which?", ["a", "b"], "pending"]] },
    );
    const answered = await act(() => result.current.answer(present(result.current.pendingQuestions[0]), "b"));
    assert.deepEqual({ status: answered.status, answer: answered.answer }, { status: "answered", answer: "b" });
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.deepEqual(
      { ...view(result.current), cursor: undefined },
      {
        runId: run.id,
        status: "completed",
        text: "You chose b.",
        result: { status: "completed", text: "You chose b.", error: undefined },
        pendingApprovals: [],
        pendingQuestions: [],
        error: undefined,
        following: false,
        detached: false,
        cursor: undefined,
      },
    );
    const answeredEvent = result.current.events.find((x) => x.type === "question.answered");
    assert.deepEqual(answeredEvent?.data, { answer: "b", questionId: answered.id });
  });

  it("cancel() cancels the run: its approval is cancelled and the hook sees it end", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("never").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.status, "waiting");
    });
    await act(() => result.current.cancel({ reason: "changed my mind" }));
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.deepEqual(
      { ...view(result.current), text: undefined, cursor: undefined },
      {
        runId: run.id,
        status: "cancelled",
        text: undefined,
        result: { status: "cancelled", text: undefined, error: undefined },
        pendingApprovals: [],
        pendingQuestions: [],
        error: undefined,
        following: false,
        detached: false,
        cursor: undefined,
      },
    );
    const resolved = result.current.events.find((x) => x.type === "approval.resolved");
    assert.equal((resolved?.data as { status?: string }).status, "cancelled");
    assert.equal(result.current.events.at(-1)?.type, "run.cancelled");
  });

  it("detach() stops following; the run goes on and completes on the gateway", async () => {
    const { fake, talon, streams } = present(e);
    fake.scriptRun(FakeRun.reply("Done without you.").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.equal(result.current.pendingApprovals.length, 1);
    });
    const before = result.current.events;
    act(() => {
      result.current.detach();
    });
    await waitFor(() => {
      assert.equal(streams.open(), 0);
    });
    // Another client decides; the run completes on the gateway.
    await talon.client.approvals.respond(present(result.current.pendingApprovals[0]).id, { decision: "approve_once" });
    const ended = await run.wait();
    assert.deepEqual(
      { status: ended.status, text: ended.output?.text },
      { status: "completed", text: "Done without you." },
    );
    // The hook kept what it had and learnt nothing more.
    assert.equal(result.current.events, before);
    assert.deepEqual(
      { ...view(result.current), pendingApprovals: undefined },
      {
        runId: run.id,
        status: "waiting",
        text: "",
        result: undefined,
        pendingApprovals: undefined,
        pendingQuestions: [],
        error: undefined,
        following: false,
        detached: true,
        cursor: before.at(-1)?.id,
      },
    );
    assert.equal(streams.opened(), 1);
  });

  it("a remount resumes after the stored cursor: state rebuilt, no event twice, none missing", async () => {
    const { fake, talon, streams } = present(e);
    const cursors = recordingCursors(memoryCursorStore());
    fake.scriptRun(
      FakeRun.reply("Both written.")
        .event({ type: "assistant.message", data: { text: "Let me write two files.", toolCalls: 2 } })
        .approval("openclaw:core:write", { path: "a.txt" })
        .approval("openclaw:core:write", { path: "b.txt" }),
    );
    const run = await talon.agent().run("write a.txt and b.txt");
    const first = renderHook(() => useRun(run.id), { wrapper: provider(talon, cursors) });
    await waitFor(() => {
      assert.equal(first.result.current.pendingApprovals.length, 1);
    });
    const [approvalA] = first.result.current.pendingApprovals;
    first.unmount();
    await waitFor(() => {
      assert.equal(streams.open(), 0);
    });
    // What the first mount delivered, each event's id saved as it went.
    const delivered = cursors.sets.map(([, id]) => id);
    assert.deepEqual(delivered, ids(first.result.current.events));
    // Meanwhile the run goes on: a is approved elsewhere, and it asks for b.
    await talon.client.approvals.respond(present(approvalA).id, { decision: "approve_once" });
    await until("the second approval", async () => (await talon.approvals()).length === 1);
    // A new provider (as after a reload) with the same cursor store.
    const second = renderHook(() => useRun(run.id), { wrapper: provider(talon, cursors) });
    await waitFor(() => {
      assert.equal(second.result.current.pendingApprovals.length, 1);
    });
    assert.deepEqual(
      { ...view(second.result.current), cursor: undefined },
      {
        runId: run.id,
        status: "waiting",
        // Rebuilt from the log before the cursor (that event is not delivered again).
        text: "Let me write two files.",
        result: undefined,
        pendingApprovals: [["write", "openclaw:core:write", { path: "b.txt" }, "pending"]],
        pendingQuestions: [],
        error: undefined,
        following: true,
        detached: false,
        cursor: undefined,
      },
    );
    await act(() => second.result.current.approve(present(second.result.current.pendingApprovals[0])));
    await waitFor(() => {
      assert.ok(second.result.current.result);
    });
    const log = await logOf(talon, run.id);
    assert.deepEqual([...delivered, ...ids(second.result.current.events)], ids(log));
    assert.deepEqual(
      { status: second.result.current.status, text: second.result.current.text },
      { status: "completed", text: "Both written." },
    );
  });

  it("a remount after the run ended reads the rest of its log and its result, with no stream", async () => {
    const { fake, talon, streams } = present(e);
    const cursors = memoryCursorStore();
    fake.scriptRun(FakeRun.reply("Finished meanwhile.").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    const first = renderHook(() => useRun(run), { wrapper: provider(talon, cursors) });
    await waitFor(() => {
      assert.equal(first.result.current.pendingApprovals.length, 1);
    });
    const seen = first.result.current.events;
    const [approval] = first.result.current.pendingApprovals;
    first.unmount();
    await waitFor(() => {
      assert.equal(streams.open(), 0);
    });
    await talon.client.approvals.respond(present(approval).id, { decision: "approve_once" });
    await run.wait();
    const second = renderHook(() => useRun(run.id), { wrapper: provider(talon, cursors) });
    await waitFor(() => {
      assert.ok(second.result.current.result);
    });
    const log = await logOf(talon, run.id);
    assert.deepEqual([...ids(seen), ...ids(second.result.current.events)], ids(log));
    assert.deepEqual(
      {
        status: second.result.current.status,
        text: second.result.current.text,
        pending: second.result.current.pendingApprovals,
      },
      { status: "completed", text: "Finished meanwhile.", pending: [] },
    );
    assert.equal(streams.opened(), 1); // the first mount's: none for the second
  });

  it("a dropped stream resumes from the last event: no duplicate, no gap", async () => {
    const { fake, talon, streams } = present(e);
    fake.inject({ kind: "dropStream", afterEvents: 2 });
    fake.scriptRun(FakeRun.reply(REPLY).delay(20));
    const run = await talon.agent().run("hi");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.equal(streams.opened(), 2);
    const log = await logOf(talon, run.id);
    assert.deepEqual(ids(result.current.events), ids(log));
    assert.deepEqual({ text: result.current.text, error: result.current.error }, { text: REPLY, error: undefined });
  });

  it("a cursor the gateway no longer has surfaces as cursor_expired, and is forgotten", async () => {
    const { fake, talon } = present(e);
    const cursors = recordingCursors(memoryCursorStore());
    fake.inject({ kind: "dropStream", afterEvents: 2 });
    fake.inject({ kind: "expireCursor" });
    fake.scriptRun(FakeRun.reply("never seen").approval(...WRITE));
    const run = await talon.agent().run("write a.txt");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon, cursors) });
    await waitFor(() => {
      assert.ok(result.current.error);
    });
    const log = await logOf(talon, run.id);
    assert.deepEqual(
      {
        code: result.current.error?.code,
        retryable: result.current.error?.retryable,
        following: result.current.following,
        events: ids(result.current.events),
      },
      { code: "cursor_expired", retryable: false, following: false, events: ids(log.slice(0, 2)) },
    );
    assert.equal(await cursors.get(`run:${run.id}`), undefined);
  });

  it("a failed run is status failed with the result's error; the hook's error stays empty", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply("unused").fail("internal", "boom"));
    const run = await talon.agent().run("fail");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.deepEqual(
      { ...view(result.current), text: undefined, cursor: undefined },
      {
        runId: run.id,
        status: "failed",
        text: undefined,
        result: { status: "failed", text: undefined, error: "internal" },
        pendingApprovals: [],
        pendingQuestions: [],
        error: undefined,
        following: false,
        detached: false,
        cursor: undefined,
      },
    );
    assert.equal(result.current.result?.error?.message, "boom");
  });

  it("under StrictMode, opens one stream and delivers each event once", async () => {
    const { fake, talon, streams } = present(e);
    fake.scriptRun(FakeRun.reply(REPLY));
    const run = await talon.agent().run("hi");
    const { result } = renderHook(() => useRun(run), { wrapper: provider(talon), reactStrictMode: true });
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    const log = await logOf(talon, run.id);
    assert.deepEqual(ids(result.current.events), ids(log));
    assert.equal(result.current.text, REPLY);
    assert.equal(streams.opened(), 1);
  });

  it("a run that already ended, given as a handle, replays its whole log", async () => {
    const { fake, talon } = present(e);
    fake.scriptRun(FakeRun.reply(REPLY));
    await (await talon.agent().run("hi")).wait();
    const [ended] = (await talon.client.runs.list({ limit: 1 })).runs;
    const handle = await talon.run(present(ended).id);
    assert.equal(handle.info.status, "completed");
    const { result } = renderHook(() => useRun(handle), { wrapper: provider(talon) });
    await waitFor(() => {
      assert.ok(result.current.result);
    });
    assert.deepEqual(ids(result.current.events), ids(await logOf(talon, handle.id)));
    assert.deepEqual([result.current.status, result.current.text], ["completed", REPLY]);
  });

  it("hooks of one provider following one run share one stream; useRun(null) is idle", async () => {
    const { fake, talon, streams } = present(e);
    fake.scriptRun(FakeRun.reply(REPLY));
    const run = await talon.agent().run("hi");
    const { result } = renderHook(() => ({ a: useRun(run), b: useRun(run.id), none: useRun(null) }), {
      wrapper: provider(talon),
    });
    await waitFor(() => {
      assert.ok(result.current.a.result && result.current.b.result);
    });
    assert.equal(result.current.a.events, result.current.b.events);
    assert.equal(streams.opened(), 1);
    assert.deepEqual(view(result.current.none), {
      runId: undefined,
      status: undefined,
      text: "",
      result: undefined,
      pendingApprovals: [],
      pendingQuestions: [],
      error: undefined,
      following: false,
      detached: false,
      cursor: undefined,
    });
    await assert.rejects(result.current.none.cancel(), { code: "invalid_request" });
  });
});
