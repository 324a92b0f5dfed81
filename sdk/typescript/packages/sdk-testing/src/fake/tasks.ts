// Background tasks in the fake: `FakeTask`, a sub-agent a test scripts
// (started by a scripted run, `FakeRun.spawn`, or added directly,
// `fake.addTask`), and `tasks.*` answered from memory as the gateway
// answers from its store. Every change appends `task.updated` (carrying
// `taskId`) to the one log, so streams and `tasks.events` see it; a task
// moves `queued → running →` its scripted end, and an ended task never
// moves again (`tasks.cancel` and `tasks.notify` then refuse it with the
// table's `task_ended`).
//
// Not modelled (as in the Rust fake; docs/fake-differences.md): a fake's
// task has no child run or session (`childRunId` is absent; its events are
// its own `task.updated`), and no message is posted to the session that
// started it: an ended task's `deliveryStatus` is `delivered` at once
// (`not_applicable` when `silent`).

import {
  NOTIFY_POLICIES,
  TASK_KINDS,
  TASK_STATUSES,
  TASK_TERMINAL_STATUSES,
  refusals,
  type ErrorCode,
  type protocol as P,
  RETRYABLE_CODES,
} from "@talon/sdk";

import { fail, notFound } from "./errors.js";
import { cursorOf, indexAfter, limitOf } from "./runs.js";
import { DEFAULT_AGENT, now, type State } from "./state.js";
import { copy } from "./wire.js";

/** How a `FakeTask` ends by itself. */
type Ending = { status: "succeeded"; result: string } | { status: "failed"; error: P.ApiError } | { status: "held" };

/**
 * The script of one background task (a sub-agent): what it was asked, how
 * long its work takes and how it ends.
 *
 * ```ts
 * fake.scriptRun(FakeRun.reply("Spawned.").spawn(FakeTask.of("find the answer").label("finder").result("42").takes(50)));
 * const held = fake.addTask(FakeTask.of("watch the logs").held());
 * fake.finishTask(held.id, "succeeded", "all quiet");
 * ```
 */
export class FakeTask {
  readonly description: string;
  #label: string | undefined;
  #agentId = DEFAULT_AGENT;
  #notifyPolicy: P.NotifyPolicy = "done_only";
  #takesMs = 0;
  #ending: Ending = { status: "succeeded", result: "ok" };

  private constructor(description: string) {
    this.description = description;
  }

  /** A sub-agent asked to do `description`, of the agent `main`, that succeeds at once with the result `ok`. */
  static of(description: string): FakeTask {
    return new FakeTask(description);
  }

  /** Its `label`. */
  label(label: string): this {
    this.#label = label;
    return this;
  }

  /** The agent doing the work (`agentId`). */
  agent(agentId: string): this {
    this.#agentId = agentId;
    return this;
  }

  /** Its notification policy at the start. */
  notify(policy: P.NotifyPolicy): this {
    this.#notifyPolicy = policy;
    return this;
  }

  /** Succeeds with `text` as its `result`. */
  result(text: string): this {
    this.#ending = { status: "succeeded", result: text };
    return this;
  }

  /** Fails with this error (its `error`). */
  fail(code: ErrorCode, message: string): this {
    this.#ending = { status: "failed", error: { code, message, retryable: RETRYABLE_CODES.includes(code) } }; // the test's words
    return this;
  }

  /** Its work takes `ms` (it stays `running` that long) before it ends. */
  takes(ms: number): this {
    this.#takesMs = Math.max(0, ms);
    return this;
  }

  /** Stays `running` until the test ends it (`fake.finishTask`) or a caller cancels it. */
  held(): this {
    this.#ending = { status: "held" };
    return this;
  }

  /** @internal The task as first recorded. */
  recordOf(id: string, parent: P.Run | undefined): P.Task {
    const at = now();
    const task: P.Task = {
      createdAt: at,
      deliveryStatus: this.#notifyPolicy === "silent" ? "not_applicable" : "pending",
      depth: 1,
      description: this.description,
      agentId: this.#agentId,
      id,
      kind: "subagent",
      notifyPolicy: this.#notifyPolicy,
      status: "queued",
      updatedAt: at,
    };
    if (this.#label !== undefined) task.label = this.#label;
    if (parent) {
      task.runId = parent.id;
      if (parent.sessionId) task.sessionId = parent.sessionId;
      if (parent.sessionKey) task.sessionKey = parent.sessionKey;
    }
    return task;
  }

  /** @internal Its label, if it has one. */
  get labelText(): string | undefined {
    return this.#label;
  }

  /** @internal How long, and how it ends. */
  get ending(): { takesMs: number; ending: Ending } {
    return { takesMs: this.#takesMs, ending: this.#ending };
  }
}

function isEnded(task: P.Task): boolean {
  return TASK_TERMINAL_STATUSES.includes(task.status);
}

/** `task.updated` for `task` as it now is (the gateway's envelope: no run, the session that started it, `taskId`). */
function announce(state: State, task: P.Task): void {
  const event: Omit<P.EventEnvelope, "id"> = {
    version: 1,
    ts: task.updatedAt,
    type: "task.updated",
    taskId: task.id,
    data: copy(task),
  };
  if (task.agentId) event.agentId = task.agentId;
  if (task.sessionId) event.sessionId = task.sessionId;
  if (task.sessionKey) event.sessionKey = task.sessionKey;
  state.push(event);
}

/** Records a new task for `spec`, started by `parent` (if any): `queued`, then `running`, each announced; then plays its end. */
export function createTask(state: State, spec: FakeTask, parent?: P.Run): P.Task {
  const task = spec.recordOf(state.newId("task"), parent);
  state.tasks.push(task);
  announce(state, task);
  const running = moveTask(state, task.id, (t) => {
    t.status = "running";
    t.startedAt = t.createdAt;
  });
  void playTask(state, task.id, spec);
  return copy(running ?? task);
}

/**
 * Changes the task `id` with `change` and announces it; `undefined` when
 * there is no such task or it has ended (an ended task never moves). A
 * change that ends it stamps `endedAt` and settles its delivery.
 */
export function moveTask(state: State, id: string, change: (task: P.Task) => void): P.Task | undefined {
  const task = state.tasks.find((t) => t.id === id);
  if (!task || isEnded(task)) return undefined;
  change(task);
  const at = now();
  task.updatedAt = Math.max(at, task.updatedAt + 1);
  if (isEnded(task)) {
    task.endedAt = at;
    if (task.deliveryStatus === "pending") {
      task.deliveryStatus = "delivered";
      task.deliveredAt = at;
    }
  }
  announce(state, task);
  return copy(task);
}

/** Ends the task `id` as `spec` says, after its work's time, unless it ended first (cancelled). */
async function playTask(state: State, id: string, spec: FakeTask): Promise<void> {
  const { takesMs, ending } = spec.ending;
  if (ending.status === "held") return;
  if (takesMs > 0) await state.sleep(takesMs);
  if (state.closing) return;
  moveTask(state, id, (t) => {
    t.status = ending.status;
    if (ending.status === "succeeded") t.result = ending.result;
    else t.error = copy(ending.error);
  });
}

function taskOf(state: State, id: string): P.Task {
  const task = state.tasks.find((t) => t.id === id);
  if (!task) throw notFound("task", id);
  return task;
}

/** `tasks.list`: newest first, filtered, paged by task id. */
export function listTasks(state: State, p: P.TasksListParams): P.TasksListResult {
  if ((p.status ?? []).some((s) => !TASK_STATUSES.includes(s))) throw fail(refusals.unknownTaskStatus());
  if (p.kind !== undefined && p.kind !== null && !TASK_KINDS.includes(p.kind)) throw fail(refusals.unknownTaskKind());
  if (p.cursor !== undefined && p.cursor !== null && !state.tasks.some((t) => t.id === p.cursor)) {
    throw fail(refusals.cursorNotATask(p.cursor));
  }
  // Keyset paging, as the gateway's: the tasks older than the cursor's,
  // whether or not the cursor's own still passes the filter.
  const newest = [...state.tasks].reverse();
  const at = p.cursor ? newest.findIndex((t) => t.id === p.cursor) + 1 : 0;
  const rest = newest
    .slice(at)
    .filter(
      (t) =>
        (!p.status || p.status.includes(t.status)) &&
        (!p.kind || t.kind === p.kind) &&
        (!p.sessionId || t.sessionId === p.sessionId) &&
        (!p.runId || t.runId === p.runId),
    );
  const size = limitOf(p.limit);
  const tasks = copy(rest.slice(0, size));
  const next = rest.length > size ? tasks.at(-1)?.id : undefined;
  return next ? { tasks, nextCursor: next } : { tasks };
}

/** `tasks.get`. */
export function getTask(state: State, p: P.TaskRef): P.Task {
  return copy(taskOf(state, p.taskId));
}

/** `tasks.cancel`: `cancelled` (the reason as its progress, as the gateway words it), or `task_ended` once it has ended. */
export function cancelTask(state: State, p: P.TasksCancelParams): P.Task {
  const read = taskOf(state, p.taskId);
  if (isEnded(read)) throw fail(refusals.taskEnded(read.id, read.status));
  const moved = moveTask(state, read.id, (t) => {
    t.status = "cancelled";
    if (p.reason !== undefined && p.reason !== null) t.progressSummary = `cancelled: ${p.reason}`;
  });
  if (!moved) throw fail(refusals.taskBusy(read.id));
  return moved;
}

/** `tasks.notify`: the new policy, or `task_ended` once it has ended. */
export function notifyTask(state: State, p: P.TasksNotifyParams): P.Task {
  if (!NOTIFY_POLICIES.includes(p.notifyPolicy)) throw fail(refusals.unknownNotifyPolicy());
  const read = taskOf(state, p.taskId);
  if (isEnded(read)) throw fail(refusals.taskEnded(read.id, read.status));
  const moved = moveTask(state, read.id, (t) => {
    t.notifyPolicy = p.notifyPolicy;
    t.deliveryStatus = p.notifyPolicy === "silent" ? "not_applicable" : "pending";
  });
  if (!moved) throw fail(refusals.taskBusy(read.id));
  return moved;
}

/** `tasks.events`: its `task.updated` events after the cursor; `done` once the page holds its last change. */
export function taskEvents(state: State, p: P.TasksEventsParams): P.TasksEventsResult {
  const task = taskOf(state, p.taskId);
  const after = cursorOf(p.after);
  const limit = limitOf(p.limit);
  const events: P.EventEnvelope[] = [];
  for (let i = indexAfter(after); i < state.log.length && events.length < limit; i++) {
    const event = state.log[i];
    if (event?.envelope.taskId === task.id) events.push(JSON.parse(event.json) as P.EventEnvelope);
  }
  const done = events.some((e) => {
    if (e.type !== "task.updated") return false;
    const t = e.data as P.Task;
    return TASK_TERMINAL_STATUSES.includes(t.status) && t.deliveryStatus !== "pending";
  });
  return { done, events };
}
