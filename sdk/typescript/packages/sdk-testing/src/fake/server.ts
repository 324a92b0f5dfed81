// `FakeGateway`: an in-process fake of the Talon gateway for Node, serving
// every method of the protocol's table over the real transports on
// 127.0.0.1 (`POST /v1/<method>`, the SSE streams, the WebSocket, artifact
// bytes) with the gateway's paths, status codes, error envelope, headers,
// event envelopes and cursors. State is in memory. Runs play scripts
// (`FakeRun`, queued with `scriptRun`; an unscripted run replies "ok"),
// background tasks are scripted (`FakeTask`: `FakeRun.spawn`, `addTask`,
// `finishTask`),
// `Fault`s injected with `inject` exercise a client's retries and
// resumption, and `calls()` records every call. One agent, `main`, and one
// model, `mock/mock-model`; the ToolSpace a default gateway lists.
//
// Deliberately absent (as in the Rust fake): ownership (a bound token's
// `subject` and `agents` are checked and echoed by `tokens.create`, but
// every caller sees every subject's records), approval expiry and remembered
// decisions (`approve_session`/`approve_always` never approve a later
// call), runs behind `tools.invoke` (it answers what the test set), the
// rate limiter, stored-bytes quotas, and model-written compaction summaries.

import type { AddressInfo } from "node:net";

import type { protocol as P } from "@talon/sdk";

import { HttpTransport } from "./http.js";
import { timesOf, type Fault, type FakeRun } from "./script.js";
import { State, type RecordedCall } from "./state.js";
import { createTask, moveTask, type FakeTask } from "./tasks.js";
import { copy } from "./wire.js";

/** How to start a fake gateway. */
export interface FakeGatewayOptions {
  /** The bearer token it takes (an admin token); default `fake-token`. */
  token?: string;
  /** How long an idle SSE stream waits before a heartbeat comment, in milliseconds (the gateway's 15 000 by default). */
  heartbeatMs?: number;
}

/** A fake Talon gateway serving on `127.0.0.1` until `close()`. */
export class FakeGateway {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The bearer token it takes (an admin token). */
  readonly token: string;
  readonly #state: State;
  readonly #http: HttpTransport;
  #closed: Promise<void> | undefined;

  private constructor(url: string, state: State, http: HttpTransport) {
    this.url = url;
    this.token = state.token;
    this.#state = state;
    this.#http = http;
  }

  /** Starts serving on `127.0.0.1:0`. */
  static async start(options: FakeGatewayOptions = {}): Promise<FakeGateway> {
    const state = new State(options.token ?? "fake-token", options.heartbeatMs ?? 15_000);
    const http = new HttpTransport(state);
    await new Promise<void>((resolve, reject) => {
      http.server.once("error", reject);
      http.server.listen(0, "127.0.0.1", () => {
        http.server.off("error", reject);
        resolve();
      });
    });
    const { port } = http.server.address() as AddressInfo;
    return new FakeGateway(`http://127.0.0.1:${port}`, state, http);
  }

  /** Queues the script of the next run created (`runs.create` or `sessions.send`); with an empty queue a run plays `FakeRun.reply("ok")`. */
  scriptRun(run: FakeRun): void {
    this.#state.scripts.push(run);
  }

  /** Queues a fault; each is used up when it fires. */
  inject(fault: Fault): void {
    this.#state.faults.push({ fault: { ...fault }, left: timesOf(fault) });
  }

  /** Every method call received (HTTP and WebSocket, faulted ones too), in order. */
  calls(): RecordedCall[] {
    return copy(this.#state.calls);
  }

  /**
   * Records a background task not started by any run (`runId` absent),
   * announced with `task.updated` (`queued`, then `running`), that ends as
   * `task` says; returns it as it now is.
   */
  addTask(task: FakeTask): P.Task {
    return createTask(this.#state, task);
  }

  /**
   * Moves the task `id` (a `held()` one, or any not yet ended) to `status`,
   * with `text` as its result (a success), error message (another end) or
   * progress (`running`); announced with `task.updated`. `undefined` when
   * there is no such task or it has already ended.
   */
  finishTask(id: string, status: P.TaskStatus, text?: string): P.Task | undefined {
    return moveTask(this.#state, id, (t) => {
      t.status = status;
      if (text === undefined) return;
      if (status === "succeeded") t.result = text;
      else if (status === "running" || status === "queued") t.progressSummary = text;
      else t.error = { code: "internal", message: text, retryable: false }; // the test's words
    });
  }

  /** What `tools.list` answers (and a run's `toolSpace()`, and the tools `run.started` names). */
  setTools(tools: P.ToolSummary[]): void {
    this.#state.tools = copy(tools);
  }

  /** What `tools.invoke` answers for `tool` (by name or catalog id); other tools are `not_found`. */
  setInvokeResult(tool: string, result: unknown): void {
    this.#state.invokeResults.set(tool, copy(result ?? null));
  }

  /** Ends open streams and sockets, stops waiting runs, and closes the listener. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#state.close();
      await this.#http.close();
    })();
    return this.#closed;
  }
}
