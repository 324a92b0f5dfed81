// `Talon`: the high-level entry point. `new Talon({ baseUrl, token })`,
// then `talon.agent("main").run("…")` for a `Run`, `talon.events()` for
// the whole log, and `talon.client` for every method of the table.

import { TalonError } from "./errors.js";
import { EventStream, type EventsOptions, type LogFilter, type StreamAuth } from "./events.js";
import { GatewayClient, type CallOptions } from "./generated/client.js";
import type * as T from "./generated/types.js";
import { HttpCaller, type ClientOptions } from "./http.js";
import { Approval, Artifact, Environment, Question, Task, listTasks } from "./handles.js";
import type { PagePromise } from "./pages.js";
import { Run, type Context } from "./run.js";
import { WsCaller, type Subscription } from "./ws.js";
import { Session, callOptions } from "./session.js";

/** How to reach a gateway, and how the client behaves. */
export interface TalonOptions extends ClientOptions {
  /**
   * How event streams authenticate (default `header`): `ticket` mints a
   * short-lived, single-use, read-only ticket for each connection's one
   * stream, for pages that must not put a long-lived token in a URL.
   */
  streamAuth?: StreamAuth;
  /**
   * How calls travel (default `http`): `websocket` sends them over one
   * WebSocket (its token sent as the first frame) and serves `subscribe`.
   */
  transport?: "http" | "websocket";
  /**
   * How event streams travel (default `sse`: each `events()` its own
   * Server-Sent Events response): `websocket` makes every stream of the
   * client (`talon.events()`, `run.events()`, a task's wait) a
   * subscription on one WebSocket, whatever `transport` is, resuming from
   * its cursor as an SSE stream does. A socket holds at most
   * `caps.MAX_SUBSCRIPTIONS` subscriptions; past that another opens, and
   * closes once it holds none. `streamAuth` is then unused: the socket
   * authenticates once, in its first frame. It also serves `subscribe`.
   */
  streams?: "sse" | "websocket";
}

/** What a run starts from: its input, or the whole `runs.create` params without the agent. */
export type RunParams = Omit<T.RunsCreateParams, "agentId">;

/** An agent, by id. */
export class Agent {
  readonly #context: Context;
  /** Its id. */
  readonly id: string;

  constructor(context: Context, id: string) {
    this.#context = context;
    this.id = id;
  }

  /** Starts a run: `agent.run("Summarise the README")`, or with params. */
  async run(inputOrParams: T.RunInput | RunParams, options?: CallOptions): Promise<Run> {
    const params: T.RunsCreateParams =
      typeof inputOrParams === "string" || Array.isArray(inputOrParams)
        ? { input: inputOrParams, agentId: this.id }
        : { ...inputOrParams, agentId: this.id };
    const accepted = await this.#context.client.runs.create(params, options);
    return new Run(this.#context, accepted);
  }

  /** The agent as the gateway describes it. */
  get(options?: CallOptions): Promise<T.Agent> {
    return this.#context.client.agents.get(this.id, options);
  }

  /** The session with `key` for this agent (created if absent). */
  async session(key: string, options?: CallOptions): Promise<Session> {
    return new Session(this.#context, await this.#context.client.sessions.resolve({ key, agentId: this.id }, options));
  }

  /** A new session of this agent. */
  async createSession(params: Omit<T.SessionsCreateParams, "agentId"> = {}, options?: CallOptions): Promise<Session> {
    return new Session(
      this.#context,
      await this.#context.client.sessions.create({ ...params, agentId: this.id }, options),
    );
  }
}

/** A connection to one Talon gateway. */
export class Talon {
  /** Every method of the protocol's table, as namespaces (`talon.client.runs.get(id)`). */
  readonly client: GatewayClient;
  readonly #context: Context;

  constructor(options: TalonOptions) {
    const calls = options.transport === "websocket";
    const streams = options.streams === "websocket";
    const caller = calls || streams ? new WsCaller(options, { calls, streams }) : new HttpCaller(options);
    this.client = new GatewayClient(caller);
    this.#context = { client: this.client, caller, streamAuth: options.streamAuth ?? "header" };
  }

  /** An agent by id (no call is made). */
  agent(id = "main"): Agent {
    return new Agent(this.#context, id);
  }

  /** A run by id, as the gateway has it now. */
  async run(runId: string, options?: CallOptions): Promise<Run> {
    return new Run(this.#context, await this.client.runs.get(runId, options));
  }

  /** The main agent's session with `key` (created if absent). */
  session(key: string, options?: CallOptions): Promise<Session> {
    return this.agent().session(key, options);
  }

  /** A session by id (no call is made). */
  sessionById(sessionId: string): Session {
    return new Session(this.#context, sessionId);
  }

  /**
   * The whole log the token may see, filtered, after `options.after`; it
   * never ends by itself (stop with `break` or `options.signal`).
   */
  events(options: EventsOptions & LogFilter = {}): EventStream {
    const { sessionKey, agentId, types, ...stream } = options;
    return new EventStream(
      this.#context.caller,
      { log: { sessionKey, agentId, types } },
      stream,
      this.#context.streamAuth,
    );
  }

  /**
   * Live events on the WebSocket (`events.subscribe`): a replay after
   * `params.after`, then the live tail. Needs `transport: "websocket"`
   * or `streams: "websocket"`.
   */
  subscribe(params: T.EventsSubscribeParams = {}, options: { signal?: AbortSignal } = {}): Promise<Subscription> {
    const caller = this.#context.caller;
    if (!(caller instanceof WsCaller)) {
      return Promise.reject(
        new TalonError(
          'subscribe needs a WebSocket: new Talon({ transport: "websocket", … }) or streams: "websocket"',
          {
            code: "invalid_request",
          },
        ),
      );
    }
    return caller.subscribe(params, options);
  }

  /**
   * Closes the client's WebSockets, if it has any: their calls fail and
   * their subscriptions end (`unavailable`); the client's event streams
   * open a new one and resume from their cursors.
   */
  async close(): Promise<void> {
    const caller = this.#context.caller;
    if (caller instanceof WsCaller) await caller.close();
  }

  /** Pending approvals (or as filtered), each a handle to decide. */
  async approvals(params: T.ApprovalsListParams = { status: "pending" }, options?: CallOptions): Promise<Approval[]> {
    const listed = await this.client.approvals.list(params, options);
    return listed.approvals.map((a) => new Approval(this.#context, a));
  }

  /** Pending questions (or as filtered), each a handle to answer. */
  async questions(params: T.QuestionsListParams = { status: "pending" }, options?: CallOptions): Promise<Question[]> {
    const listed = await this.client.questions.list(params, options);
    return listed.questions.map((q) => new Question(this.#context, q));
  }

  /** An artifact by id, as the gateway describes it. */
  async artifact(artifactId: string, options?: CallOptions): Promise<Artifact> {
    return new Artifact(this.#context, await this.client.artifacts.get(artifactId, {}, options));
  }

  /** An environment by id, as it is now. */
  async environment(environmentId: string, options?: CallOptions): Promise<Environment> {
    return new Environment(this.#context, await this.client.environments.status(environmentId, options));
  }

  /** A background task by id (a sub-agent a run spawned); no call is made. */
  task(taskId: string): Task {
    return new Task(this.#context, taskId);
  }

  /**
   * Background tasks: `talon.tasks.list({ status: ["running"] })` is the
   * first page when awaited, and every task (a `Task` handle) of every page
   * with `for await`.
   */
  get tasks(): {
    list(params?: Omit<T.TasksListParams, "cursor">, options?: CallOptions): PagePromise<T.TasksListResult, Task>;
  } {
    const context = this.#context;
    return { list: (params = {}, options) => listTasks(context, params, options) };
  }

  /** Mints a token for a browser page or another service (`admin` only). */
  createToken(
    params: T.TokensCreateParams,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<T.CreatedToken> {
    return this.client.tokens.create(params, callOptions(options ?? {}));
  }

  /** Revokes a token and every token minted under it (`admin` only): the ids now revoked. */
  async revokeToken(tokenId: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<string[]> {
    return (await this.client.tokens.revoke({ tokenId }, callOptions(options ?? {}))).revoked;
  }
}
