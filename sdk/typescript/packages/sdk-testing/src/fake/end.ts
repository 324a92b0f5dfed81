// A run's end, as the gateway's engine writes it: what it waited on is
// cancelled (`approval.resolved` `cancelled`, the open call
// `tool.call.failed` `aborted`), then its terminal event with
// `RunEndedData`, its messages in the session (unless rolled back), its
// trajectory artifact (announced on the session just before the terminal
// event, which it holds last without its id: the gateway stores a run's end
// with its row) and its `RunResult`.

import { RUN_ENDS, TERMINAL_TYPES, type protocol as P, refusals } from "@talon/sdk";

import { State, isTerminal, now, resultOf, runEvent, type RunRecord } from "./state.js";
import { json } from "./wire.js";

/** Why a run stopped before its end: asked to, past its time limit, or it is no longer to be ended here. */
export type Stop = "cancelled" | "timedOut" | "gone";

/** What the mock model reports per turn (its default usage). */
export const PROMPT_TOKENS = 10;
export const COMPLETION_TOKENS = 5;

/** Ends `record`'s run: `stop` says why, if it did not play to its end. */
export function endRun(state: State, record: RunRecord, stop: Stop | undefined, started: number): void {
  if (isTerminal(record.run.status)) return;
  const run = record.run;
  const failure = record.script.failure;
  let status: P.RunStatus;
  let errorText: string | undefined;
  let error: P.ApiError | undefined;
  if (stop === "timedOut") {
    status = "timed_out";
    error = refusals.runTimedOut(record.timeoutMs ?? 0);
    errorText = error.message;
  } else if (stop === "cancelled") {
    status = "cancelled";
    errorText = "the run was aborted";
  } else if (failure) {
    status = "failed";
    errorText = failure.message;
    error = failure;
  } else {
    status = "completed";
  }
  // What the run waited on stops waiting.
  for (const approval of state.approvals) {
    if (approval.runId !== run.id || approval.status !== "pending") continue;
    approval.status = "cancelled";
    approval.resolvedAt = now();
    state.push(
      runEvent(
        run,
        {
          type: "approval.resolved",
          data: { approvalId: approval.id, reason: "the run stopped waiting", reused: false, status: "cancelled" },
        },
        record.requestId,
      ),
    );
  }
  for (const question of state.questions) {
    if (question.runId !== run.id || question.status !== "pending") continue;
    question.status = "cancelled";
  }
  const open = record.openCall;
  if (open) {
    const cut = { error: errorText ?? "", status: "aborted" };
    record.openCall = undefined;
    record.messages.push({ role: "tool", text: json(cut), toolCallId: open.callId });
    state.push(
      runEvent(
        run,
        {
          type: "tool.call.failed",
          data: {
            callId: open.callId,
            durationMs: now() - open.startedAt,
            error: cut,
            name: open.name,
            status: "aborted",
          },
        },
        record.requestId,
      ),
    );
  }
  const text = status === "completed" && record.script.replyText !== "" ? record.script.replyText : undefined;
  const usage: P.Usage = {
    inputTokens: PROMPT_TOKENS * record.answeredTurns,
    outputTokens: COMPLETION_TOKENS * record.answeredTurns,
    totalTokens: (PROMPT_TOKENS + COMPLETION_TOKENS) * record.answeredTurns,
  };
  run.status = status;
  run.endedAt = now();
  run.usage = usage;
  if (error) run.error = error;
  const ended: P.RunEndedData = {
    durationMs: now() - started,
    telemetry: telemetryOf(state, record),
    toolCalls: record.toolCalls,
    turns: record.turns,
    usage,
  };
  if (text !== undefined) ended.text = text;
  if (errorText !== undefined) ended.error = errorText;
  // The protocol's `EventData::run_ended`: the type whose end is `status`.
  const type = TERMINAL_TYPES.find((t) => RUN_ENDS[t] === status) ?? "run.cancelled";
  const terminal = { type, data: ended } as P.EventData;
  // Stored last, with the run's end.
  const ending = runEvent(run, terminal, record.requestId);
  // Its messages, unless rolled back.
  if (!record.cancel?.rollback && run.sessionId) {
    const sessionId = run.sessionId;
    const at = now();
    const said = [{ role: "user" as const, text: record.input }, ...record.messages];
    const stored = state.messages.get(sessionId) ?? [];
    said.forEach((m, i) => {
      const message: P.Message = {
        createdAt: at,
        id: `msg_${run.id}_${String(i).padStart(4, "0")}`,
        role: m.role,
        runId: run.id,
        sessionId,
      };
      if (m.text !== undefined && m.text !== null) message.text = m.text;
      if (m.toolCalls && m.toolCalls.length > 0) message.toolCalls = m.toolCalls;
      if (m.toolCallId) message.toolCallId = m.toolCallId;
      stored.push(message);
    });
    state.messages.set(sessionId, stored);
  }
  // The trajectory, announced on the session just before the terminal
  // event, which it holds last without its id.
  const document = {
    agentId: run.agentId,
    events: [
      ...state.log.filter((e) => e.envelope.runId === run.id).map((e) => JSON.parse(e.json) as unknown),
      JSON.parse(json(ending)) as unknown,
    ],
    runId: run.id,
    sessionId: run.sessionId,
    status: run.status,
    truncated: false,
  };
  const trajectory = state.putArtifact(
    run,
    "trajectory",
    `Trajectory of run ${run.id}`,
    "application/json",
    Buffer.from(json(document)),
  );
  const announced = runEvent(run, { type: "artifact.created", data: trajectory }, record.requestId);
  delete announced.runId;
  state.push(announced);
  state.push(ending);
  record.result = resultOf(run, text, [...record.artifacts, trajectory]);
  state.touch();
}

/**
 * A scripted run's tool telemetry: it sends no model request and runs no
 * tool, so it has the surface `direct`, the tools `run.started` named,
 * the catalog set with `setTools`, and one model call per turn.
 */
function telemetryOf(state: State, record: RunRecord): P.ToolTelemetry {
  return {
    bridgeCalls: 0,
    bytesSent: 0,
    called: [],
    catalogBySource: {},
    catalogSize: state.tools.length,
    codeRuns: 0,
    describes: 0,
    execs: 0,
    modelCalls: record.turns,
    promptBytes: 0,
    searches: 0,
    surface: "direct",
    toolBytes: 0,
    visibleTools: state.tools.filter((t) => !t.hidden).length,
    waits: 0,
  };
}
