// The session methods as the gateway answers them: `sessions.list`
// (oldest first, after a cursor), `sessions.create` (metadata within its
// caps), `sessions.messages` (a page after a message), `sessions.fork` (a
// new session with the parent's messages up to one) and `sessions.compact`
// (a compaction record standing for the messages since the last one, and
// `session.compacted`; `conflict` while a run is in progress) and
// `sessions.update` (metadata merged, `session.updated`).

import { caps, type protocol as P, refusals } from "@talon/sdk";

import { fail, notFound } from "./errors.js";
import { limitOf, liveRuns } from "./runs.js";
import { State, now, sessionEvent } from "./state.js";
import { copy } from "./wire.js";

/** A session's metadata caps: keys, bytes as JSON, a key's length. */
const METADATA_KEYS = caps.METADATA_KEYS;
const METADATA_BYTES = caps.METADATA_BYTES;
const METADATA_KEY_CHARS = caps.METADATA_KEY_CHARS;

function byCreation(a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** `sessions.list`: oldest first; the cursor is the previous page's last session (an unknown one gives nothing). */
export function listSessions(state: State, p: P.SessionsListParams): P.SessionsListResult {
  let sessions = [...state.sessions.values()].filter((s) => !p.agentId || s.agentId === p.agentId).sort(byCreation);
  if (p.cursor) {
    const cursor = state.sessions.get(p.cursor);
    sessions = cursor ? sessions.filter((s) => byCreation(s, cursor) > 0) : [];
  }
  const limit = limitOf(p.limit);
  const page = sessions.slice(0, limit);
  const result: P.SessionsListResult = { sessions: copy(page) };
  if (sessions.length > limit && page.length > 0) result.nextCursor = page.at(-1)?.id ?? null;
  return result;
}

/** `sessions.create`: its agent must exist, its key be new, its metadata within the caps. */
/** Metadata within its caps (`invalid_request` naming them). */
function checkMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(metadata);
  const bytes = Buffer.byteLength(JSON.stringify(metadata));
  if (keys.length > METADATA_KEYS || bytes > METADATA_BYTES) {
    throw fail(refusals.metadataTooLarge(keys.length, bytes, METADATA_KEYS, METADATA_BYTES));
  }
  const long = keys.find((k) => [...k].length > METADATA_KEY_CHARS);
  if (long !== undefined) {
    throw fail(refusals.metadataKeyTooLong([...long].slice(0, 32).join(""), METADATA_KEY_CHARS));
  }
  return metadata;
}

export function createSession(state: State, p: P.SessionsCreateParams): P.Session {
  if (!state.agent(p.agentId)) throw notFound("agent", p.agentId);
  const metadata = checkMetadata(p.metadata ?? {});
  return copy(state.createSession(p.agentId, p.key, metadata));
}

/** `sessions.update`: `metadata` merged in (`null` removes a key), within the caps, and `session.updated`. */
export function updateSession(state: State, p: P.SessionsUpdateParams, requestId: string | undefined): P.Session {
  const session = state.session(p.sessionId);
  const merged: Record<string, unknown> = { ...(session.metadata ?? {}) };
  for (const [key, value] of Object.entries(p.metadata)) {
    if (value === null) Reflect.deleteProperty(merged, key);
    else merged[key] = value;
  }
  session.metadata = checkMetadata(merged);
  session.updatedAt = Math.max(now(), session.updatedAt);
  state.push(sessionEvent(session, { type: "session.updated", data: copy(session) }, requestId));
  return copy(session);
}

/** `sessions.messages`: oldest first, after a message of the session. */
export function messages(state: State, p: P.SessionsMessagesParams): P.SessionsMessagesResult {
  state.session(p.sessionId);
  let all = state.messages.get(p.sessionId) ?? [];
  if (p.after) {
    const at = all.findIndex((m) => m.id === p.after);
    if (at < 0) throw notFound("message", p.after);
    all = all.slice(at + 1);
  }
  const limit = limitOf(p.limit);
  return { hasMore: all.length > limit, messages: copy(all.slice(0, limit)) };
}

/** `sessions.fork`: a new session of the parent's agent and metadata, with its messages up to `atMessageId`. */
export function fork(state: State, p: P.SessionsForkParams): P.Session {
  const parent = state.session(p.sessionId);
  let kept = state.messages.get(parent.id) ?? [];
  if (p.atMessageId) {
    const at = kept.findIndex((m) => m.id === p.atMessageId);
    if (at < 0) throw notFound("message", p.atMessageId);
    kept = kept.slice(0, at + 1);
  }
  const session = state.addSession(parent.agentId, p.key, parent.metadata);
  session.parentId = parent.id;
  if (p.atMessageId) session.forkedAtMessageId = p.atMessageId;
  state.announceSession(session);
  state.messages.set(
    session.id,
    kept.map((m) => ({ ...copy(m), sessionId: session.id })),
  );
  return copy(session);
}

/** `sessions.compact`: a compaction record for the messages since the last one, and `session.compacted`. */
export function compact(state: State, sessionId: string, requestId: string | undefined): P.Session {
  const session = state.session(sessionId);
  if (liveRuns(state, sessionId).length > 0) {
    throw fail(refusals.compactBusy());
  }
  const stored = state.messages.get(sessionId) ?? [];
  let from = 0;
  stored.forEach((m, i) => {
    if (m.role === "compaction") from = i + 1;
  });
  const replaced = stored.length - from;
  if (replaced === 0) return copy(session);
  const at = now();
  const record: P.Message = {
    createdAt: at,
    id: state.newId("msg"),
    role: "compaction",
    sessionId,
    text: `A summary of ${replaced} messages.`,
  };
  stored.push(record);
  state.messages.set(sessionId, stored);
  session.updatedAt = at;
  state.push(
    sessionEvent(
      session,
      { type: "session.compacted", data: { replacedMessages: replaced, sessionId, summaryMessageId: record.id } },
      requestId,
    ),
  );
  return copy(session);
}
