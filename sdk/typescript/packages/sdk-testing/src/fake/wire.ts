// What the fake gateway puts on the wire, as the gateway does: JSON with
// its keys sorted (the gateway renders answers through `serde_json::Value`),
// an event's envelope in the order the gateway stores it, Server-Sent
// Events frames, the one error response (`{"error": ApiError}` with the
// code's status, `Retry-After` in seconds, `WWW-Authenticate` for
// `unauthenticated`), the 405 with `Allow`, and request ids.

import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";

import { ERROR_HTTP_STATUS, type ApiError, type EventEnvelope, refusals } from "@talon/sdk";

/** `value` with object keys sorted and `undefined` members dropped, recursively. */
export function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sorted(item)));
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = sorted(item);
    }
    return out;
  }
  return value;
}

/** JSON as the gateway renders a value: keys sorted. */
export function json(value: unknown): string {
  return JSON.stringify(sorted(value));
}

/** A deep copy of a JSON value (what a caller gets is never the fake's own). */
export function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * An event's JSON as the gateway stores and streams it: the envelope's
 * fields in its order (`version, id, ts, type, runId, sessionId, agentId,
 * requestId, data, sessionKey`), the payload's keys sorted.
 */
export function envelopeJson(event: EventEnvelope): string {
  const ordered = {
    version: event.version,
    id: event.id,
    ts: event.ts,
    type: event.type,
    runId: event.runId ?? undefined,
    sessionId: event.sessionId ?? undefined,
    taskId: event.taskId ?? undefined,
    agentId: event.agentId ?? undefined,
    requestId: event.requestId ?? undefined,
    data: sorted(event.data),
    sessionKey: event.sessionKey ?? undefined,
  };
  return JSON.stringify(ordered);
}

/** An event's SSE frame: `id:`, `event:`, then `data:` (one line per line of the JSON). */
export function sseFrame(id: number, type: string, data: string): string {
  const kind = type.replace(/[\r\n]/g, "");
  const lines = data.split(/\r\n|\r|\n/);
  return `id: ${id}\nevent: ${kind}\n${lines.map((line) => `data: ${line}`).join("\n")}\n\n`;
}

/** An SSE heartbeat comment. */
export const HEARTBEAT = ":\n\n";

/** RFC 6750's challenge, with the reason when a token was sent. */
function wwwAuthenticate(error: ApiError): string {
  const reason = (error.details as { reason?: unknown } | undefined)?.reason;
  if (typeof reason !== "string" || reason === "missing" || !/^[a-z]+$/.test(reason)) return 'Bearer realm="talon"';
  return `Bearer realm="talon", error="invalid_token", error_description="the token is ${reason}"`;
}

/** The headers an error response carries beside its body. */
export function errorHeaders(error: ApiError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined && error.retryAfterMs !== null) {
    headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
  }
  if (error.code === "unauthenticated") headers["www-authenticate"] = wwwAuthenticate(error);
  return headers;
}

/** Sends `body` as JSON (keys sorted) with `status`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = json(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/** The table of an error code's HTTP status, looked up by any code (one it lacks answers 500). */
const HTTP_STATUS: Readonly<Partial<Record<string, number>>> = ERROR_HTTP_STATUS;

/** The HTTP status the gateway answers an error `code` with (500 for a code it does not know). */
export function httpStatus(code: string): number {
  return HTTP_STATUS[code] ?? 500;
}

/** Sends the error response: `{"error": …}` with the code's status and headers. */
export function sendError(
  res: ServerResponse,
  error: ApiError,
  status?: number,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status ?? httpStatus(error.code), { error }, { ...errorHeaders(error), ...headers });
}

/** The 405 of a path asked with the wrong HTTP method. */
export function sendMethodNotAllowed(res: ServerResponse, allow: "GET" | "POST"): void {
  sendError(res, refusals.methodNotAllowed(allow), 405, { allow });
}

/** The 404 of a path no route serves. */
export function sendNoRoute(res: ServerResponse): void {
  sendError(res, refusals.noRoute());
}

/** The request's id: always the fake's own `req_<24 hex>`, as the gateway's (which only logs a client's `x-request-id`). */
export function mintRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}
