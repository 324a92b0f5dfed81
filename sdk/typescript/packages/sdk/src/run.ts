// `Run`: one run of an agent, as an app drives it. Its `events()` resume by
// themselves after a dropped connection (from the last id delivered: no
// duplicate, no gap); `wait()` waits for the result however long the run
// takes (in slices of `runs.wait`); `onApproval(handler)` answers the
// run's approval requests with the app's policy.

import type { CallOptions, GatewayClient } from "./generated/client.js";
import type * as T from "./generated/types.js";
import { EventStream, type EventsOptions, type StreamAuth } from "./events.js";
import type { HttpCaller } from "./http.js";
import { TalonError, isTalonError } from "./errors.js";
import { Approval, listArtifacts, listTasks, type Artifact, type Task } from "./handles.js";
import { Session } from "./session.js";

/** How long one `runs.wait` call waits before `Run.wait` asks again. */
const WAIT_SLICE_MS = 30_000;

/** What the high-level objects share: the client and its transport. */
export interface Context {
  readonly client: GatewayClient;
  readonly caller: HttpCaller;
  readonly streamAuth: StreamAuth;
}

/** What an approval handler decides. */
export type ApprovalAction =
  | { action: "approve_once"; reason?: string | undefined }
  | { action: "deny"; reason?: string | undefined }
  | { action: "ask_user" };

/** One approval request as a handler sees it, in the seed's shape. */
export interface ApprovalRequest {
  /** The approval's id. */
  readonly id: string;
  /** What kind of request (`tool`, `environment`, ...). */
  readonly kind: T.ApprovalKind;
  /**
   * The tool asked for, when it is a tool call: its name as the model calls it and `tools.list`
   * shows it (`write`, `exec`), what a policy reads (`request.toolName === "exec"`).
   */
  readonly toolName: string | undefined;
  /**
   * The tool's catalog id (`openclaw:core:write`), which identifies it exactly where two tools
   * share a name (approvals stored before it existed have the id in `toolName` instead).
   */
  readonly toolId: string | undefined;
  /** What is asked, in a line. */
  readonly summary: string;
  /** The risk the gateway sees. */
  readonly risk: T.RiskLevel;
  /** The decisions it accepts. */
  readonly decisions: readonly T.ApprovalDecision[];
  /** When it expires (epoch milliseconds), if it does. */
  readonly expiresAt: number | undefined;
  /** The whole approval as the gateway keeps it. */
  readonly approval: T.Approval;
  /** Allow this one call. */
  approveOnce(options?: { reason?: string }): ApprovalAction;
  /** Refuse it; the model reads the reason. */
  deny(options?: { reason?: string }): ApprovalAction;
  /** Leave it for a person (another client, a dashboard). */
  askUser(): ApprovalAction;
}

/** Answers one approval request. */
export type ApprovalHandler = (request: ApprovalRequest) => ApprovalAction | Promise<ApprovalAction>;

/** The request object a handler gets. */
export function approvalRequest(approval: T.Approval): ApprovalRequest {
  return {
    id: approval.id,
    kind: approval.kind,
    toolName: approval.toolName ?? undefined,
    toolId: approval.toolId ?? undefined,
    summary: approval.summary,
    risk: approval.risk,
    decisions: approval.decisions,
    expiresAt: approval.expiresAt ?? undefined,
    approval,
    approveOnce: (options) => ({ action: "approve_once", reason: options?.reason }),
    deny: (options) => ({ action: "deny", reason: options?.reason }),
    askUser: () => ({ action: "ask_user" }),
  };
}

/** A run's tool surface, as the gateway lists it for the run's agent and session. */
export class ToolSpace {
  readonly #tools: readonly T.ToolSummary[];

  constructor(tools: readonly T.ToolSummary[]) {
    this.#tools = tools;
  }

  /** Every tool: `name`, `source`, `requiresApproval` and the rest of its summary. */
  list(): readonly T.ToolSummary[] {
    return this.#tools;
  }
}

/** One run of an agent. */
export class Run {
  readonly #context: Context;
  #info: T.Run;

  constructor(context: Context, info: T.Run) {
    this.#context = context;
    this.#info = info;
  }

  /** Its id. */
  get id(): string {
    return this.#info.id;
  }

  /** The run as last fetched (`refresh()` fetches it again). */
  get info(): T.Run {
    return this.#info;
  }

  /** The run as the gateway has it now. */
  async refresh(options?: CallOptions): Promise<T.Run> {
    this.#info = await this.#context.client.runs.get(this.id, options);
    return this.#info;
  }

  /**
   * Its events, from the first (or after `options.after`, a saved
   * cursor), to its terminal event; they resume by themselves after a cut.
   */
  events(options: EventsOptions = {}): EventStream {
    const { sessionKey, agentId } = this.#info;
    return new EventStream(
      this.#context.caller,
      { run: this.id, sessionKey, agentId },
      options,
      this.#context.streamAuth,
    );
  }

  /**
   * Waits for the run's result. With `timeoutMs`, gives up after that
   * long and returns the `accepted` result (the run goes on: `accepted`
   * is not `timed_out`); without it, waits however long the run takes.
   */
  async wait(options: CallOptions = {}): Promise<T.RunResult> {
    const until = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    for (;;) {
      const left = until === undefined ? WAIT_SLICE_MS : Math.max(0, Math.min(WAIT_SLICE_MS, until - Date.now()));
      const call: CallOptions = { timeoutMs: left + 30_000 };
      if (options.signal) call.signal = options.signal;
      if (options.maxRetries !== undefined) call.maxRetries = options.maxRetries;
      const result = await this.#context.client.runs.wait(this.id, { timeoutMs: left }, call);
      if (result.status !== "accepted") return result;
      if (until !== undefined && Date.now() >= until) return result;
    }
  }

  /** Cancels the run (its pending approvals end `cancelled`). */
  async cancel(options: { reason?: string } & CallOptions = {}): Promise<T.Run> {
    const { reason, ...call } = options;
    this.#info = await this.#context.client.runs.cancel(this.id, reason === undefined ? {} : { reason }, call);
    return this.#info;
  }

  /** Its artifacts. */
  readonly artifacts = {
    /** Every artifact of the run, each a handle to download. */
    list: (options?: CallOptions): Promise<Artifact[]> => listArtifacts(this.#context, { runId: this.id }, options),
  };

  /**
   * The background tasks it started (sub-agents it spawned), newest first,
   * each a `Task` handle: `for await (const task of run.tasks())`, every page.
   */
  async *tasks(
    params: Omit<T.TasksListParams, "runId" | "cursor"> = {},
    options?: CallOptions,
  ): AsyncGenerator<Task, void, undefined> {
    yield* listTasks(this.#context, { ...params, runId: this.id }, options);
  }

  /** Its approvals (all of them, or with `status`), each a handle to decide. */
  async approvals(params: Omit<T.ApprovalsListParams, "runId"> = {}, options?: CallOptions): Promise<Approval[]> {
    const listed = await this.#context.client.approvals.list({ ...params, runId: this.id }, options);
    return listed.approvals.map((a) => new Approval(this.#context, a));
  }

  /** Its session (a run on a gateway always has one). */
  async session(options?: CallOptions): Promise<Session> {
    const sessionId = this.#info.sessionId ?? (await this.refresh(options)).sessionId;
    if (!sessionId) throw new TalonError(`run ${this.id} has no session`, { code: "not_found" });
    return new Session(this.#context, sessionId);
  }

  /** The tools the run's agent sees in its session. */
  async toolSpace(options?: CallOptions): Promise<ToolSpace> {
    const params: T.ToolsListParams = { agentId: this.#info.agentId };
    if (this.#info.sessionKey) params.sessionKey = this.#info.sessionKey;
    const tools: T.ToolSummary[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#context.client.tools.list(cursor ? { ...params, cursor } : params, options);
      tools.push(...page.tools);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return new ToolSpace(tools);
  }

  /**
   * Answers each of the run's approval requests with `handler`: those
   * already pending, then each `approval.requested` as it comes, until the
   * run ends or the returned function is called. `askUser` leaves the
   * request pending; an answer that lost to another (`conflict`) is not
   * an error. A handler that throws leaves its request pending too. A
   * failure that stops the watch goes to `options.onError` (else the
   * console).
   */
  onApproval(
    handler: ApprovalHandler,
    options: { signal?: AbortSignal; onError?: (error: unknown) => void } = {},
  ): () => void {
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
    const seen = new Set<string>();
    const answer = async (approval: T.Approval) => {
      if (seen.has(approval.id) || approval.status !== "pending") return;
      seen.add(approval.id);
      let action: ApprovalAction;
      try {
        action = await handler(approvalRequest(approval));
      } catch {
        return;
      }
      if (action.action === "ask_user") return;
      const params: Omit<T.ApprovalsRespondParams, "approvalId"> = { decision: action.action };
      if (action.reason !== undefined) params.reason = action.reason;
      try {
        await this.#context.client.approvals.respond(approval.id, params, { signal });
      } catch (error) {
        if (!isTalonError(error, "conflict") && !signal.aborted) throw error;
      }
    };
    const watch = async () => {
      const pending = await this.#context.client.approvals.list({ runId: this.id, status: "pending" }, { signal });
      for (const approval of pending.approvals) await answer(approval);
      for await (const event of this.events({ signal })) {
        if (event.type !== "approval.requested") continue;
        const listed = await this.#context.client.approvals.list({ runId: this.id, status: "pending" }, { signal });
        for (const approval of listed.approvals) await answer(approval);
      }
    };
    watch().catch((error: unknown) => {
      if (signal.aborted) return;
      // Never silent: the app's handler, or the console.
      if (options.onError) options.onError(error);
      else console.warn(`talon: answering run ${this.id}'s approvals stopped:`, error);
    });
    return () => {
      stop.abort();
    };
  }
}
