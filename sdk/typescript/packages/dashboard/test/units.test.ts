// The dashboard's pure parts, asserted whole: the timeline of a run's
// events (nested calls under the call that made them, and a tail's calls
// before their parents are loaded), the figures of /metrics, the task tree,
// where a login link may send the browser, the routes, a runs row after
// lifecycle events, a run's summary and the text filter's rule, the usage
// view's windows, figures and request coalescing, diff lines and answer
// forms.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import type { TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import { loginFragment, safeNext } from "../src/auth.js";
import { healthOf } from "../src/health.js";
import { appPath, basePathOf, routeOf } from "../src/router.js";
import { taskTree } from "../src/tasktree.js";
import { startsLater } from "../src/runtail.js";
import { timelineOf } from "../src/timeline.js";
import { diffLines } from "../src/views/artifacts.js";
import { fieldsOf } from "../src/views/decide.js";
import { runSummary as summaryOf, summaryContains as summaryMatches } from "@talon/sdk";
import { rowAfter } from "../src/views/runs.js";
import { coalesced, count, daysOf, usd, windowStart } from "../src/views/usage.js";

let next = 0;
function ev(type: string, data: unknown, extra: Partial<T.EventEnvelope> = {}): TalonEvent {
  next++;
  return { id: String(next), ts: 1000 + next, type, data, version: 1, runId: "run_1", ...extra } as TalonEvent;
}

const APPROVAL: T.Approval = {
  id: "apr_1",
  createdAt: 1,
  decisions: ["approve_once", "deny"],
  kind: "tool",
  reusable: true,
  risk: "high",
  runId: "run_1",
  status: "pending",
  summary: "write a.txt",
  toolCallId: "c2",
  toolName: "write",
};

describe("timelineOf", () => {
  it("puts a Code Mode cell's calls under its exec, with output, result, duration and approval", () => {
    next = 0;
    const events = [
      ev("run.created", { input: "go" }),
      ev("run.started", { model: "mock/m", surface: "code_mode", tools: ["exec"] }),
      ev("thinking.delta", { text: "let me " }),
      ev("thinking.delta", { text: "think" }),
      ev("assistant.delta", { text: "Work" }),
      ev("assistant.delta", { text: "ing" }),
      ev("assistant.message", { text: "Working.", toolCalls: 1, usage: { inputTokens: 10, outputTokens: 5 } }),
      ev("tool.call.started", { callId: "c1", name: "exec", arguments: { code: "x" } }),
      ev("tool.call.delta", { callId: "c1", update: { stream: "console", text: "a" } }),
      ev("tool.call.delta", { callId: "c1", update: { stream: "console", text: "b\n" } }),
      ev("tool.call.started", { callId: "c2", name: "openclaw:core:write", parentId: "c1", arguments: { path: "a" } }),
      ev("approval.requested", APPROVAL),
      ev("approval.resolved", { approvalId: "apr_1", status: "approved", decision: "approve_once" }),
      ev("tool.call.completed", {
        callId: "c2",
        name: "openclaw:core:write",
        parentId: "c1",
        durationMs: 4,
        result: "ok",
      }),
      ev("tool.call.failed", { callId: "c1", name: "exec", durationMs: 9, error: "boom", status: "failed" }),
      ev("assistant.message", { text: "Done.", toolCalls: 0 }),
      ev("run.completed", { durationMs: 20, toolCalls: 2, turns: 2, usage: {}, text: "Done." }),
    ];
    assert.deepEqual(timelineOf(events), [
      { kind: "step", type: "run.created", ts: 1001, detail: "go" },
      { kind: "step", type: "run.started", ts: 1002, detail: "mock/m (code_mode)" },
      { kind: "thinking", text: "let me think", done: false, usage: undefined },
      { kind: "text", text: "Working.", done: true, usage: { inputTokens: 10, outputTokens: 5 } },
      {
        kind: "call",
        callId: "c1",
        name: "exec",
        parentId: undefined,
        arguments: { code: "x" },
        startedAt: 1008,
        status: "failed",
        output: [{ stream: "console", text: "ab\n" }],
        result: undefined,
        error: "boom",
        outcome: "failed",
        durationMs: 9,
        approval: undefined,
        question: undefined,
        children: [
          {
            kind: "call",
            callId: "c2",
            name: "openclaw:core:write",
            parentId: "c1",
            arguments: { path: "a" },
            startedAt: 1011,
            status: "completed",
            output: [],
            result: "ok",
            error: undefined,
            outcome: undefined,
            durationMs: 4,
            approval: {
              kind: "approval",
              approval: APPROVAL,
              status: "approved",
              decision: "approve_once",
              reason: undefined,
            },
            question: undefined,
            children: [],
            earlier: false,
          },
        ],
        earlier: false,
      },
      { kind: "text", text: "Done.", done: true, usage: undefined },
      { kind: "step", type: "run.completed", ts: 1017, detail: "2 turns, 2 tool calls" },
    ]);
  });

  it("keeps a question of no known call on its own, answered, and ignores a repeated start", () => {
    next = 0;
    const question: T.Question = { id: "q1", createdAt: 1, prompt: "Which?", runId: "run_1", status: "pending" };
    const events = [
      ev("run.created", { input: "which" }),
      ev("question.requested", question),
      ev("question.answered", { questionId: "q1", answer: "main" }),
      ev("tool.call.started", { callId: "c1", name: "read" }),
      ev("tool.call.started", { callId: "c1", name: "read" }),
      ev("tool.call.delta", { callId: "c1", update: { progress: 1, total: 2, message: "half" } }),
      ev("tool.call.delta", { callId: "nope", update: { stream: "stdout", text: "lost" } }),
    ];
    assert.deepEqual(timelineOf(events), [
      { kind: "step", type: "run.created", ts: 1001, detail: "which" },
      { kind: "question", question, answered: true, answer: "main" },
      {
        kind: "call",
        callId: "c1",
        name: "read",
        parentId: undefined,
        arguments: undefined,
        startedAt: 1004,
        status: "running",
        output: [{ stream: "progress", text: "1/2 half" }],
        result: undefined,
        error: undefined,
        outcome: undefined,
        durationMs: undefined,
        approval: undefined,
        question: undefined,
        children: [],
        earlier: false,
      },
    ]);
  });

  it("shows a tail's calls from what it holds, and nests them once the earlier events are in", () => {
    next = 0;
    const events = [
      ev("run.created", { input: "go" }),
      ev("tool.call.started", { callId: "c1", name: "exec", arguments: { code: "x" } }),
      ev("tool.call.delta", { callId: "c1", update: { stream: "console", text: "hi" } }),
      ev("tool.call.started", { callId: "c2", name: "read", parentId: "c1", arguments: { path: "a" } }),
      ev("tool.call.completed", { callId: "c2", name: "read", parentId: "c1", durationMs: 1, result: "ok" }),
      ev("tool.call.delta", { callId: "c1", update: { stream: "console", text: " there" } }),
      ev("tool.call.completed", { callId: "c1", name: "exec", durationMs: 5, result: 42 }),
    ];
    const child = {
      kind: "call",
      callId: "c2",
      name: "read",
      parentId: "c1",
      arguments: { path: "a" },
      startedAt: 1004,
      status: "completed",
      output: [],
      result: "ok",
      error: undefined,
      outcome: undefined,
      durationMs: 1,
      approval: undefined,
      question: undefined,
      children: [],
      earlier: false,
    };
    // The tail: the cell's start is not in it; its nested call stands on its own before it.
    assert.deepEqual(timelineOf(events.slice(3)), [
      child,
      {
        kind: "call",
        callId: "c1",
        name: "",
        parentId: undefined,
        arguments: undefined,
        startedAt: 1006,
        status: "completed",
        output: [{ stream: "console", text: " there" }],
        result: 42,
        error: undefined,
        outcome: undefined,
        durationMs: 5,
        approval: undefined,
        question: undefined,
        children: [],
        earlier: true,
      },
    ]);
    // The earlier page in front: nested, output whole.
    const whole = timelineOf(events);
    assert.deepEqual(whole.slice(1), [
      {
        kind: "call",
        callId: "c1",
        name: "exec",
        parentId: undefined,
        arguments: { code: "x" },
        startedAt: 1002,
        status: "completed",
        output: [{ stream: "console", text: "hi there" }],
        result: 42,
        error: undefined,
        outcome: undefined,
        durationMs: 5,
        approval: undefined,
        question: undefined,
        children: [child],
        earlier: false,
      },
    ]);
  });
});

describe("a run's tail", () => {
  it("may have events before it when the page is full and does not start the run", () => {
    next = 0;
    const created = ev("run.created", { input: "go" });
    const delta = ev("assistant.delta", { text: "x" });
    assert.equal(startsLater([delta, delta], 2), true);
    assert.equal(startsLater([created, delta], 2), false);
    assert.equal(startsLater([delta], 2), false);
    assert.equal(startsLater([], 2), false);
  });
});

describe("healthOf", () => {
  it("reads the main figures of /metrics", () => {
    const text = [
      "# HELP talon_runs Runs by status.",
      "# TYPE talon_runs gauge",
      'talon_runs{status="queued"} 2',
      'talon_runs{status="running"} 1',
      'talon_runs{status="waiting"} 0',
      "talon_queue_depth 2",
      "talon_approvals_pending 3",
      "talon_store_up 1",
      "talon_store_errors_total 0",
      'talon_runs_created_total{agent="main"} 7',
      'talon_runs_finished_total{status="completed"} 5',
      'talon_runs_finished_total{status="failed"} 1',
      'talon_http_requests_total{method="runs.list",code="200"} 4',
      'talon_http_requests_total{method="runs.get",code="200"} 6',
      "talon_sse_connections 2",
      'talon_node_info{node="node_b"} 1',
      'talon_node_runs{node="node_b"} 1',
      'talon_node_runs{node="node_a"} 3',
      'talon_node_lease_seconds{node="node_a"} -2.5',
      'talon_node_lease_seconds{node="node_b"} 14.25',
      "garbage line",
    ].join("\n");
    assert.deepEqual(healthOf(text), {
      node: "node_b",
      nodes: [
        { node: "node_a", runs: 3, leaseSeconds: -2.5 },
        { node: "node_b", runs: 1, leaseSeconds: 14.25 },
      ],
      storeUp: true,
      storeErrors: 0,
      queueDepth: 2,
      runs: { queued: 2, running: 1, waiting: 0 },
      approvalsPending: 3,
      runsCreated: 7,
      runsFinished: { completed: 5, failed: 1 },
      sseConnections: 2,
      wsConnections: undefined,
      httpRequests: 10,
      costUsd: undefined,
    });
  });

  it("says nothing of what is not reported", () => {
    assert.deepEqual(healthOf(""), {
      node: undefined,
      nodes: [],
      storeUp: undefined,
      storeErrors: undefined,
      queueDepth: undefined,
      runs: {},
      approvalsPending: undefined,
      runsCreated: undefined,
      runsFinished: {},
      sseConnections: undefined,
      wsConnections: undefined,
      httpRequests: undefined,
      costUsd: undefined,
    });
  });
});

function task(id: string, createdAt: number, runId: string | null, childRunId: string | null): T.Task {
  return {
    id,
    createdAt,
    updatedAt: createdAt,
    runId,
    childRunId,
    deliveryStatus: "pending",
    depth: 1,
    kind: "subagent",
    notifyPolicy: "done_only",
    status: "running",
  };
}

describe("taskTree", () => {
  it("nests a task under the task whose run started it", () => {
    const a = task("t_a", 1, "run_top", "run_a");
    const b = task("t_b", 2, "run_a", "run_b");
    const c = task("t_c", 3, "run_b", "run_c");
    const d = task("t_d", 4, "run_a", "run_d");
    const e = task("t_e", 5, "run_other", null);
    assert.deepEqual(taskTree([c, e, a, d, b]), [
      { task: e, children: [] },
      {
        task: a,
        children: [
          { task: b, children: [{ task: c, children: [] }] },
          { task: d, children: [] },
        ],
      },
    ]);
  });
});

describe("signing in", () => {
  it("goes only to a path of this origin", () => {
    assert.deepEqual(
      ["/runs/run_x", "/", "//evil.example", "/\\evil.example", "https://evil.example/", "runs", "", null, "/a\tb"].map(
        safeNext,
      ),
      ["/runs/run_x", "/", "/", "/", "/", "/", "/", "/", "/"],
    );
  });

  it("reads the code and next of a link's fragment", () => {
    assert.deepEqual(loginFragment("#code=lgn_abc&next=/runs/run_x"), { code: "lgn_abc", next: "/runs/run_x" });
    assert.deepEqual(loginFragment("#code=lgn_abc&next=//evil"), { code: "lgn_abc", next: "/" });
    assert.deepEqual(loginFragment(""), { code: undefined, next: "/" });
  });
});

describe("routes", () => {
  it("names each view the gateway serves the page for", () => {
    assert.deepEqual(
      [
        "/",
        "/login",
        "/runs/run_1",
        "/inbox",
        "/approve/apr_1",
        "/sessions",
        "/sessions/ses_1",
        "/tasks",
        "/agents",
        "/environments",
        "/health",
        "/usage",
        "/nope",
        "/runs/a/b",
      ].map(routeOf),
      [
        { view: "runs" },
        { view: "login" },
        { view: "run", id: "run_1" },
        { view: "inbox" },
        { view: "approve", id: "apr_1" },
        { view: "sessions" },
        { view: "session", id: "ses_1" },
        { view: "tasks" },
        { view: "agents" },
        { view: "environments" },
        { view: "health" },
        { view: "usage" },
        { view: "missing" },
        { view: "missing" },
      ],
    );
  });
});

describe("the base path", () => {
  it("is read only when it is a clean prefix, and taken off the location's path", () => {
    assert.deepEqual(
      ["/ops/talon", "", "/", "/ops/", "//evil", "/a b", '/a"><script>', null, undefined].map(basePathOf),
      ["/ops/talon", "", "", "", "", "", "", "", ""],
    );
    assert.deepEqual(
      ["/ops/talon", "/ops/talon/", "/ops/talon/runs/run_1", "/ops/talonx", "/runs/run_1"].map((p) =>
        appPath(p, "/ops/talon"),
      ),
      ["/", "/", "/runs/run_1", "/ops/talonx", "/runs/run_1"],
    );
    assert.equal(appPath("/runs/run_1", ""), "/runs/run_1");
  });
});

describe("a runs row", () => {
  it("is made by run.created and follows the run's lifecycle", () => {
    next = 0;
    const created = rowAfter(
      undefined,
      ev("run.created", { input: "\n  hi there  \nmore" }, { agentId: "main", sessionId: "s1" }),
    );
    const started = rowAfter(created, ev("run.started", { model: "mock/m", surface: "direct", tools: [] }));
    const waiting = rowAfter(started, ev("approval.requested", APPROVAL));
    const resumed = rowAfter(waiting, ev("approval.resolved", { approvalId: "apr_1", status: "approved" }));
    const ended = rowAfter(
      resumed,
      ev("run.completed", { durationMs: 3, toolCalls: 0, turns: 1, usage: { totalTokens: 9 } }),
    );
    assert.deepEqual(
      [created?.status, started?.status, waiting?.status, resumed?.status, ended?.status],
      ["queued", "running", "waiting", "running", "completed"],
    );
    assert.deepEqual(ended, {
      id: "run_1",
      agentId: "main",
      createdAt: 1001,
      sessionId: "s1",
      sessionKey: null,
      status: "completed",
      summary: "hi there",
      startedAt: 1002,
      model: "mock/m",
      endedAt: 1005,
      usage: { totalTokens: 9 },
    });
    assert.equal(rowAfter(undefined, ev("run.started", { model: "m", surface: "direct", tools: [] })), undefined);
  });

  it("has the summary the gateway makes of an input, and matches text in it as runs.list does", () => {
    assert.equal(summaryOf("  \n\t\n  Summarise the README  \r\nthen more"), "Summarise the README");
    assert.equal(summaryOf("\u0085 next line \u3000"), "next line");
    assert.equal(summaryOf("\ufeffbom"), "\ufeffbom");
    assert.equal(summaryOf(" \n \t \n"), undefined);
    assert.equal(summaryOf(""), undefined);
    assert.equal(summaryOf("x".repeat(120)), "x".repeat(120));
    assert.equal(summaryOf("x".repeat(121)), `${"x".repeat(119)}…`);
    // Characters, not UTF-16 units: an emoji counts once.
    assert.equal(summaryOf("😀".repeat(121)), `${"😀".repeat(119)}…`);
    assert.equal(summaryMatches("Summarise the README", "readme"), true);
    assert.equal(summaryMatches("Summarise the README", "SUMMARISE THE"), true);
    assert.equal(summaryMatches("Summarise the README", "notes"), false);
    assert.equal(summaryMatches("ÉCOLE", "école"), false, "only ASCII letters fold");
    assert.equal(summaryMatches("ÉCOLE", "Écol"), true);
    assert.equal(summaryMatches(undefined, "x"), false);
    assert.equal(summaryMatches(undefined, ""), true);
  });
});

describe("usage", () => {
  it("asks again at most once after the request in flight, however many runs end meanwhile", async () => {
    const asked: (() => void)[] = [];
    const again = coalesced(
      () =>
        new Promise<void>((resolve) => {
          asked.push(resolve);
        }),
    );
    const settle = () => new Promise((r) => setTimeout(r, 0));
    again();
    again();
    again();
    again();
    assert.equal(asked.length, 1, "one in flight");
    asked[0]?.();
    await settle();
    assert.equal(asked.length, 2, "the three calls meanwhile make one more");
    asked[1]?.();
    await settle();
    assert.equal(asked.length, 2, "and no more");
    again();
    assert.equal(asked.length, 3, "a later call asks at once");
    again();
    asked[2]?.();
    await settle();
    assert.equal(asked.length, 4);
    asked[3]?.();
    await settle();
    assert.equal(asked.length, 4);
  });

  it("goes on after a failed request", async () => {
    let n = 0;
    const again = coalesced(() => {
      n++;
      return Promise.reject(new Error("refused"));
    });
    again();
    again();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(n, 2);
  });

  it("starts a window at UTC midnight, today counted", () => {
    const now = Date.UTC(2026, 11, 7, 18, 30);
    assert.equal(windowStart(now, 1), Date.UTC(2026, 11, 7));
    assert.equal(windowStart(now, 7), Date.UTC(2026, 11, 1));
    assert.equal(windowStart(now, 30), Date.UTC(2026, 10, 8));
  });

  it("writes counts and dollars for people, and a dash for what is unknown", () => {
    assert.deepEqual([count(0), count(1234567), count(undefined), count(null)], ["0", "1,234,567", "—", "—"]);
    assert.deepEqual(
      [usd(0), usd(0.00004), usd(0.0123456), usd(0.99999), usd(1234.567), usd(undefined)],
      ["$0.00", "< $0.0001", "$0.0123", "$1.00", "$1,234.57", "—"],
    );
  });

  it("adds a day's rows together, newest day first", () => {
    const day1 = Date.UTC(2026, 11, 7);
    const day0 = Date.UTC(2026, 11, 6);
    assert.deepEqual(
      daysOf([
        { day: day1, agentId: "a", model: "m1", runs: 2, usage: { totalTokens: 30 } },
        { day: day1, agentId: "b", runs: 1, usage: {} },
        { day: day1, agentId: "b", model: "m1", runs: 1, usage: { inputTokens: 5, outputTokens: 2 } },
        { day: day0, agentId: "a", runs: 1, usage: {} },
      ]),
      [
        { day: day1, runs: 4, tokens: 37 },
        { day: day0, runs: 1, tokens: undefined },
      ],
    );
  });
});

describe("artifacts and answers", () => {
  it("classes a diff's lines", () => {
    assert.deepEqual(diffLines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same"), [
      { kind: "meta", text: "--- a/x" },
      { kind: "meta", text: "+++ b/x" },
      { kind: "hunk", text: "@@ -1 +1 @@" },
      { kind: "del", text: "-old" },
      { kind: "add", text: "+new" },
      { kind: "same", text: " same" },
    ]);
  });

  it("builds a form's fields from an object answerSchema", () => {
    assert.deepEqual(
      fieldsOf({
        type: "object",
        properties: { branch: { type: "string", enum: ["main", "dev"] }, depth: { type: "integer" } },
        required: ["branch"],
      }),
      [
        { name: "branch", type: "string", required: true, choices: ["main", "dev"] },
        { name: "depth", type: "integer", required: false, choices: undefined },
      ],
    );
    assert.equal(fieldsOf({ type: "string" }), undefined);
  });
});
