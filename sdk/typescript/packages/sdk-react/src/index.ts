// @talon/sdk-react: React hooks over @talon/sdk. `TalonProvider` gives
// the client; `useRun`, `useSession`, `useApprovals`, `useTasks` and `useEvents` read
// external stores with `useSyncExternalStore`, which stream while mounted
// (one stream per key, StrictMode included), resume from a saved cursor
// on their next mount, and render their initial state on a server.
// `foldRunEvents` is the pure rule `useRun` folds a run's events by, for
// any other reader of a run's log.
//
// Hooks and context run only in client components: the directive tells
// React Server Components bundlers (Next.js's App Router) so, and a server
// component imports this package only through a client boundary.
"use client";

export { TalonProvider, useTalon, type TalonProviderProps } from "./provider.js";
export { useRun, type RunState, type UseRunOptions, type UseRunResult } from "./run.js";
export { foldRunEvents, foldRunEvent, RUN_FOLD_START, type RunFold } from "./fold.js";
export {
  useSession,
  type SessionRef,
  type SessionState,
  type UseSessionOptions,
  type UseSessionResult,
} from "./session.js";
export { useApprovals, type ApprovalsFilter, type ApprovalsState, type UseApprovalsResult } from "./approvals.js";
export { useEvents, type EventsState, type UseEventsOptions } from "./events.js";
export { useTasks, type TasksFilter, type TasksState, type UseTasksResult } from "./tasks.js";
export { memoryCursorStore, webCursorStore, type CursorStore, type WebCursorStoreOptions } from "./cursor.js";
export type { ApprovalRef, QuestionRef } from "./internal.js";
