// The fake gateway's memory: every resource it serves (agents, sessions and
// their messages, runs, approvals, questions, artifacts, environments,
// background tasks, tokens and tickets), the one event log with gateway-wide increasing ids
// that every stream and `runs.events` read, idempotency keys, the queues of
// scripted runs and faults, and the calls received. Node runs it on one
// thread, so a change made without an `await` in between is atomic (the
// first of 50 concurrent answers wins by construction); `touch()` wakes
// everything that waits (runs, `runs.wait`, streams), and `close()` wakes
// them for the last time and clears every timer.

import { createHash } from "node:crypto";

import { RESULT_STATUS, TERMINAL_STATUSES, TERMINAL_TYPES, type protocol as P, refusals } from "@talon/sdk";

import { fail, notFound } from "./errors.js";
import type { FakeRun, QueuedFault } from "./script.js";
import { DEFAULT_TOOLS } from "./tools.js";
import { copy, envelopeJson } from "./wire.js";

/** A method call the fake gateway received, in the order received. */
export interface RecordedCall {
  /** The method, e.g. `runs.create`. */
  method: string;
  /** Its params as sent (`{}` for an empty body). */
  params: unknown;
  /** The transport it came on. */
  transport: "http" | "websocket";
}

/** Who calls: a token's id and scopes (`admin` implies every scope). */
export interface Caller {
  readonly tokenId: string;
  readonly scopes: readonly P.Scope[];
  /** When the caller's token expires (absent: never). */
  readonly expiresAt?: number;
  /** The one stream a ticket's caller may open (absent: a token's caller, which may call methods). */
  readonly ticket?: P.TicketStream;
}

/** An idempotency key in its caller's own namespace, as the gateway keeps them: another token's key is a new key, never its result or a conflict. */
export function scopedKey(caller: Caller, kind: "run" | "invoke" | "environment", key: string): string {
  return `tok:${caller.tokenId}\u001f${kind}\u001f${key}`;
}

/** An event of the log, rendered once. */
export interface StoredEvent {
  readonly id: number;
  readonly envelope: P.EventEnvelope;
  readonly json: string;
  readonly terminal: boolean;
}

/** A tool call a run has open. */
export interface OpenCall {
  callId: string;
  name: string;
  startedAt: number;
}

/** A message of a run, kept until the run ends (then stored in its session). */
export type RunMessage = Pick<P.Message, "role" | "text" | "toolCalls" | "toolCallId">;

/** A run and what the fake knows of it. */
export interface RunRecord {
  run: P.Run;
  result?: P.RunResult;
  /** The user's input, as `run.created` says it. */
  input: string;
  /** The request that created it (its events carry it). */
  requestId: string | undefined;
  script: FakeRun;
  timeoutMs: number | undefined;
  /** Set when it is asked to stop (`rollback`: its messages are dropped). */
  cancel?: { rollback: boolean };
  openCall?: OpenCall;
  artifacts: P.ArtifactSummary[];
  messages: RunMessage[];
  /** Tool calls made (they are numbered `call_1`, `call_2`, … as the mock model numbers them). */
  toolCalls: number;
  /** Model turns taken, and those the model answered (the usage counts these). */
  turns: number;
  answeredTurns: number;
}

/** An artifact and its bytes. */
export interface StoredArtifact {
  summary: P.ArtifactSummary;
  bytes: Uint8Array;
  sha256: string;
}

/** A token minted by `tokens.create`. */
export interface MintedToken {
  id: string;
  name: string;
  scopes: P.Scope[];
  expiresAt: number;
  secret: string;
  createdAt: number;
  /** The token that minted it (revoking that one revokes this one). */
  parentId: string;
  revokedAt?: number;
  /** The subject and agents it is bound to (echoed, not enforced). */
  subject?: string;
  agents?: string[];
}

/** An unused stream ticket. */
export interface Ticket {
  expiresAt: number;
  scopes: P.Scope[];
  tokenId: string;
  stream: P.TicketStream;
}

/** The one model. */
export const MODEL = "mock/mock-model";
/** The one agent's id. */
export const DEFAULT_AGENT = "main";
/** How long artifacts are kept (the gateway's default, 30 days). */
const ARTIFACT_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

/** Milliseconds since the epoch. */
export function now(): number {
  return Date.now();
}

/** The SHA-256 of `bytes`, hex. */
export function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Everything the fake gateway holds. */
export class State {
  readonly token: string;
  readonly heartbeatMs: number;
  readonly agents: P.Agent[] = [{ id: DEFAULT_AGENT, description: "The default agent", source: "config" }];
  readonly sessions = new Map<string, P.Session>();
  readonly messages = new Map<string, P.Message[]>();
  readonly runs = new Map<string, RunRecord>();
  readonly approvals: P.Approval[] = [];
  readonly questions: P.Question[] = [];
  readonly artifacts: StoredArtifact[] = [];
  readonly environments: P.Environment[] = [];
  /** `runs.create` idempotency keys: the params' hash and the run. */
  readonly runKeys = new Map<string, { hash: string; runId: string }>();
  /** `tools.invoke` idempotency keys: the params' hash and the first result. */
  readonly invokeKeys = new Map<string, { hash: string; result: unknown }>();
  readonly scripts: FakeRun[] = [];
  readonly faults: QueuedFault[] = [];
  readonly calls: RecordedCall[] = [];
  tools: P.ToolSummary[] = copy([...DEFAULT_TOOLS]);
  readonly invokeResults = new Map<string, unknown>();
  readonly tickets = new Map<string, Ticket>();
  /** Minted tokens by secret, and those minted with an idempotency key by key. */
  readonly tokens = new Map<string, MintedToken>();
  /** Every minted token by id, revoked ones too (`tokens.list`). */
  readonly tokensById = new Map<string, MintedToken>();
  readonly keyedTokens = new Map<string, MintedToken>();
  /** Background tasks, oldest first (`tasks.ts`). */
  readonly tasks: P.Task[] = [];
  /** The event log: the event with id `n` is at `n - 1`. */
  readonly log: StoredEvent[] = [];
  closing = false;
  #counter = 0;
  #waiters = new Set<() => void>();
  #sleeps = new Set<() => void>();

  constructor(token: string, heartbeatMs: number) {
    this.token = token;
    this.heartbeatMs = heartbeatMs;
  }

  /** A new id, `<prefix>_<24 hex digits>`, increasing. */
  newId(prefix: string): string {
    this.#counter += 1;
    return `${prefix}_${this.#counter.toString(16).padStart(24, "0")}`;
  }

  /** Appends an event to the log, numbering it, and wakes the waiters. */
  push(event: Omit<P.EventEnvelope, "id">): StoredEvent {
    const id = this.log.length + 1;
    const envelope = { ...event, id: String(id) };
    const terminal = TERMINAL_TYPES.includes(envelope.type);
    const stored: StoredEvent = { id, envelope, json: envelopeJson(envelope), terminal };
    this.log.push(stored);
    this.touch();
    return stored;
  }

  /** Something changed: every waiter looks again. */
  touch(): void {
    const waiters = this.#waiters;
    this.#waiters = new Set();
    for (const wake of waiters) wake();
  }

  /** Resolves at the next change, at `deadline` (epoch ms) if one is given, or when the gateway closes. */
  changed(deadline?: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const wake = () => {
        if (timer !== undefined) clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      this.#waiters.add(wake);
      if (deadline !== undefined) timer = setTimeout(wake, Math.max(0, deadline - now()));
    });
  }

  /** Waits `ms` (or until the gateway closes). */
  sleep(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleeps.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#sleeps.add(done);
    });
  }

  /** Closing: every waiter and sleeper wakes now, and none waits again. */
  close(): void {
    this.closing = true;
    this.touch();
    for (const done of [...this.#sleeps]) done();
  }

  agent(id: string): P.Agent | undefined {
    return this.agents.find((a) => a.id === id);
  }

  session(id: string): P.Session {
    const session = this.sessions.get(id);
    if (!session) throw notFound("session", id);
    return session;
  }

  sessionByKey(key: string): P.Session | undefined {
    for (const session of this.sessions.values()) if (session.key === key) return session;
    return undefined;
  }

  run(id: string): RunRecord {
    const record = this.runs.get(id);
    if (!record) throw notFound("run", id);
    return record;
  }

  /** A new session of `agentId` (which must exist), announced on the log (`session.created`) as the gateway does. */
  createSession(agentId: string, key?: string | null, metadata?: Record<string, unknown> | null): P.Session {
    const session = this.addSession(agentId, key, metadata);
    this.announceSession(session);
    return session;
  }

  /** Announces `session`, just made: `session.created`. */
  announceSession(session: P.Session): void {
    this.push(sessionEvent(session, { type: "session.created", data: copy(session) }));
  }

  /** A new session of `agentId` (which must exist), not announced yet (a fork is announced once it names its parent). */
  addSession(agentId: string, key?: string | null, metadata?: Record<string, unknown> | null): P.Session {
    if (!this.agent(agentId)) throw notFound("agent", agentId);
    if (key && this.sessionByKey(key)) throw fail(refusals.alreadyExists("session", key));
    const id = this.newId("sess");
    const at = now();
    const named = key === "" ? undefined : key; // an empty key names no session
    const session: P.Session = { agentId, createdAt: at, id, key: named ?? `${agentId}:${id}`, updatedAt: at };
    if (metadata && Object.keys(metadata).length > 0) session.metadata = copy(metadata);
    this.sessions.set(id, session);
    this.touch();
    return session;
  }

  /** The session with `key`, created for `agent` (`main` when absent) if there is none. */
  resolveSession(key: string, agent?: string | null): P.Session {
    return this.sessionByKey(key) ?? this.createSession(agent ?? DEFAULT_AGENT, key);
  }

  /** Stores an artifact of `run`; its summary. */
  putArtifact(run: P.Run, type: P.ArtifactType, title: string, mimeType: string, bytes: Uint8Array): P.ArtifactSummary {
    const at = now();
    const summary: P.ArtifactSummary = {
      createdAt: at,
      expiresAt: at + ARTIFACT_MAX_AGE_MS,
      id: this.newId("art"),
      mimeType,
      runId: run.id,
      sizeBytes: bytes.length,
      title,
      type,
    };
    if (run.sessionId) summary.sessionId = run.sessionId;
    this.artifacts.push({ summary, bytes, sha256: sha256(bytes) });
    return summary;
  }
}

/** An event of `run`, not yet numbered, on behalf of the request that created it. */
export function runEvent(run: P.Run, data: P.EventData, requestId?: string): Omit<P.EventEnvelope, "id"> {
  const event: Omit<P.EventEnvelope, "id"> = {
    version: 1,
    ts: now(),
    type: data.type,
    runId: run.id,
    agentId: run.agentId,
    data: data.data,
  };
  if (run.sessionId) event.sessionId = run.sessionId;
  if (run.sessionKey) event.sessionKey = run.sessionKey;
  if (requestId) event.requestId = requestId;
  return event;
}

/** An event of `session` (no run's), not yet numbered. */
export function sessionEvent(session: P.Session, data: P.EventData, requestId?: string): Omit<P.EventEnvelope, "id"> {
  const event: Omit<P.EventEnvelope, "id"> = {
    version: 1,
    ts: now(),
    type: data.type,
    sessionId: session.id,
    agentId: session.agentId,
    data: data.data,
    sessionKey: session.key,
  };
  if (requestId) event.requestId = requestId;
  return event;
}

/** Whether a run's status is terminal. */
export function isTerminal(status: P.RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** The result of `run` as its row stands (the protocol's `RunResult::of`). */
export function resultOf(run: P.Run, text?: string, artifacts?: P.ArtifactSummary[]): P.RunResult {
  const result: P.RunResult = { runId: run.id, status: RESULT_STATUS[run.status] };
  if (run.sessionId) result.sessionId = run.sessionId;
  if (run.sessionKey) result.sessionKey = run.sessionKey;
  if (run.startedAt !== undefined && run.startedAt !== null) result.startedAt = run.startedAt;
  if (run.endedAt !== undefined && run.endedAt !== null) result.endedAt = run.endedAt;
  if (text !== undefined) result.output = { text };
  if (run.usage) result.usage = run.usage;
  if (artifacts) result.artifacts = artifacts;
  if (run.error) result.error = run.error;
  return result;
}
