// The fake gateway's errors: the protocol's `ApiError` (with the code's
// retryability), thrown inside as a `Failure`, and the ones the gateway
// words the same way everywhere (`not_found`, `invalid_request`, a missing
// scope, an unauthenticated request, `unsupported`).

import { RETRYABLE_CODES, type ApiError, type ErrorCode, type ErrorDetails, type Scope } from "@talon/sdk";

/** An `ApiError` with `code`'s retryability. */
export function apiError(
  code: ErrorCode,
  message: string,
  extra: { details?: ErrorDetails; retryAfterMs?: number } = {},
): ApiError {
  const error: ApiError = { code, message, retryable: RETRYABLE_CODES.includes(code) };
  if (extra.retryAfterMs !== undefined) error.retryAfterMs = extra.retryAfterMs;
  if (extra.details !== undefined) error.details = extra.details;
  return error;
}

/** A failure carrying the error the caller gets. */
export class Failure extends Error {
  readonly error: ApiError;

  constructor(error: ApiError) {
    super(error.message);
    this.name = "Failure";
    this.error = error;
  }
}

/** Throws-ready: a `Failure` of `code`. */
export function fail(code: ErrorCode, message: string, details?: ErrorDetails): Failure {
  return new Failure(apiError(code, message, details === undefined ? {} : { details }));
}

/** The error a thrown value answers with: its own, or `internal` (a bug of the fake, never its text). */
export function errorOf(thrown: unknown): ApiError {
  if (thrown instanceof Failure) return thrown.error;
  return apiError("internal", "internal error");
}

/** A string as Rust's `{:?}` shows it (quoted, escaped). */
export function quoted(text: string): string {
  return JSON.stringify(text);
}

/** `not_found`, worded as the gateway words it: `run "run_1" not found`. */
export function notFound(kind: string, id: string): Failure {
  return fail("not_found", `${kind} ${quoted(id)} not found`);
}

/** `invalid_request`. */
export function invalid(message: string, details?: ErrorDetails): Failure {
  return fail("invalid_request", message, details);
}

/** `conflict`. */
export function conflict(message: string, details?: ErrorDetails): Failure {
  return fail("conflict", message, details);
}

/** `forbidden`, naming the scope the token lacks. */
export function forbidden(scope: Scope): Failure {
  return fail("forbidden", `this token lacks the \`${scope}\` scope`, { scope });
}

/** `unsupported`, for a method the table marks so. */
export function unsupported(method: string): Failure {
  return fail("unsupported", `\`${method}\` is not supported by this gateway yet`, { method });
}

/** Why a request is not authenticated (`details.reason`). */
export type Refusal = "missing" | "malformed" | "unknown" | "revoked" | "expired" | "ticket";

/** `unauthenticated` with the gateway's words for `reason`. */
export function unauthenticated(reason: Refusal): Failure {
  const messages: Record<Refusal, string> = {
    missing: "no token: send Authorization: Bearer <token> (`talon token create` makes one)",
    malformed: "the Authorization header is not `Bearer talon_<secret>`",
    unknown: "this token is not known to this gateway",
    revoked: "this token was revoked",
    expired: "this token has expired",
    ticket: "the stream ticket is unknown, used or expired: mint a new one with tokens.ticket",
  };
  return fail("unauthenticated", messages[reason], { reason });
}
