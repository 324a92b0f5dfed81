// Deciding an approval and answering a question, as the inbox and the
// standalone `/approve/{id}` page show them: what the call would do (tool,
// arguments, summary), its risk and expiry, the decisions it allows
// (once, for the session, always), a deny with a reason; a question's
// choices, or a form from its `answerSchema`.

import { useState } from "preact/hooks";
import type { protocol as T } from "@talon/sdk";

import { at, ErrorLine, json, lacks, useCan, when } from "../kit.js";

const LABELS: Partial<Record<T.ApprovalDecision, string>> = {
  approve_once: "Approve once",
  approve_session: "Approve for the session",
  approve_always: "Approve always",
};

export type Decide = (approval: T.Approval, decision: T.ApprovalDecision, reason?: string) => Promise<unknown>;

export function ApprovalCard(props: {
  approval: T.Approval;
  decide: Decide;
  selected?: boolean;
  onSelect?: (on: boolean) => void;
}) {
  const a = props.approval;
  const can = useCan("approval.respond");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const decide = (decision: T.ApprovalDecision, why?: string) => {
    setBusy(true);
    setError(undefined);
    props.decide(a, decision, why).then(
      () => {
        setBusy(false);
      },
      (failure: unknown) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  const approvals = a.decisions.filter((d) => d !== "deny" && d !== "unknown");
  const headingId = `approval-${a.id}`;
  return (
    <article class={`card risk-${a.risk}`} aria-labelledby={headingId} data-approval-id={a.id}>
      <h3 id={headingId}>
        {props.onSelect && can && (
          <input
            type="checkbox"
            aria-label={`Select the approval of ${a.toolName ?? a.kind}`}
            checked={props.selected}
            onChange={(e) => props.onSelect?.(e.currentTarget.checked)}
          />
        )}{" "}
        {a.kind === "environment" ? `Environment: ${a.environmentAction ?? ""}` : (a.toolName ?? a.toolId ?? "a tool")}
      </h3>
      <p>{a.summary}</p>
      <dl class="facts">
        <dt>Risk</dt>
        <dd>
          <span class={`risk risk-${a.risk}`}>{a.risk}</span>
        </dd>
        <dt>Expires</dt>
        <dd>{when(a.expiresAt)}</dd>
        <dt>Run</dt>
        <dd>
          <a href={at(`/runs/${encodeURIComponent(a.runId)}`)}>{a.runId}</a>
        </dd>
        {a.toolId && (
          <>
            <dt>Tool</dt>
            <dd>
              <code>{a.toolId}</code>
            </dd>
          </>
        )}
      </dl>
      {a.arguments !== undefined && (
        <details open>
          <summary>Arguments</summary>
          <pre tabIndex={0} class="code">
            {json(a.arguments)}
          </pre>
        </details>
      )}
      {a.status !== "pending" ? (
        <p>
          Resolved: <strong>{a.status}</strong>
          {a.decision ? ` (${a.decision})` : ""}
        </p>
      ) : can ? (
        <div class="decide">
          {approvals.map((d) => (
            <button
              key={d}
              type="button"
              disabled={busy}
              onClick={() => {
                decide(d);
              }}
            >
              {LABELS[d] ?? d}
            </button>
          ))}
          <label>
            Reason
            <input
              value={reason}
              onInput={(e) => {
                setReason(e.currentTarget.value);
              }}
            />
          </label>
          {a.decisions.includes("deny") && (
            <button
              type="button"
              class="danger"
              disabled={busy}
              onClick={() => {
                decide("deny", reason || undefined);
              }}
            >
              Deny
            </button>
          )}
        </div>
      ) : (
        <p class="muted">{lacks("approval.respond")} Deciding is not offered.</p>
      )}
      <ErrorLine error={error} />
    </article>
  );
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  choices: string[] | undefined;
}

/** The top-level fields of an object `answerSchema` (else none: the answer is typed as JSON). */
export function fieldsOf(schema: unknown): Field[] | undefined {
  if (typeof schema !== "object" || schema === null) return undefined;
  const s = schema as { type?: unknown; properties?: Record<string, unknown>; required?: unknown };
  if (s.type !== "object" || typeof s.properties !== "object") return undefined;
  const required = Array.isArray(s.required) ? (s.required as unknown[]) : [];
  return Object.entries(s.properties).map(([name, p]) => {
    const prop = (p ?? {}) as { type?: unknown; enum?: unknown };
    return {
      name,
      type: typeof prop.type === "string" ? prop.type : "string",
      required: required.includes(name),
      choices: Array.isArray(prop.enum) ? prop.enum.map(String) : undefined,
    };
  });
}

function valueOf(field: Field, raw: string): unknown {
  if (field.type === "number" || field.type === "integer") return Number(raw);
  if (field.type === "boolean") return raw === "true";
  return raw;
}

export function QuestionCard(props: { question: T.Question; answer: (q: T.Question, a: unknown) => Promise<unknown> }) {
  const q = props.question;
  const can = useCan("approval.respond");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [values, setValues] = useState<Record<string, string>>({});
  const fields = fieldsOf(q.answerSchema);
  const send = (answer: unknown) => {
    setBusy(true);
    props.answer(q, answer).then(
      () => {
        setBusy(false);
      },
      (failure: unknown) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  const headingId = `question-${q.id}`;
  return (
    <article class="card" aria-labelledby={headingId} data-question-id={q.id}>
      <h3 id={headingId}>{q.prompt}</h3>
      <p class="muted">
        Run <a href={at(`/runs/${encodeURIComponent(q.runId)}`)}>{q.runId}</a>, expires {when(q.expiresAt)}
      </p>
      {!can ? (
        <p class="muted">{lacks("approval.respond")} Answering is not offered.</p>
      ) : q.choices && q.choices.length > 0 ? (
        <div class="decide" role="group" aria-label="Choices">
          {q.choices.map((c) => (
            <button
              key={c}
              type="button"
              disabled={busy}
              onClick={() => {
                send(c);
              }}
            >
              {c}
            </button>
          ))}
        </div>
      ) : (
        <form
          class="answer"
          onSubmit={(e) => {
            e.preventDefault();
            if (fields) {
              const answer: Record<string, unknown> = {};
              for (const f of fields)
                if (values[f.name] !== undefined) answer[f.name] = valueOf(f, values[f.name] ?? "");
              send(answer);
            } else {
              const raw = values[""] ?? "";
              let answer: unknown = raw;
              try {
                answer = JSON.parse(raw);
              } catch {
                // Plain text.
              }
              send(answer);
            }
          }}
        >
          {(fields ?? [{ name: "", type: "string", required: true, choices: undefined }]).map((f) => (
            <label key={f.name}>
              {f.name || "Answer"}
              {f.required ? " (required)" : ""}
              {f.choices ? (
                <select
                  value={values[f.name] ?? ""}
                  onChange={(e) => {
                    setValues({ ...values, [f.name]: e.currentTarget.value });
                  }}
                >
                  <option value="">choose</option>
                  {f.choices.map((c) => (
                    <option key={c}>{c}</option>
                  ))}
                </select>
              ) : (
                <input
                  type={f.type === "number" || f.type === "integer" ? "number" : "text"}
                  required={f.required}
                  value={values[f.name] ?? ""}
                  onInput={(e) => {
                    setValues({ ...values, [f.name]: e.currentTarget.value });
                  }}
                />
              )}
            </label>
          ))}
          <button type="submit" disabled={busy}>
            Answer
          </button>
        </form>
      )}
      <ErrorLine error={error} />
    </article>
  );
}
