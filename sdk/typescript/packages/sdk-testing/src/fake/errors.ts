// The fake gateway's errors: a thrown `Failure` carries the `ApiError` the
// caller gets. Every message is one of the protocol's refusals
// (`refusals` of @talon/sdk, generated from the Rust table the gateway
// answers from): the fake words nothing itself.

import { refusals, type ApiError } from "@talon/sdk";

/** A failure carrying the error the caller gets. */
export class Failure extends Error {
  readonly error: ApiError;

  constructor(error: ApiError) {
    super(error.message);
    this.name = "Failure";
    this.error = error;
  }
}

/** Throw-ready: a `Failure` of a refusal (`fail(refusals.notFound("run", id))`). */
export function fail(error: ApiError): Failure {
  return new Failure(error);
}

/** The error a thrown value answers with: its own, or `internal` (a bug of the fake, never its text). */
export function errorOf(thrown: unknown): ApiError {
  if (thrown instanceof Failure) return thrown.error;
  return refusals.internal();
}

/** `not_found`, worded as the gateway words it: `run "run_1" not found`. */
export function notFound(kind: string, id: string): Failure {
  return fail(refusals.notFound(kind, id));
}

/** Why a request is not authenticated (`details.reason`). */
export type Refusal = "missing" | "malformed" | "unknown" | "revoked" | "expired" | "ticket";

/** `unauthenticated` for `reason`. */
export function unauthenticated(reason: Refusal): Failure {
  const errors: Record<Refusal, () => ApiError> = {
    missing: refusals.noToken,
    malformed: refusals.malformedToken,
    unknown: refusals.unknownToken,
    revoked: refusals.revokedToken,
    expired: refusals.expiredToken,
    ticket: refusals.badTicket,
  };
  return fail(errors[reason]());
}
