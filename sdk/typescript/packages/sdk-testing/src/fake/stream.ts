// Event streams over the one event log, as the gateway serves them:
//
// - `GET /v1/runs/{runId}/events?after=<id>`: one run's events, ending
//   after its terminal event (an unknown run is `not_found` first);
// - `GET /v1/events?after=&sessionKey=&agentId=&types=a,b`: every event,
//   filtered, never ending by itself.
//
// Frames are `id: <id>\nevent: <type>\ndata: <envelope>\n\n`; `Last-Event-ID`
// wins over `after`; a stream authenticates with its bearer token or a
// `?ticket=`. It gives the backlog after its cursor, then each event as it
// is logged (no gap, no duplicate), with a `:` heartbeat after a quiet
// interval. `Follow` is the reader WebSocket subscriptions share; the
// queued `expireCursor` and `dropStream` faults apply when one starts.

import type { IncomingMessage, ServerResponse } from "node:http";

import { EVENT_TYPES, METHODS, refusals } from "@talon/sdk";

import { Failure, errorOf, fail, notFound } from "./errors.js";
import { queryOf } from "./params.js";
import { indexAfter } from "./runs.js";
import { cursorExpired, takeDrop, takeExpire } from "./script.js";
import type { State, StoredEvent } from "./state.js";
import { mayOpen, streamCaller, requireScope, ticketRefusal } from "./tokens.js";
import { HEARTBEAT, sendError, sseFrame } from "./wire.js";

/** Which events a reader wants. */
export interface Filter {
  runId?: string | undefined;
  sessionKey?: string | undefined;
  agentId?: string | undefined;
  types?: readonly string[] | undefined;
}

/** What a reader gives next: an event, or the cut a `dropStream` fault asks for. */
export type Next = { event: StoredEvent } | "cut";

/** A live reader of the log: the backlog after a cursor, then each event as it is logged. */
export class Follow {
  readonly #state: State;
  readonly #filter: Filter;
  readonly #endAfterTerminal: boolean;
  #pos: number;
  #budget: number | undefined;
  #done = false;

  private constructor(
    state: State,
    filter: Filter,
    cursor: bigint | undefined,
    endAfterTerminal: boolean,
    budget: number | undefined,
  ) {
    this.#state = state;
    this.#filter = filter;
    this.#pos = indexAfter(cursor);
    this.#endAfterTerminal = endAfterTerminal;
    this.#budget = budget;
  }

  /** Starts after `cursor`: `expireCursor` (when it has a cursor), then `dropStream`, apply. */
  static start(state: State, filter: Filter, cursor: bigint | undefined, endAfterTerminal: boolean): Follow {
    if (cursor !== undefined && takeExpire(state.faults)) throw new Failure(cursorExpired(cursor));
    return new Follow(state, filter, cursor, endAfterTerminal, takeDrop(state.faults));
  }

  #matches(event: StoredEvent): boolean {
    const e = event.envelope;
    const f = this.#filter;
    return (
      (f.runId === undefined || e.runId === f.runId) &&
      (f.sessionKey === undefined || e.sessionKey === f.sessionKey) &&
      (f.agentId === undefined || e.agentId === f.agentId) &&
      (f.types === undefined || f.types.length === 0 || f.types.includes(e.type))
    );
  }

  /** Whether it is over. */
  get done(): boolean {
    return this.#done;
  }

  /** Stops it: `next()` gives nothing more. */
  stop(): void {
    this.#done = true;
  }

  /** The next event, waiting for one; `undefined` once the stream is over (a run's terminal event, closing, stopped). */
  async next(): Promise<Next | undefined> {
    const log = this.#state.log;
    for (;;) {
      if (this.#done) return undefined;
      if (this.#budget === 0) {
        this.#done = true;
        return "cut";
      }
      for (let event = log[this.#pos]; event !== undefined; event = log[this.#pos]) {
        this.#pos += 1;
        if (!this.#matches(event)) continue;
        if (this.#endAfterTerminal && event.terminal) this.#done = true;
        if (this.#budget !== undefined) this.#budget -= 1;
        return { event };
      }
      if (this.#state.closing) {
        this.#done = true;
        return undefined;
      }
      await this.#state.changed();
    }
  }
}

/** A stream's cursor: `Last-Event-ID` when sent, else `after`; blank is none. */
export function streamCursor(header: string | undefined, after: string | undefined): bigint | undefined {
  const text = (header ?? after)?.trim();
  if (text === undefined || text === "") return undefined;
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > 18446744073709551615n) throw fail(refusals.notAnEventId(text));
  return BigInt(text);
}

/** The event types a stream's `types` asks for, or `invalid_request` naming one unknown. */
function typesOf(list: string | undefined): string[] {
  if (list === undefined) return [];
  return list.split(",").map((raw) => {
    const name = raw.trim();
    if (!(EVENT_TYPES as readonly string[]).includes(name)) throw fail(refusals.unknownEventType(name));
    return name;
  });
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Checks a stream request and starts its reader, or throws the error to answer with. */
function open(state: State, req: IncomingMessage, search: URLSearchParams, runId: string | undefined): Follow {
  const query = queryOf(search, ["after", "sessionKey", "agentId", "types", "ticket"]);
  if (runId !== undefined) {
    const count = [...runId].length;
    if (count > 128) throw fail(refusals.badRunId(`a run id is ${count} characters long; the cap is 128`));
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    if (/[\x00-\x1f\x7f]/.test(runId)) throw fail(refusals.badRunId("a run id may not contain control characters"));
  }
  const caller = streamCaller(state, header(req, "authorization"), query.ticket);
  if (runId !== undefined) {
    mayOpen(caller, { run: { runId } });
    requireScope(caller, METHODS["runs.events"].scope);
    if (!state.runs.has(runId)) throw notFound("run", runId);
    return Follow.start(state, { runId }, streamCursor(header(req, "last-event-id"), query.after), true);
  }
  requireScope(caller, METHODS["events.subscribe"].scope);
  let filter: Filter;
  if (caller.ticket === undefined) {
    filter = { sessionKey: query.sessionKey, agentId: query.agentId, types: typesOf(query.types) };
  } else if ("events" in caller.ticket) {
    // A ticket's stream is the one it names, whatever the query says.
    const named = caller.ticket.events;
    filter = {
      sessionKey: named.sessionKey ?? undefined,
      agentId: named.agentId ?? undefined,
      types: named.types ?? [],
    };
  } else {
    throw ticketRefusal("this ticket opens another stream");
  }
  return Follow.start(state, filter, streamCursor(header(req, "last-event-id"), query.after), false);
}

/** Writes `text`, waiting for it to be flushed (so a slow reader only slows its own stream). */
function write(res: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed || res.writableEnded) {
      resolve();
      return;
    }
    // A connection that goes away never calls back: its close ends the wait.
    const done = () => {
      res.off("close", done);
      resolve();
    };
    res.on("close", done);
    res.write(text, () => {
      done();
    });
  });
}

/** Serves one SSE stream (`runId` for a run's, `undefined` for the whole log's); `streams` holds it while open. */
export async function serveStream(
  state: State,
  req: IncomingMessage,
  res: ServerResponse,
  search: URLSearchParams,
  runId: string | undefined,
  streams: Set<ServerResponse>,
): Promise<void> {
  let follow: Follow;
  try {
    follow = open(state, req, search, runId);
  } catch (thrown) {
    sendError(res, errorOf(thrown));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  streams.add(res);
  let last = Date.now();
  const heartbeat = setInterval(
    () => {
      if (Date.now() - last >= state.heartbeatMs && !res.destroyed) {
        last = Date.now();
        res.write(HEARTBEAT);
      }
    },
    Math.max(10, Math.floor(state.heartbeatMs / 2)),
  );
  heartbeat.unref();
  const gone = () => {
    follow.stop();
    state.touch();
  };
  res.on("close", gone);
  try {
    for (;;) {
      const next = await follow.next();
      if (next === undefined || res.destroyed) break;
      if (next === "cut") {
        // What was sent reaches the client; then the connection drops, mid-stream.
        res.socket?.destroy();
        res.destroy();
        return;
      }
      last = Date.now();
      await write(res, sseFrame(next.event.id, next.event.envelope.type, next.event.json));
    }
    if (!res.destroyed) res.end();
  } finally {
    clearInterval(heartbeat);
    res.off("close", gone);
    streams.delete(res);
  }
}
