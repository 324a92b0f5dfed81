// `foldRunEvents`, the rule `useRun` folds a run's events by, asserted
// whole on hand-made events (a run asked an approval and a question, both
// answered, then ended; an end clearing what was pending; deltas and whole
// messages; nothing changed gives the same object), and against the
// FakeGateway: `useRun`'s state is the fold of the run's log, and the hooks
// of a provider whose client has `streams: "websocket"` share one WebSocket
// and make no SSE request.
import { renderHook, waitFor } from "@testing-library/react";
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";

import { Talon, type TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { FakeRun } from "@talon/sdk-testing";
import {
  foldRunEvent,
  foldRunEvents,
  RUN_FOLD_START,
  useApprovals,
  useEvents,
  useRun,
  type RunFold,
} from "@talon/sdk-react";

import { countStreams, env, logOf, present, provider, teardown, type Env } from "./helpers.js";

let seq = 0;
/** An event of `type` with `data` (its envelope made up). */
function event(type: string, data: unknown): TalonEvent {
  seq += 1;
  return { version: 1, id: String(seq), ts: seq, type, runId: "run_1", data } as TalonEvent;
}

const approval = { id: "apr_1", status: "pending" } as T.Approval;
const question = { id: "q_1", status: "pending" } as T.Question;

/** The fold's fields as a test compares them (pending items by id). */
function view(f: RunFold) {
  return {
    status: f.status,
    text: f.text,
    textDone: f.textDone,
    approvals: f.pendingApprovals.map((a) => a.id),
    questions: f.pendingQuestions.map((q) => q.id),
    ended: f.ended,
  };
}

describe("foldRunEvents", () => {
  it("queued, running, waiting while something is pending, running again, then the end", () => {
    const steps: [TalonEvent, ReturnType<typeof view>][] = [];
    let state = RUN_FOLD_START;
    const push = (e: TalonEvent) => {
      state = foldRunEvent(state, e);
      steps.push([e, view(state)]);
    };
    push(event("run.created", { input: "hi" }));
    push(event("run.started", {}));
    push(event("assistant.delta", { text: "Hel" }));
    push(event("assistant.delta", { text: "lo" }));
    push(event("approval.requested", approval));
    push(event("approval.requested", approval));
    push(event("question.requested", question));
    push(event("approval.resolved", { approvalId: "apr_1", decision: "approve_once" }));
    push(event("question.answered", { questionId: "q_1", answer: "dev" }));
    push(event("assistant.message", { text: "Hello there." }));
    push(event("assistant.delta", { text: "Bye" }));
    push(event("run.completed", { text: "Bye." }));
    const base = { text: "", textDone: false, approvals: [], questions: [], ended: false };
    assert.deepEqual(
      steps.map(([, v]) => v),
      [
        { ...base, status: "queued" },
        { ...base, status: "running" },
        { ...base, status: "running", text: "Hel" },
        { ...base, status: "running", text: "Hello" },
        { ...base, status: "waiting", text: "Hello", approvals: ["apr_1"] },
        { ...base, status: "waiting", text: "Hello", approvals: ["apr_1"] },
        { ...base, status: "waiting", text: "Hello", approvals: ["apr_1"], questions: ["q_1"] },
        { ...base, status: "waiting", text: "Hello", questions: ["q_1"] },
        { ...base, status: "running", text: "Hello" },
        { ...base, status: "running", text: "Hello there.", textDone: true },
        { ...base, status: "running", text: "Bye" },
        { ...base, status: "completed", text: "Bye.", ended: true },
      ],
    );
    // Folding them all at once is the same.
    assert.deepEqual(
      view(
        foldRunEvents(
          RUN_FOLD_START,
          steps.map(([e]) => e),
        ),
      ),
      steps.at(-1)?.[1],
    );
  });

  it("an end clears what was pending; a state nothing changes comes back as it is", () => {
    const waiting = foldRunEvents(RUN_FOLD_START, [
      event("run.started", {}),
      event("approval.requested", approval),
      event("question.requested", question),
    ]);
    assert.equal(waiting.status, "waiting");
    const cancelled = foldRunEvent(waiting, event("run.cancelled", {}));
    assert.deepEqual(view(cancelled), {
      status: "cancelled",
      text: "",
      textDone: false,
      approvals: [],
      questions: [],
      ended: true,
    });
    assert.equal(foldRunEvents(waiting, []), waiting);
    assert.equal(foldRunEvent(waiting, event("tool.call.delta", { callId: "c", text: "x" })), waiting);
    assert.equal(foldRunEvent(waiting, event("approval.resolved", { approvalId: "apr_other" })), waiting);
    // A status the caller knew (a run read from the gateway) is moved on by the events.
    const known = foldRunEvent(
      { ...RUN_FOLD_START, status: "waiting", pendingApprovals: [approval] },
      event("approval.resolved", { approvalId: "apr_1" }),
    );
    assert.equal(known.status, "running");
  });
});

describe("the hooks over one WebSocket", () => {
  let e: Env | undefined;
  beforeEach(async () => {
    e = await env();
  });
  afterEach(() => teardown(e));

  it("useRun's state is the fold of the run's log; the hooks share one socket and open no SSE stream", async () => {
    const { fake } = present(e);
    fake.scriptRun(FakeRun.reply("Wrote a.txt.").approval("openclaw:core:write", { path: "a.txt" }));
    const sockets: WebSocket[] = [];
    const sse = countStreams();
    const talon = new Talon({
      baseUrl: fake.url,
      token: fake.token,
      fetch: sse.fetch,
      streams: "websocket",
      webSocket: (url) => {
        const socket = new WebSocket(url);
        sockets.push(socket);
        return socket;
      },
    });
    try {
      const run = await talon.agent().run("write a.txt");
      const { result } = renderHook(
        () => ({ run: useRun(run), inbox: useApprovals(), ends: useEvents({ types: ["run.completed"] }) }),
        { wrapper: provider(talon) },
      );
      await waitFor(() => {
        assert.equal(result.current.run.pendingApprovals.length, 1);
        assert.equal(result.current.inbox.approvals.length, 1);
      });
      assert.equal(result.current.run.status, "waiting");
      await result.current.inbox.approve(present(result.current.inbox.approvals[0]));
      await waitFor(() => {
        assert.ok(result.current.run.result);
        assert.equal(result.current.ends.events.at(-1)?.runId, run.id);
      });
      const folded = foldRunEvents(RUN_FOLD_START, await logOf(talon, run.id));
      const state = result.current.run;
      assert.deepEqual(
        {
          status: state.status,
          text: state.text,
          approvals: state.pendingApprovals,
          questions: state.pendingQuestions,
        },
        {
          status: folded.status,
          text: folded.text,
          approvals: folded.pendingApprovals,
          questions: folded.pendingQuestions,
        },
      );
      assert.equal(folded.status, "completed");
      assert.equal(sockets.length, 1, "one socket for the three hooks' streams");
      assert.equal(sse.opened(), 0, "no SSE stream");
    } finally {
      await talon.close();
    }
  });
});
