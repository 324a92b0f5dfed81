// How a run's events fold into what the run is: its status (`waiting`
// while an approval or question is pending, `running` again once none is),
// the assistant's current text, the approvals and questions it waits for,
// and whether it ended (the end's status, nothing pending). Pure, so that
// `useRun`'s store and any other reader of a run's log (a dashboard's run
// view reading it tail first) fold by the one rule.

import { RUN_ENDS, type TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

/** A run as its events say it is. A fold returns a new object; none is mutated. */
export interface RunFold {
  /** Where it is; `undefined` until an event (or the caller) says. */
  readonly status: T.RunStatus | undefined;
  /**
   * The assistant's current message: `assistant.delta`s appended, then
   * replaced by the `assistant.message`'s whole text (a later delta
   * starts the next message), and by the end's text.
   */
  readonly text: string;
  /** Whether the last text event was a whole message (the next delta starts anew). */
  readonly textDone: boolean;
  /** Approvals it waits for: added by `approval.requested`, removed by `approval.resolved`. */
  readonly pendingApprovals: readonly T.Approval[];
  /** Questions it waits for: added by `question.requested`, removed by `question.answered`. */
  readonly pendingQuestions: readonly T.Question[];
  /** Whether its terminal event was folded in (its status is then the end's, and nothing is pending). */
  readonly ended: boolean;
}

/** A run before any of its events. */
export const RUN_FOLD_START: RunFold = {
  status: undefined,
  text: "",
  textDone: false,
  pendingApprovals: [],
  pendingQuestions: [],
  ended: false,
};

/** `status`, unless it is `waiting` with nothing pending: then `running`. */
export function unblocked(
  status: T.RunStatus | undefined,
  approvals: readonly unknown[],
  questions: readonly unknown[],
): T.RunStatus | undefined {
  return status === "waiting" && approvals.length === 0 && questions.length === 0 ? "running" : status;
}

/**
 * `state` moved on by `events`, in order: `foldRunEvents(RUN_FOLD_START,
 * run.events)` is the run as its log says. Events of other types leave it
 * as it is; a state nothing changed is returned as it is.
 */
export function foldRunEvents(state: RunFold, events: Iterable<TalonEvent>): RunFold {
  let { status, text, textDone, pendingApprovals, pendingQuestions, ended } = state;
  for (const event of events) {
    switch (event.type) {
      case "run.created":
      case "run.queued":
        status = "queued";
        break;
      case "run.started":
        status = "running";
        break;
      case "assistant.delta":
        text = (textDone ? "" : text) + event.data.text;
        textDone = false;
        break;
      case "assistant.message":
        if (typeof event.data.text === "string") text = event.data.text;
        textDone = true;
        break;
      case "approval.requested":
        if (!pendingApprovals.some((a) => a.id === event.data.id)) pendingApprovals = [...pendingApprovals, event.data];
        status = "waiting";
        break;
      case "approval.resolved":
        if (pendingApprovals.some((a) => a.id === event.data.approvalId))
          pendingApprovals = pendingApprovals.filter((a) => a.id !== event.data.approvalId);
        break;
      case "question.requested":
        if (!pendingQuestions.some((q) => q.id === event.data.id)) pendingQuestions = [...pendingQuestions, event.data];
        status = "waiting";
        break;
      case "question.answered":
        if (pendingQuestions.some((q) => q.id === event.data.questionId))
          pendingQuestions = pendingQuestions.filter((q) => q.id !== event.data.questionId);
        break;
      default:
        break;
    }
    const end = RUN_ENDS[event.type];
    if (end) {
      ended = true;
      status = end;
      if (pendingApprovals.length > 0) pendingApprovals = [];
      if (pendingQuestions.length > 0) pendingQuestions = [];
      const data = event.data as T.RunEndedData;
      if (typeof data.text === "string") text = data.text;
    } else status = unblocked(status, pendingApprovals, pendingQuestions);
  }
  if (
    status === state.status &&
    text === state.text &&
    textDone === state.textDone &&
    pendingApprovals === state.pendingApprovals &&
    pendingQuestions === state.pendingQuestions &&
    ended === state.ended
  )
    return state;
  return { status, text, textDone, pendingApprovals, pendingQuestions, ended };
}

/** `state` moved on by one event. */
export function foldRunEvent(state: RunFold, event: TalonEvent): RunFold {
  return foldRunEvents(state, [event]);
}
