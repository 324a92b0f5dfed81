// `timelineOf(events)`: a run's events as the run detail shows them, a
// pure function of the events (the view renders it again as events
// arrive). Assistant and thinking text as they stream; each tool call with
// its arguments, live output (`tool.call.delta`), result or error,
// duration and approval; and nested calls (a Code Mode cell's calls from
// `exec`, Tool Search's from `tool_search_code`, whose events name the
// model's call as `parentId`) under the call that made them. Approvals and
// questions that name no known call stand on their own.
//
// The events may be a run's tail (the run view loads the last page first,
// then earlier pages on demand): a call whose start is not among them is
// shown from what is (`earlier`, its name unknown), and a nested call whose
// parent is not among them stands on its own until the page holding the
// parent is loaded, when the timeline, made again from all the events,
// nests it.

import type { TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

/** One piece of a call's live output. */
export interface Output {
  /** `stdout`, `stderr`, `console`, or `progress` for an MCP server's progress. */
  readonly stream: string;
  readonly text: string;
}

/** A tool call and what became of it. */
export interface Call {
  readonly kind: "call";
  readonly callId: string;
  readonly name: string;
  readonly parentId: string | undefined;
  readonly arguments: unknown;
  readonly startedAt: number;
  readonly status: "running" | "completed" | "failed";
  readonly output: readonly Output[];
  readonly result: unknown;
  readonly error: unknown;
  /** How the call failed (`denied`, `aborted`, ...). */
  readonly outcome: string | undefined;
  readonly durationMs: number | undefined;
  readonly approval: ApprovalItem | undefined;
  readonly question: QuestionItem | undefined;
  /** Calls it made (Code Mode, Tool Search), in order. */
  readonly children: readonly Call[];
  /** Whether its `tool.call.started` is not among the events (it started before them). */
  readonly earlier: boolean;
}

/** An approval and how it was resolved. */
export interface ApprovalItem {
  readonly kind: "approval";
  readonly approval: T.Approval;
  readonly status: T.ApprovalStatus;
  readonly decision: T.ApprovalDecision | undefined;
  readonly reason: string | undefined;
}

/** A question and its answer. */
export interface QuestionItem {
  readonly kind: "question";
  readonly question: T.Question;
  readonly answered: boolean;
  readonly answer: unknown;
}

/** Text the model wrote (or thought), and, for a whole message, its model call's usage. */
export interface TextItem {
  readonly kind: "text" | "thinking";
  readonly text: string;
  /** Whether the message is whole (an `assistant.message` closed it). */
  readonly done: boolean;
  readonly usage: T.Usage | undefined;
}

/** A lifecycle step: created, queued, started, ended. */
export interface StepItem {
  readonly kind: "step";
  readonly type: string;
  readonly ts: number;
  readonly detail: string;
}

export type Item = Call | ApprovalItem | QuestionItem | TextItem | StepItem;

interface MutableCall {
  kind: "call";
  callId: string;
  name: string;
  parentId: string | undefined;
  arguments: unknown;
  startedAt: number;
  status: "running" | "completed" | "failed";
  output: Output[];
  result: unknown;
  error: unknown;
  outcome: string | undefined;
  durationMs: number | undefined;
  approval: ApprovalItem | undefined;
  question: QuestionItem | undefined;
  children: MutableCall[];
  earlier: boolean;
}

type MutableItem = MutableCall | ApprovalItem | QuestionItem | TextItem | StepItem;

/** A call as its start (or, in a tail, the first event after it) makes it: running, nothing known yet. */
function newCall(
  start: Pick<MutableCall, "callId" | "name" | "parentId" | "arguments" | "startedAt" | "earlier">,
): MutableCall {
  return {
    kind: "call",
    ...start,
    status: "running",
    output: [],
    result: undefined,
    error: undefined,
    outcome: undefined,
    durationMs: undefined,
    approval: undefined,
    question: undefined,
    children: [],
  };
}

function outputOf(update: unknown): Output | undefined {
  if (typeof update !== "object" || update === null) return undefined;
  const u = update as { stream?: unknown; text?: unknown; progress?: unknown; total?: unknown; message?: unknown };
  if (typeof u.text === "string" && u.text !== "") {
    return { stream: typeof u.stream === "string" ? u.stream : "output", text: u.text };
  }
  if (typeof u.progress === "number") {
    const total = typeof u.total === "number" ? `/${u.total}` : "";
    const message = typeof u.message === "string" ? ` ${u.message}` : "";
    return { stream: "progress", text: `${u.progress}${total}${message}` };
  }
  return undefined;
}

function stepDetail(event: TalonEvent): string {
  switch (event.type) {
    case "run.created":
      return event.data.input;
    case "run.queued":
      return `waits for: ${event.data.reason}`;
    case "run.started":
      return `${event.data.model} (${event.data.surface})`;
    case "run.completed":
    case "run.failed":
    case "run.cancelled":
    case "run.timed_out":
      return event.data.error ?? `${event.data.turns} turns, ${event.data.toolCalls} tool calls`;
    default:
      return "";
  }
}

/** The run's timeline: items in the order they began, nested calls under their parent. */
export function timelineOf(events: readonly TalonEvent[]): Item[] {
  const items: MutableItem[] = [];
  const calls = new Map<string, MutableCall>();
  // The text item being streamed into, if the last text event left one open.
  let open: { kind: "text" | "thinking"; index: number } | undefined;
  const approvals = new Map<string, ApprovalItem>();
  const questions = new Map<string, QuestionItem>();
  const setText = (kind: "text" | "thinking", text: string, append: boolean, done: boolean, usage?: T.Usage) => {
    const current = open?.kind === kind ? items[open.index] : undefined;
    if (current && (current.kind === "text" || current.kind === "thinking") && !current.done) {
      items[open?.index ?? 0] = {
        kind,
        text: append ? current.text + text : text || current.text,
        done,
        usage: usage ?? current.usage,
      };
    } else {
      items.push({ kind, text, done, usage });
      open = { kind, index: items.length - 1 };
    }
    if (done) open = undefined;
  };
  // From the run's first event, every call's start is among the events.
  const whole = events[0]?.type === "run.created";
  // A call by id; in a tail, one that started before it is made from what follows its start.
  const known = (callId: string, ts: number): MutableCall | undefined => {
    const found = calls.get(callId);
    if (found || whole) return found;
    open = undefined;
    const call = newCall({ callId, name: "", parentId: undefined, arguments: undefined, startedAt: ts, earlier: true });
    calls.set(callId, call);
    items.push(call);
    return call;
  };
  for (const event of events) {
    switch (event.type) {
      case "run.created":
      case "run.queued":
      case "run.started":
      case "run.completed":
      case "run.failed":
      case "run.cancelled":
      case "run.timed_out":
        open = undefined;
        items.push({ kind: "step", type: event.type, ts: event.ts, detail: stepDetail(event) });
        break;
      case "assistant.delta":
        if (open?.kind === "thinking") open = undefined;
        setText("text", event.data.text, true, false);
        break;
      case "thinking.delta":
        if (open?.kind === "text") open = undefined;
        setText("thinking", event.data.text, true, false);
        break;
      case "assistant.message": {
        if (open?.kind === "thinking") open = undefined;
        const text = typeof event.data.text === "string" ? event.data.text : "";
        if (text !== "" || open?.kind === "text") setText("text", text, false, true, event.data.usage ?? undefined);
        else items.push({ kind: "text", text: "", done: true, usage: event.data.usage ?? undefined });
        open = undefined;
        break;
      }
      case "tool.call.started": {
        open = undefined;
        const d = event.data;
        const call = newCall({
          callId: d.callId,
          name: d.name,
          parentId: d.parentId ?? undefined,
          arguments: d.arguments,
          startedAt: event.ts,
          earlier: false,
        });
        if (calls.has(d.callId)) break;
        calls.set(d.callId, call);
        const parent = call.parentId === undefined ? undefined : calls.get(call.parentId);
        if (parent) parent.children.push(call);
        else items.push(call);
        break;
      }
      case "tool.call.delta": {
        const out = outputOf(event.data.update);
        if (!out) break;
        const call = known(event.data.callId, event.ts);
        if (!call) break;
        const last = call.output.at(-1);
        if (last?.stream === out.stream && out.stream !== "progress") {
          call.output[call.output.length - 1] = { stream: out.stream, text: last.text + out.text };
        } else call.output.push(out);
        break;
      }
      case "tool.call.completed": {
        const call = known(event.data.callId, event.ts);
        if (!call) break;
        call.status = "completed";
        call.result = event.data.result;
        call.durationMs = event.data.durationMs;
        break;
      }
      case "tool.call.failed": {
        const call = known(event.data.callId, event.ts);
        if (!call) break;
        call.status = "failed";
        call.error = event.data.error;
        call.outcome = event.data.status ?? undefined;
        call.durationMs = event.data.durationMs ?? undefined;
        break;
      }
      case "approval.requested":
        open = undefined;
        if (!approvals.has(event.data.id)) {
          const item: ApprovalItem = {
            kind: "approval",
            approval: event.data,
            status: event.data.status,
            decision: undefined,
            reason: undefined,
          };
          approvals.set(event.data.id, item);
          items.push(item);
        }
        break;
      case "approval.resolved": {
        const item = approvals.get(event.data.approvalId);
        if (!item) break;
        const resolved: ApprovalItem = {
          ...item,
          status: event.data.status,
          decision: event.data.decision ?? undefined,
          reason: event.data.reason ?? undefined,
        };
        approvals.set(event.data.approvalId, resolved);
        items[items.indexOf(item)] = resolved;
        break;
      }
      case "question.requested":
        open = undefined;
        if (!questions.has(event.data.id)) {
          const item: QuestionItem = { kind: "question", question: event.data, answered: false, answer: undefined };
          questions.set(event.data.id, item);
          items.push(item);
        }
        break;
      case "question.answered": {
        const item = questions.get(event.data.questionId);
        if (!item) break;
        const answered: QuestionItem = { ...item, answered: true, answer: event.data.answer };
        questions.set(event.data.questionId, answered);
        items[items.indexOf(item)] = answered;
        break;
      }
      default:
        break;
    }
  }
  // An approval or question that names a known call goes under it.
  const placed = items.filter((item) => {
    if (item.kind === "approval") {
      const call = calls.get(item.approval.toolCallId ?? "");
      if (call && !call.approval) {
        call.approval = item;
        return false;
      }
    } else if (item.kind === "question") {
      const call = calls.get(item.question.toolCallId ?? "");
      if (call && !call.question) {
        call.question = item;
        return false;
      }
    }
    return true;
  });
  return placed;
}

/** Every call of a timeline, depth first (nested ones after their parent). */
export function callsOf(items: readonly Item[]): Call[] {
  const out: Call[] = [];
  const walk = (call: Call) => {
    out.push(call);
    call.children.forEach(walk);
  };
  for (const item of items) if (item.kind === "call") walk(item);
  return out;
}
