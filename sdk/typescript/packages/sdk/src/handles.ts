// The handles the high level hands out besides runs and sessions:
// `Approval` (decide), `Question` (answer), `Artifact` (download as a
// stream, checked against its announced length), `Environment` (status,
// delete) and `Task` (read, cancel, change its policy, its events).

import { TalonError } from "./errors.js";
import { EventStream } from "./events.js";
import type { CallOptions } from "./generated/client.js";
import { TASK_TERMINAL_STATUSES } from "./generated/rules.js";
import type * as T from "./generated/types.js";
import { errorOf } from "./http.js";
import { PagePromise } from "./pages.js";
import type { Context } from "./run.js";

/** One approval request, to decide. */
export class Approval {
  readonly #context: Context;
  #info: T.Approval;

  constructor(context: Context, info: T.Approval) {
    this.#context = context;
    this.#info = info;
  }

  /** Its id. */
  get id(): string {
    return this.#info.id;
  }

  /** The approval as last seen. */
  get info(): T.Approval {
    return this.#info;
  }

  /** Decides it (the first decision wins: a later one is `conflict`). */
  async respond(decision: T.ApprovalDecision, options: { reason?: string } & CallOptions = {}): Promise<T.Approval> {
    const { reason, ...call } = options;
    const params: Omit<T.ApprovalsRespondParams, "approvalId"> = { decision };
    if (reason !== undefined) params.reason = reason;
    this.#info = await this.#context.client.approvals.respond(this.id, params, call);
    return this.#info;
  }

  /** Allows this one call. */
  approveOnce(options?: { reason?: string } & CallOptions): Promise<T.Approval> {
    return this.respond("approve_once", options);
  }

  /** Refuses it. */
  deny(options?: { reason?: string } & CallOptions): Promise<T.Approval> {
    return this.respond("deny", options);
  }
}

/** One question the run asked the app or its user. */
export class Question {
  readonly #context: Context;
  #info: T.Question;

  constructor(context: Context, info: T.Question) {
    this.#context = context;
    this.#info = info;
  }

  /** Its id. */
  get id(): string {
    return this.#info.id;
  }

  /** The question as last seen. */
  get info(): T.Question {
    return this.#info;
  }

  /** Answers it (checked against its `answerSchema` by the gateway). */
  async answer(answer: unknown, options?: CallOptions): Promise<T.Question> {
    this.#info = await this.#context.client.questions.respond(this.id, { answer }, options);
    return this.#info;
  }
}

/** One artifact of a run or session. */
export class Artifact {
  readonly #context: Context;
  /** Its summary. */
  readonly info: T.ArtifactSummary;

  constructor(context: Context, info: T.ArtifactSummary) {
    this.#context = context;
    this.info = info;
  }

  /** Its id. */
  get id(): string {
    return this.info.id;
  }

  /**
   * Its bytes as a stream. The stream errors with `TalonError` when the
   * body ends before (or runs past) the length the gateway announced, so
   * a cut download never passes for a whole one.
   */
  async download(options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const runId = this.info.runId ?? undefined;
    const where = await this.#context.client.artifacts.download(this.id, runId ? { runId } : {}, options);
    // The token goes with the request, so only to the gateway's origin.
    const target = new URL(where.url, this.#context.caller.base);
    const url = this.#context.caller.url(`${target.pathname.slice(1)}${target.search}`);
    const init: RequestInit = { headers: await this.#context.caller.headers() };
    if (options.signal) init.signal = options.signal;
    let response: Response;
    try {
      response = await this.#context.caller.fetch(url, init);
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      throw new TalonError(`downloading artifact ${this.id} failed: ${String(cause)}`, {
        code: "unavailable",
        retryable: true,
        cause,
      });
    }
    if (!response.ok || !response.body) throw await errorOf(response, `GET ${url.pathname}`);
    const header = response.headers.get("content-length");
    const expected = header === null ? (where.artifact.sizeBytes ?? undefined) : Number(header);
    return response.body.pipeThrough(checkedLength(expected, this.id));
  }

  /** Its bytes, whole, as one array (for small artifacts). */
  async bytes(options?: CallOptions): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let length = 0;
    for await (const chunk of streamChunks(await this.download(options))) {
      chunks.push(chunk);
      length += chunk.length;
    }
    const out = new Uint8Array(length);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }
}

async function* streamChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

function checkedLength(expected: number | undefined, id: string): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  const cut = (total: number) =>
    new TalonError(`artifact ${id}'s download was cut off: ${seen} of ${total} bytes`, {
      code: "unavailable",
      retryable: true,
    });
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.length;
      if (expected !== undefined && seen > expected) controller.error(cut(expected));
      else controller.enqueue(chunk);
    },
    flush(controller) {
      if (expected !== undefined && seen !== expected) controller.error(cut(expected));
    },
  });
}

/** Every artifact `params` selects (a run's, a session's), page after page, as handles. */
export async function listArtifacts(
  context: Context,
  params: Omit<T.ArtifactsListParams, "cursor">,
  options?: CallOptions,
): Promise<Artifact[]> {
  const out: Artifact[] = [];
  let cursor: string | undefined;
  do {
    const page = await context.client.artifacts.list(cursor ? { ...params, cursor } : params, options);
    out.push(...page.artifacts.map((a) => new Artifact(context, a)));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/** One managed environment. */
export class Environment {
  readonly #context: Context;
  #info: T.Environment;

  constructor(context: Context, info: T.Environment) {
    this.#context = context;
    this.#info = info;
  }

  /** Its id. */
  get id(): string {
    return this.#info.id;
  }

  /** The environment as last seen. */
  get info(): T.Environment {
    return this.#info;
  }

  /** Its state now. */
  async status(options?: CallOptions): Promise<T.Environment> {
    this.#info = await this.#context.client.environments.status(this.id, options);
    return this.#info;
  }

  /** Deletes it (its workspace removed or kept by policy). */
  async delete(options?: CallOptions): Promise<T.Environment> {
    this.#info = await this.#context.client.environments.delete(this.id, {}, options);
    return this.#info;
  }
}

/**
 * A background task: a sub-agent a run spawned, read and changed through
 * `tasks.*`. `wait()` follows the log (never polls): it replays the task's
 * stored events (`tasks.events`) to learn where it is and the cursor they end
 * at, then follows `task.updated` on the event stream from that cursor until
 * the task's own says it has ended; no change is missed between the two.
 */
export class Task {
  readonly #context: Context;
  /** Its id. */
  readonly id: string;
  #info: T.Task | undefined;

  constructor(context: Context, id: string, info?: T.Task) {
    this.#context = context;
    this.id = id;
    this.#info = info;
  }

  /** The task as last seen (listed, fetched, changed or waited for); `undefined` before any of those. */
  get info(): T.Task | undefined {
    return this.#info;
  }

  /** The task as it is now. */
  async get(options?: CallOptions): Promise<T.Task> {
    this.#info = await this.#context.client.tasks.get(this.id, options);
    return this.#info;
  }

  /** Cancels it (and the run it tracks); `conflict` once it has ended. */
  async cancel(reason?: string, options?: CallOptions): Promise<T.Task> {
    this.#info = await this.#context.client.tasks.cancel(this.id, reason === undefined ? {} : { reason }, options);
    return this.#info;
  }

  /** Changes how its result reaches the session that started it; `conflict` once it has ended. */
  async notify(policy: T.NotifyPolicy, options?: CallOptions): Promise<T.Task> {
    this.#info = await this.#context.client.tasks.notify(this.id, { notifyPolicy: policy }, options);
    return this.#info;
  }

  /** Its events stored so far after `after` (its `task.updated` events and its run's), page by page. */
  async *events(options: { after?: string; signal?: AbortSignal } = {}): AsyncGenerator<T.EventEnvelope> {
    let after = options.after;
    for (;;) {
      const page = await this.#context.client.tasks.events(
        this.id,
        after === undefined ? {} : { after },
        options.signal ? { signal: options.signal } : undefined,
      );
      yield* page.events;
      const last = page.events.at(-1);
      if (page.done || last === undefined) return;
      after = last.id;
    }
  }

  /**
   * Waits for it to end, however long it takes, and returns it as it ended
   * (its `result` or `error`), following the event stream (see the class's
   * doc). `signal` stops the wait (it rejects with the signal's reason).
   */
  async wait(options: { signal?: AbortSignal } = {}): Promise<T.Task> {
    const { signal } = options;
    let after: string | undefined;
    for (;;) {
      signal?.throwIfAborted();
      const page = await this.#context.client.tasks.events(
        this.id,
        after === undefined ? {} : { after },
        signal ? { signal } : undefined,
      );
      for (const event of page.events) {
        const ended = this.#ended(event);
        if (ended) return (this.#info = ended);
      }
      const last = page.events.at(-1);
      if (page.done || last === undefined) break;
      after = last.id;
    }
    const stream = new EventStream(
      this.#context.caller,
      { log: { types: ["task.updated"] } },
      { after, signal },
      this.#context.streamAuth,
    );
    for await (const event of stream) {
      const ended = this.#ended(event);
      if (ended) return (this.#info = ended);
    }
    signal?.throwIfAborted();
    throw new TalonError(`the event stream ended before task ${this.id} did`, { code: "unavailable", retryable: true });
  }

  /** The task as `event` says it ended, if it is this task's terminal `task.updated`. */
  #ended(event: T.EventEnvelope): T.Task | undefined {
    if (event.type !== "task.updated" || event.taskId !== this.id) return undefined;
    const task = event.data as T.Task;
    return TASK_TERMINAL_STATUSES.includes(task.status) ? task : undefined;
  }
}

/** Every task `params` selects, newest first: awaited, the first page; iterated, every task of every page as a handle. */
export function listTasks(
  context: Context,
  params: Omit<T.TasksListParams, "cursor"> = {},
  options?: CallOptions,
): PagePromise<T.TasksListResult, Task> {
  return new PagePromise(
    (cursor) => context.client.tasks.list(cursor === undefined ? params : { ...params, cursor }, options),
    (page) => page.tasks.map((t) => new Task(context, t.id, t)),
    (page) => page.nextCursor,
  );
}
