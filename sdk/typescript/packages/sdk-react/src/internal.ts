// What the hooks share: turning any failure into a `TalonError`, finding
// a cursor at "about now" in the log (the newest run's first event), and
// answering approvals and questions.

import { TalonError, type GatewayClient, type TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

/** `error` as a `TalonError` (a non-SDK failure becomes one with code `unknown`). */
export function toTalonError(error: unknown): TalonError {
  if (error instanceof TalonError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TalonError(message, { code: "unknown", cause: error });
}

/** Whether `cursor` is an event id (a decimal number). */
export function isCursor(cursor: unknown): cursor is string {
  return typeof cursor === "string" && /^\d{1,20}$/.test(cursor);
}

/**
 * A cursor just before the newest run's first event (of the runs
 * `params` selects), or `undefined` (from the start of the log) when
 * there is no run or the lookup fails. Streaming the log after it gives
 * what is going on now without replaying the whole history; every event
 * after it is later than it, which is what a seed list taken after this
 * call needs (see `useApprovals`).
 */
export async function recentCursor(
  client: GatewayClient,
  params: T.RunsListParams,
  signal: AbortSignal,
): Promise<string | undefined> {
  try {
    const { runs } = await client.runs.list({ ...params, limit: 1 }, { signal });
    const newest = runs[0];
    if (!newest) return undefined;
    const page = await client.runs.events(newest.id, { limit: 1 }, { signal });
    const first = page.events[0];
    if (!first || !isCursor(first.id)) return undefined;
    const id = BigInt(first.id);
    return id > 0n ? (id - 1n).toString() : undefined;
  } catch (error) {
    if (signal.aborted) throw error;
    return undefined;
  }
}

/** An approval or its id. */
export type ApprovalRef = T.Approval | string;
/** A question or its id. */
export type QuestionRef = T.Question | string;

/** Decides an approval. */
export function respondTo(
  client: GatewayClient,
  approval: ApprovalRef,
  decision: T.ApprovalDecision,
  reason: string | undefined,
): Promise<T.Approval> {
  const id = typeof approval === "string" ? approval : approval.id;
  const params: Omit<T.ApprovalsRespondParams, "approvalId"> = { decision };
  if (reason !== undefined) params.reason = reason;
  return client.approvals.respond(id, params);
}

/** Answers a question. */
export function answerTo(client: GatewayClient, question: QuestionRef, answer: unknown): Promise<T.Question> {
  const id = typeof question === "string" ? question : question.id;
  return client.questions.respond(id, { answer });
}

/** The id of an approval or question reference. */
export function idOf(ref: { id: string } | string): string {
  return typeof ref === "string" ? ref : ref.id;
}

/** `events` with `event` appended, keeping at most `limit` (the newest). */
export function appendBounded(events: readonly TalonEvent[], event: TalonEvent, limit: number): readonly TalonEvent[] {
  const next = events.length >= limit ? events.slice(events.length - limit + 1) : events.slice();
  next.push(event);
  return next;
}
