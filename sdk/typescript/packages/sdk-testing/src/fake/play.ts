// Playing a `FakeRun`: once its session's lane is free (one run at a time
// per session, in order), the run emits what the gateway's agent loop
// would (`run.started`, its scripted steps, the reply's deltas and
// message), waits on approvals and questions like a durable run does, and
// honours cancellation and its own time limit; its end is `end.ts`'s.

import { caps, type protocol as P } from "@talon/sdk";

import { mimeOf } from "./content.js";
import { COMPLETION_TOKENS, PROMPT_TOKENS, endRun, type Stop } from "./end.js";
import { liveRuns } from "./runs.js";
import type { Step } from "./script.js";
import { State, isTerminal, now, runEvent, type RunRecord } from "./state.js";
import { createTask } from "./tasks.js";
import { copy, json } from "./wire.js";

/** How long approvals and questions wait (the gateway's default, 24 hours). */
const PERSON_WAIT_MS = 24 * 3600 * 1000;
/** The decisions the gateway offers on a tool approval. */
const DECISIONS: P.ApprovalDecision[] = ["approve_once", "approve_session", "approve_always", "deny"];
/** The longest approval summary, in bytes. */
const MAX_SUMMARY_BYTES = caps.MAX_APPROVAL_SUMMARY_BYTES;
/** The model's name as `run.started` gives it (the provider's name of `mock/mock-model`). */
const STARTED_MODEL = "mock-model";

/** What waiting gave: the value, or why the run stopped. */
type Waited<T> = { value: T } | { stop: Stop | "ended" | "closing" };

/** Waits until `ready` gives a value, or the run is told to stop (or passes its time limit, or `wakeAt` passes). */
async function waitFor<T>(
  state: State,
  record: RunRecord,
  deadline: number | undefined,
  ready: () => T | undefined,
  wakeAt?: number,
): Promise<Waited<T>> {
  for (;;) {
    if (isTerminal(record.run.status)) return { stop: "ended" };
    if (record.cancel) return { stop: "cancelled" };
    const value = ready();
    if (value !== undefined) return { value };
    if (state.closing) return { stop: "closing" };
    if (deadline !== undefined && now() >= deadline) return { stop: "timedOut" };
    const wake = [deadline, wakeAt].filter((t): t is number => t !== undefined);
    await state.changed(wake.length > 0 ? Math.min(...wake) : undefined);
  }
}

function emit(state: State, record: RunRecord, data: P.EventData): void {
  state.push(runEvent(record.run, data, record.requestId));
}

/** The approval summary: the tool and its arguments, cut to 300 bytes at a character boundary. */
function summaryOf(tool: string, args: string): string {
  const summary = `${tool} ${args}`;
  if (Buffer.byteLength(summary) <= MAX_SUMMARY_BYTES) return summary;
  let out = "";
  for (const c of summary) {
    if (Buffer.byteLength(out + c) > MAX_SUMMARY_BYTES - 3) break;
    out += c;
  }
  return `${out}...`;
}

/**
 * A tool by catalog id or name, as the Rust fake maps it: a tool of the
 * catalog (`setTools`, else the real gateway's core tools) with that id,
 * else one with that name; an unknown id's name is its last `:` segment,
 * and an unknown bare name is a core tool's (`exec` is
 * `openclaw:core:exec`). Approvals carry both: `toolName` the name the
 * model calls, `toolId` the catalog id.
 */
export function toolOf(tools: readonly P.ToolSummary[], tool: string): { name: string; id: string } {
  const found = tools.find((t) => t.id === tool) ?? tools.find((t) => t.name === tool);
  if (found) return { name: found.name, id: found.id };
  const colon = tool.lastIndexOf(":");
  return colon >= 0 ? { name: tool.slice(colon + 1), id: tool } : { name: tool, id: `openclaw:core:${tool}` };
}

/** What each model call of a scripted run uses (the run's usage is their sum). */
const CALL_USAGE: P.Usage = {
  inputTokens: PROMPT_TOKENS,
  outputTokens: COMPLETION_TOKENS,
  totalTokens: PROMPT_TOKENS + COMPLETION_TOKENS,
};

/** Starts a tool call: `tool.call.started`, the assistant's message asking for it; its id. */
function startCall(state: State, record: RunRecord, name: string, args: unknown, replaySafe: boolean): string {
  record.turns += 1;
  record.answeredTurns += 1;
  record.toolCalls += 1;
  emit(state, record, {
    type: "assistant.message",
    data: { finishReason: "tool_calls", toolCalls: 1, usage: CALL_USAGE },
  });
  const callId = `call_${record.toolCalls}`;
  record.openCall = { callId, name, startedAt: now() };
  record.messages.push({ role: "assistant", toolCalls: [{ id: callId, name, arguments: copy(args ?? null) }] });
  const data: P.ToolCallStartedData = { callId, name };
  if (args !== undefined) data.arguments = copy(args);
  if (replaySafe) data.replaySafe = true;
  emit(state, record, { type: "tool.call.started", data });
  return callId;
}

/** Ends the open call: its result as the tool message the model reads. */
function endCall(record: RunRecord, result: unknown): number {
  const open = record.openCall;
  record.openCall = undefined;
  record.messages.push({ role: "tool", text: json(result), toolCallId: open?.callId ?? "" });
  return open ? now() - open.startedAt : 0;
}

async function approval(
  state: State,
  record: RunRecord,
  deadline: number | undefined,
  tool: string,
  args: unknown,
): Promise<Stop | undefined> {
  const { name, id: toolId } = toolOf(state.tools, tool);
  const callId = startCall(state, record, name, args, false);
  const createdAt = now();
  const asked: P.Approval = {
    createdAt,
    decisions: [...DECISIONS],
    expiresAt: createdAt + PERSON_WAIT_MS,
    id: state.newId("appr"),
    kind: "tool",
    reusable: true,
    risk: "medium",
    runId: record.run.id,
    status: "pending",
    summary: summaryOf(name, json(args ?? null)),
    toolCallId: callId,
    toolId,
    toolName: name,
  };
  if (args !== undefined) asked.arguments = copy(args);
  if (record.run.sessionId) asked.sessionId = record.run.sessionId;
  state.approvals.push(asked);
  waits(record, "asked");
  emit(state, record, { type: "approval.requested", data: copy(asked) });
  const waited = await waitFor(state, record, deadline, () => (asked.status !== "pending" ? asked : undefined));
  if (!("value" in waited)) return stopOf(waited.stop);
  const resolved = waited.value;
  const data: P.ApprovalResolvedData = { approvalId: resolved.id, reused: false, status: resolved.status };
  if (resolved.decision) data.decision = resolved.decision;
  if (resolved.reason !== undefined && resolved.reason !== null) data.reason = resolved.reason;
  waits(record, "answered");
  emit(state, record, { type: "approval.resolved", data });
  if (resolved.status === "approved") {
    const result = { ok: true };
    const durationMs = endCall(record, result);
    emit(state, record, { type: "tool.call.completed", data: { callId, durationMs, name, result } });
  } else {
    const why = resolved.reason
      ? `the call of ${name} was denied: ${resolved.reason}`
      : `the call of ${name} was denied`;
    const error = { error: why, status: "blocked" };
    const durationMs = endCall(record, error);
    emit(state, record, { type: "tool.call.failed", data: { callId, durationMs, error, name, status: "blocked" } });
  }
  return undefined;
}

/**
 * Moves a running run to `waiting` as it asks a person, and a waiting one
 * back to `running` as it is answered, as the gateway does (the fake's runs
 * ask one thing at a time).
 */
function waits(record: RunRecord, person: "asked" | "answered"): void {
  const [from, to]: [P.RunStatus, P.RunStatus] = person === "asked" ? ["running", "waiting"] : ["waiting", "running"];
  if (record.run.status === from) record.run.status = to;
}

async function question(
  state: State,
  record: RunRecord,
  deadline: number | undefined,
  prompt: string,
  choices: string[],
): Promise<Stop | undefined> {
  const args: { prompt: string; choices?: string[] } = { prompt };
  if (choices.length > 0) args.choices = choices;
  const callId = startCall(state, record, "ask_user", args, true);
  const createdAt = now();
  const asked: P.Question = {
    createdAt,
    expiresAt: createdAt + PERSON_WAIT_MS,
    id: state.newId("q"),
    prompt,
    runId: record.run.id,
    status: "pending",
    toolCallId: callId,
  };
  if (choices.length > 0) asked.choices = [...choices];
  if (record.run.sessionId) asked.sessionId = record.run.sessionId;
  state.questions.push(asked);
  waits(record, "asked");
  emit(state, record, { type: "question.requested", data: copy(asked) });
  const waited = await waitFor(state, record, deadline, () =>
    asked.status === "answered" ? { answer: asked.answer } : undefined,
  );
  if (!("value" in waited)) return stopOf(waited.stop);
  const answer = copy(waited.value.answer ?? null);
  waits(record, "answered");
  emit(state, record, { type: "question.answered", data: { answer, questionId: asked.id } });
  const result = { answer, questionId: asked.id };
  const durationMs = endCall(record, result);
  emit(state, record, { type: "tool.call.completed", data: { callId, durationMs, name: "ask_user", result } });
  return undefined;
}

function stopOf(stop: Stop | "ended" | "closing"): Stop | undefined {
  return stop === "ended" || stop === "closing" ? "gone" : stop;
}

async function step(
  state: State,
  record: RunRecord,
  deadline: number | undefined,
  next: Step,
): Promise<Stop | undefined> {
  switch (next.kind) {
    case "event":
      emit(state, record, copy(next.data));
      return undefined;
    case "delay": {
      const until = now() + next.ms;
      const waited = await waitFor(state, record, deadline, () => (now() >= until ? true : undefined), until);
      return "value" in waited ? undefined : stopOf(waited.stop);
    }
    case "approval":
      return approval(state, record, deadline, next.tool, next.args);
    case "question":
      return question(state, record, deadline, next.prompt, next.choices);
    case "artifact": {
      const summary = state.putArtifact(record.run, next.type, next.name, mimeOf(next.name, next.bytes), next.bytes);
      record.artifacts.push(summary);
      emit(state, record, { type: "artifact.created", data: copy(summary) });
      return undefined;
    }
    case "spawn": {
      const args: Record<string, unknown> = { task: next.task.description };
      if (next.task.labelText !== undefined) args.label = next.task.labelText;
      const callId = startCall(state, record, "sessions_spawn", args, false);
      const task = createTask(state, next.task, record.run);
      const result = { status: "accepted", taskId: task.id };
      const durationMs = endCall(record, result);
      emit(state, record, {
        type: "tool.call.completed",
        data: { callId, durationMs, name: "sessions_spawn", result },
      });
      return undefined;
    }
  }
}

/** The reply: its deltas (8 characters each), its message. */
function reply(state: State, record: RunRecord): void {
  const text = record.script.replyText;
  record.turns += 1;
  record.answeredTurns += 1;
  const chars = [...text];
  for (let i = 0; i < chars.length; i += 8) {
    emit(state, record, { type: "assistant.delta", data: { text: chars.slice(i, i + 8).join("") } });
  }
  const message: P.AssistantMessageData = { finishReason: "stop", toolCalls: 0, usage: CALL_USAGE };
  if (text !== "") message.text = text;
  emit(state, record, { type: "assistant.message", data: message });
  if (text !== "") record.messages.push({ role: "assistant", text });
}

/** Plays run `runId`'s script, then ends it. */
export async function play(state: State, runId: string): Promise<void> {
  const record = state.runs.get(runId);
  if (!record || state.closing) return;
  const sessionId = record.run.sessionId ?? "";
  const lane = await waitFor(state, record, undefined, () =>
    liveRuns(state, sessionId)[0]?.id === runId ? true : undefined,
  );
  if (!("value" in lane)) return;
  record.run.status = "running";
  record.run.startedAt = now();
  record.run.model = STARTED_MODEL;
  const started = now();
  const deadline = record.timeoutMs === undefined ? undefined : started + record.timeoutMs;
  const tools = state.tools.filter((t) => !t.hidden).map((t) => t.name);
  emit(state, record, { type: "run.started", data: { model: STARTED_MODEL, surface: "direct", tools } });
  let stop: Stop | undefined;
  for (const next of record.script.steps) {
    stop = await step(state, record, deadline, next);
    // A delay stands for the model thinking: timed out in it, the run was in a turn the model never answered.
    if (stop === "timedOut" && next.kind === "delay") record.turns += 1;
    if (stop) break;
  }
  if (stop === "gone") return;
  // A scripted failure is the model's last turn failing (a turn taken, none answered).
  if (!stop && record.script.failure) record.turns += 1;
  if (!stop && !record.script.failure) reply(state, record);
  endRun(state, record, stop, started);
}
