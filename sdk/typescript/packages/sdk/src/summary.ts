// A run's one-line summary (`Run.summary`) as the gateway makes it from its
// input, and the `runs.list` `text` filter's rule: the protocol's
// `RunInput::summary` and `run_list::folded`, for the fake gateway and for
// clients that show runs arriving from the log (whose `run.created` event
// carries the input, not the summary) the way the gateway lists them.

import { RUN_SUMMARY_CHARS } from "./generated/caps.js";
import type { RunInput } from "./generated/types.js";

/** Unicode's White_Space at either end (what Rust's `str::trim` takes off; `String.trim` differs in two). */
const UNICODE_SPACE =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/**
 * A run's summary: the first line of the user's message that is not blank
 * (of the last user message, for messages; of the last message when none
 * is the user's), trimmed, at most `RUN_SUMMARY_CHARS` characters with `…`
 * marking a cut; `undefined` when there is no text.
 */
export function runSummary(input: RunInput): string | undefined {
  const text =
    typeof input === "string" ? input : ([...input].reverse().find((m) => m.role === "user") ?? input.at(-1))?.content;
  const line = (text ?? "")
    .split("\n")
    .map((l) => l.replace(UNICODE_SPACE, ""))
    .find((l) => l !== "");
  if (line === undefined) return undefined;
  const chars = Array.from(line);
  return chars.length > RUN_SUMMARY_CHARS ? `${chars.slice(0, RUN_SUMMARY_CHARS - 1).join("")}…` : line;
}

/** `text` with its ASCII letters in lower case (other letters as they are): what the text filter compares. */
function folded(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** Whether a run's summary holds `text` as `runs.list`'s `text` filter decides it (every run for ""). */
export function summaryContains(summary: string | null | undefined, text: string): boolean {
  return text === "" || folded(summary ?? "").includes(folded(text));
}
