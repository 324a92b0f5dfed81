// One connection of an `EventStream` as a subscription on the client's
// WebSocket (`streams: "websocket"`), for `EventStream` to resume as it
// resumes an SSE response: from its cursor, skipping what it delivered.
// The log is one `events.subscribe` with the stream's filter. A run has no
// subscription of its own in the protocol: its events after the cursor are
// read a page at a time (`runs.events`) up to the live end (a run that
// ended needs nothing more), then its session's log (by its key and agent)
// is subscribed to from the last of them, and the run's events in it are
// delivered up to its terminal event. Leaving (or the signal) ends the
// subscription.

import { MAX_LIMIT } from "./generated/caps.js";
import { TERMINAL_TYPES } from "./generated/rules.js";
import type { EventsSubscribeParams, RunsEventsParams, TalonEvent } from "./generated/types.js";
import type { StreamTarget } from "./events.js";
import { TalonError } from "./errors.js";
import { validate } from "./validate.js";
import type { WsCaller } from "./ws.js";

/** The events of one connection of a stream, after `after`, on `caller`'s sockets. */
export async function* socketEvents(
  caller: WsCaller,
  target: StreamTarget,
  after: bigint | undefined,
  signal: AbortSignal,
): AsyncGenerator<TalonEvent, void, undefined> {
  if ("log" in target) {
    const { sessionKey, agentId, types } = target.log;
    const params: EventsSubscribeParams = {};
    if (after !== undefined) params.after = after.toString();
    if (sessionKey) params.sessionKey = sessionKey;
    if (agentId) params.agentId = agentId;
    if (types && types.length > 0) params.types = [...types];
    yield* subscribed(caller, params, signal);
    return;
  }
  const runId = target.run;
  let cursor = after;
  let sessionKey = target.sessionKey ?? undefined;
  let agentId = target.agentId ?? undefined;
  for (;;) {
    const params: RunsEventsParams = { runId, limit: MAX_LIMIT };
    if (cursor !== undefined) params.after = cursor.toString();
    const page = await caller.call("runs.events", params, { signal });
    for (const envelope of page.events) {
      const event = checked(envelope);
      sessionKey ??= event.sessionKey ?? undefined;
      agentId ??= event.agentId ?? undefined;
      if (/^\d{1,20}$/.test(event.id)) cursor = BigInt(event.id);
      yield event;
    }
    // Its terminal event is in: the run's stream is whole.
    if (page.done) return;
    if (page.events.length < MAX_LIMIT) break;
  }
  if (sessionKey === undefined && agentId === undefined) {
    const run = await caller.call("runs.get", { runId }, { signal });
    sessionKey = run.sessionKey ?? undefined;
    agentId = run.agentId;
  }
  const params: EventsSubscribeParams = {};
  if (cursor !== undefined) params.after = cursor.toString();
  if (sessionKey) params.sessionKey = sessionKey;
  if (agentId) params.agentId = agentId;
  for await (const event of subscribed(caller, params, signal)) {
    if (event.runId !== runId) continue;
    yield event;
    if (TERMINAL_TYPES.includes(event.type)) return;
  }
}

/** A subscription's events until the signal aborts or the caller leaves (either ends it). */
async function* subscribed(
  caller: WsCaller,
  params: EventsSubscribeParams,
  signal: AbortSignal,
): AsyncGenerator<TalonEvent, void, undefined> {
  const subscription = await caller.subscribe(params, { signal });
  if (signal.aborted) {
    await subscription.close();
    return;
  }
  const onAbort = () => void subscription.close();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    yield* subscription;
  } finally {
    signal.removeEventListener("abort", onAbort);
    await subscription.close();
  }
}

/** A page's envelope as the event it must be (as a stream's events are checked). */
function checked(envelope: unknown): TalonEvent {
  const issue = validate("TalonEvent", envelope);
  if (issue) {
    throw new TalonError(
      `runs.events answered an event that does not follow the protocol at ${issue.path || "/"}: ${issue.message}`,
      { code: "internal", method: "runs.events", details: { field: issue.path || "/", detail: issue.message } },
    );
  }
  return envelope as TalonEvent;
}
