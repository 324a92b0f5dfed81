// The SDK's one error type: the protocol's error (`ApiError`) as thrown
// by every call, stream and handle, plus the failures that happen before
// the gateway could answer (a broken connection, an abort, a body that is
// not the protocol's).

import type { ApiError, ErrorCode, ErrorDetails } from "./generated/types.js";
import { ERROR_CODES } from "./generated/types.js";

/** Fields of a {@link TalonError} beyond its message. */
export interface TalonErrorInit {
  /** The protocol's stable code. */
  code: ErrorCode;
  /** Whether the same request may succeed later. */
  retryable?: boolean;
  /** When to retry, in milliseconds from now, when the gateway said. */
  retryAfterMs?: number | undefined;
  /** Structured details (`scope` for `forbidden`, `oldestId` for `cursor_expired`, ...): each key typed, as the protocol declares it. */
  details?: ErrorDetails | undefined;
  /** The HTTP status it came with, if it came over HTTP. */
  status?: number | undefined;
  /** The method or stream it came from (`runs.create`, `GET /v1/events`). */
  method?: string | undefined;
  /** The gateway's id of the request (`x-request-id` on its answer): quote it to an operator, who finds it in the gateway's log. */
  requestId?: string | undefined;
  /** What caused it (a network error, an abort reason). */
  cause?: unknown;
}

/**
 * Every failure the SDK reports: `code` is the protocol's error code
 * (`not_found`, `cursor_expired`, `rate_limited`, ...), stable and meant
 * for matching; `message` is for people.
 */
export class TalonError extends Error {
  /** The protocol's stable code. */
  readonly code: ErrorCode;
  /** Whether the same request may succeed later. */
  readonly retryable: boolean;
  /** When to retry, in milliseconds from now, when the gateway said. */
  readonly retryAfterMs: number | undefined;
  /** Structured details, as the gateway sent them (`ErrorDetails`: which keys appear depends on the code; a newer gateway's keys are kept too). */
  readonly details: ErrorDetails | undefined;
  /** The HTTP status, when the error came over HTTP. */
  readonly status: number | undefined;
  /** The method or stream it came from. */
  readonly method: string | undefined;
  /** The gateway's id of the request (`x-request-id` on its answer), when it answered. */
  readonly requestId: string | undefined;

  constructor(message: string, init: TalonErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "TalonError";
    this.code = init.code;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.details = init.details;
    this.status = init.status;
    this.method = init.method;
    this.requestId = init.requestId;
  }

  /** The error as the protocol's `ApiError`. */
  toJSON(): ApiError {
    const out: ApiError = { code: this.code, message: this.message, retryable: this.retryable };
    if (this.retryAfterMs !== undefined) out.retryAfterMs = this.retryAfterMs;
    if (this.details !== undefined) out.details = this.details;
    return out;
  }

  /** An error from the protocol's `ApiError` body. */
  static fromApiError(
    error: ApiError,
    context: { status?: number; method?: string; requestId?: string | undefined } = {},
  ): TalonError {
    return new TalonError(error.message, {
      code: knownCode(error.code),
      retryable: error.retryable,
      retryAfterMs: error.retryAfterMs ?? undefined,
      details: error.details ?? undefined,
      status: context.status,
      method: context.method,
      requestId: context.requestId,
    });
  }
}

/** `code` if this client knows it, else `unknown` (a newer gateway's). */
export function knownCode(code: unknown): ErrorCode {
  return typeof code === "string" && (ERROR_CODES as readonly string[]).includes(code)
    ? (code as ErrorCode)
    : "unknown";
}

/** Whether `value` is a {@link TalonError} with `code` (any code when absent). */
export function isTalonError(value: unknown, code?: ErrorCode): value is TalonError {
  return value instanceof TalonError && (code === undefined || value.code === code);
}

/** The `unsupported` error a method the table marks unsupported throws. */
export function unsupported(method: string): TalonError {
  return new TalonError(`${method} is not supported by this gateway yet`, {
    code: "unsupported",
    method,
  });
}

/** The error an aborted call rejects with. */
export function aborted(method: string, reason: unknown): TalonError {
  const timedOut = reason instanceof DOMException && reason.name === "TimeoutError";
  return new TalonError(timedOut ? `${method} timed out` : `${method} was aborted`, {
    code: timedOut ? "timeout" : "unavailable",
    retryable: false,
    method,
    cause: reason,
  });
}
