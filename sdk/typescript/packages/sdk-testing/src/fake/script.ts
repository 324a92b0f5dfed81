// What a test tells the fake gateway: `FakeRun`, the script a run plays
// (its events, pauses, approvals, questions, artifacts, spawned tasks and
// how it ends),
// and `Fault`, a failure injected into the transport, with the helpers
// that take a queued fault when it fires (each is used up then).

import {
  RETRYABLE_CODES,
  refusals,
  type ApiError,
  type ArtifactType,
  type ErrorCode,
  type EventData,
} from "@talon/sdk";

import type { FakeTask } from "./tasks.js";

/** One step of a `FakeRun`. */
export type Step =
  | { kind: "event"; data: EventData }
  | { kind: "delay"; ms: number }
  | { kind: "approval"; tool: string; args: unknown }
  | { kind: "question"; prompt: string; choices: string[] }
  | { kind: "artifact"; name: string; type: ArtifactType; bytes: Uint8Array }
  | { kind: "spawn"; task: FakeTask };

/**
 * The script of one run of the fake gateway: its steps in order, then its
 * end (the assistant's reply and `run.completed`, or `run.failed`).
 *
 * ```ts
 * fake.scriptRun(FakeRun.reply("Done.").approval("write", { path: "a.txt" }).artifact("a.txt", "file", "hello"));
 * ```
 */
export class FakeRun {
  readonly #steps: Step[] = [];
  readonly #reply: string;
  #failure: ApiError | undefined;

  private constructor(reply: string) {
    this.#reply = reply;
  }

  /**
   * A run that answers `text`: `run.started`, `assistant.delta`s (8
   * characters each, as the mock model streams), `assistant.message`,
   * `run.completed`; its `RunResult` is `completed` with `output.text`.
   */
  static reply(text: string): FakeRun {
    return new FakeRun(text);
  }

  /** Emits this event, in order with the other steps (before the reply). */
  event(data: EventData): this {
    this.#steps.push({ kind: "event", data });
    return this;
  }

  /** Pauses `ms` between the steps around it (a cancelled run stops pausing). */
  delay(ms: number): this {
    this.#steps.push({ kind: "delay", ms: Math.max(0, ms) });
    return this;
  }

  /**
   * A call of `tool` (a name or a catalog id of the ToolSpace) that needs
   * approval: `tool.call.started`, `approval.requested` (pending, offering
   * what the gateway offers); the run waits for `approvals.respond` (the
   * first decision wins), then `approval.resolved` and
   * `tool.call.completed` (approved) or `tool.call.failed` (denied). A run
   * cancelled meanwhile resolves it `cancelled`.
   */
  approval(tool: string, args: unknown): this {
    this.#steps.push({ kind: "approval", tool, args });
    return this;
  }

  /**
   * An `ask_user` call: `question.requested`; the run waits for
   * `questions.respond` with one of `choices` (any answer without them),
   * then `question.answered`.
   */
  question(prompt: string, choices: string[] = []): this {
    this.#steps.push({ kind: "question", prompt, choices: [...choices] });
    return this;
  }

  /**
   * An artifact of the run: `artifact.created`; listed by
   * `artifacts.list`, `artifacts.get`, `artifacts.download` and the run's
   * `RunResult.artifacts`; its bytes at `/v1/artifacts/{id}/content`.
   */
  artifact(name: string, type: ArtifactType, bytes: Uint8Array | string): this {
    const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : new Uint8Array(bytes);
    this.#steps.push({ kind: "artifact", name, type, bytes: data });
    return this;
  }

  /**
   * A `sessions_spawn` call that starts a background task as the
   * gateway's sub-agents do: `tool.call.started`, the task recorded
   * (`task.updated`: `queued`, then `running`; its `runId` and session this
   * run's), `tool.call.completed` with `{ status: "accepted", taskId }`.
   * The run goes on at once; the task ends as `task` says, on its own time.
   */
  spawn(task: FakeTask): this {
    this.#steps.push({ kind: "spawn", task });
    return this;
  }

  /** Ends the run `run.failed` with this error (instead of the reply); `RunResult.error` carries it. */
  fail(code: ErrorCode, message: string): this {
    this.#failure = { code, message, retryable: RETRYABLE_CODES.includes(code) }; // the test's words
    return this;
  }

  /** Its steps (for the player). */
  get steps(): readonly Step[] {
    return this.#steps;
  }

  /** The reply's text. */
  get replyText(): string {
    return this.#reply;
  }

  /** How it fails, if it does. */
  get failure(): ApiError | undefined {
    return this.#failure;
  }
}

/** A failure injected into the fake gateway's transport; each is used up when it fires. */
export type Fault =
  /** The next stream opened (SSE, or a WebSocket subscription) is cut after `afterEvents` events: no terminal event, no error frame. */
  | { kind: "dropStream"; afterEvents: number }
  /** The next stream, `runs.events` or `events.subscribe` made with a cursor answers `cursor_expired` (410). */
  | { kind: "expireCursor" }
  /** The next `times` (default 1) calls of `method` answer `rate_limited` (429) with `retryAfterMs` and `Retry-After`. */
  | { kind: "rateLimited"; method: string; times?: number; retryAfterMs: number }
  /** The next `times` (default 1) calls of `method` answer `unavailable` (503). */
  | { kind: "unavailable"; method: string; times?: number }
  /** The next call of `method` waits `delayMs`, then is served. */
  | { kind: "slow"; method: string; delayMs: number };

/** What a method call's fault does to it. */
export type CallFault = { fail: ApiError } | { waitMs: number };

/** A queued fault and the calls it still applies to. */
export interface QueuedFault {
  fault: Fault;
  left: number;
}

/** Takes the first queued fault that applies to a call of `method`. */
export function takeCallFault(faults: QueuedFault[], method: string): CallFault | undefined {
  const at = faults.findIndex(({ fault }) => "method" in fault && fault.method === method);
  const queued = faults[at];
  if (!queued) return undefined;
  queued.left -= 1;
  if (queued.left <= 0) faults.splice(at, 1);
  const fault = queued.fault;
  switch (fault.kind) {
    case "rateLimited":
      return {
        fail: { ...refusals.injectedRateLimit(), retryAfterMs: fault.retryAfterMs },
      };
    case "unavailable":
      return { fail: refusals.injectedUnavailable() };
    case "slow":
      return { waitMs: fault.delayMs };
    default:
      return undefined;
  }
}

/** Takes the first queued `dropStream`: the events the stream may send. */
export function takeDrop(faults: QueuedFault[]): number | undefined {
  const at = faults.findIndex(({ fault }) => fault.kind === "dropStream");
  const queued = faults[at];
  if (queued?.fault.kind !== "dropStream") return undefined;
  faults.splice(at, 1);
  return Math.max(0, Math.floor(queued.fault.afterEvents));
}

/** Takes the first queued `expireCursor`. */
export function takeExpire(faults: QueuedFault[]): boolean {
  const at = faults.findIndex(({ fault }) => fault.kind === "expireCursor");
  if (at < 0) return false;
  faults.splice(at, 1);
  return true;
}

/** How many calls a fault applies to. */
export function timesOf(fault: Fault): number {
  if (fault.kind === "rateLimited" || fault.kind === "unavailable") return Math.max(1, Math.floor(fault.times ?? 1));
  return 1;
}

/** The error of an expired cursor, worded as the gateway words it (the oldest event kept is the one after it). */
export function cursorExpired(cursor: bigint): ApiError {
  const oldest = cursor + 1n;
  return refusals.cursorExpired(String(cursor), String(oldest));
}
