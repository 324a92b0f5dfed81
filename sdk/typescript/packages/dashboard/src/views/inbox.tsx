// `/inbox`: every pending approval (`useApprovals`, across sessions) and
// question (the dashboard's `useQuestions`), live; approve or deny one, or
// select several and decide them together.

import { useState } from "preact/hooks";
import type { protocol as T } from "@talon/sdk";
import { useApprovals, useTalon } from "@talon/sdk-react";

import { ErrorLine, useCan, useQuestions } from "../kit.js";
import { ApprovalCard, QuestionCard } from "./decide.js";

export default function Inbox() {
  const talon = useTalon();
  const inbox = useApprovals();
  const questions = useQuestions(talon);
  const can = useCan("approval.respond");
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [batchError, setBatchError] = useState<unknown>();
  const decide = (approval: T.Approval, decision: T.ApprovalDecision, reason?: string) =>
    decision === "deny"
      ? inbox.deny(approval, reason === undefined ? {} : { reason })
      : inbox.approve(approval, { decision });
  const chosen = inbox.approvals.filter((a) => selected.has(a.id));
  const batch = (decision: T.ApprovalDecision) => {
    setBatchError(undefined);
    Promise.all(chosen.map((a) => decide(a, decision, decision === "deny" ? "denied in a batch" : undefined))).then(
      () => {
        setSelected(new Set());
      },
      (e: unknown) => {
        setBatchError(e);
      },
    );
  };
  return (
    <>
      <h1>Inbox</h1>
      <p aria-live="polite">
        {inbox.approvals.length} pending approval(s), {questions.questions.length} pending question(s).
      </p>
      <ErrorLine error={inbox.error}>Following the approvals failed: </ErrorLine>
      <ErrorLine error={questions.error}>Following the questions failed: </ErrorLine>
      <h2>Approvals</h2>
      {can && inbox.approvals.length > 0 && (
        <div class="batch" role="group" aria-label="Decide the selected approvals">
          <button
            type="button"
            onClick={() => {
              setSelected(new Set(inbox.approvals.map((a) => a.id)));
            }}
          >
            Select all
          </button>
          <button
            type="button"
            disabled={chosen.length === 0}
            onClick={() => {
              batch("approve_once");
            }}
          >
            Approve {chosen.length} selected once
          </button>
          <button
            type="button"
            class="danger"
            disabled={chosen.length === 0}
            onClick={() => {
              batch("deny");
            }}
          >
            Deny {chosen.length} selected
          </button>
          <ErrorLine error={batchError} />
        </div>
      )}
      {inbox.status === "loading" ? (
        <p class="muted">Loading…</p>
      ) : inbox.approvals.length === 0 ? (
        <p class="muted">No approval waits.</p>
      ) : (
        inbox.approvals.map((a) => (
          <ApprovalCard
            key={a.id}
            approval={a}
            decide={decide}
            selected={selected.has(a.id)}
            onSelect={(on) => {
              const next = new Set(selected);
              if (on) next.add(a.id);
              else next.delete(a.id);
              setSelected(next);
            }}
          />
        ))
      )}
      <h2>Questions</h2>
      {questions.loading ? (
        <p class="muted">Loading…</p>
      ) : questions.questions.length === 0 ? (
        <p class="muted">No question waits.</p>
      ) : (
        questions.questions.map((q) => <QuestionCard key={q.id} question={q} answer={questions.answer} />)
      )}
    </>
  );
}
