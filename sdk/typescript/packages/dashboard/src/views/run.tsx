// `/runs/{id}`: one run, live (`useRun`): its header (status, agent,
// session, times, usage), cancel, run again with edited input, the
// timeline (`timelineOf`: text as it streams, each call with arguments,
// output, result or error, duration, approval, nested calls under the call
// that made them) and its artifacts (downloadable; text, logs, diffs and
// patches shown inline).

import { useMemo, useState } from "preact/hooks";
import type { TalonEvent } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { useRun, useTalon } from "@talon/sdk-react";

import { at, Badge, duration, ErrorLine, json, lacks, navigate, useAsync, useCan, when } from "../kit.js";
import { timelineOf, type Call, type Item } from "../timeline.js";
import { Artifacts } from "./artifacts.js";

function Usage(props: { usage: T.Usage | null | undefined }) {
  const u = props.usage;
  if (!u) return null;
  const cost = typeof u.costUsd === "number" ? `, $${u.costUsd.toFixed(4)}` : "";
  return (
    <span class="usage">
      {u.inputTokens ?? 0} in / {u.outputTokens ?? 0} out tokens{cost}
    </span>
  );
}

function CallView(props: { call: Call }) {
  const c = props.call;
  return (
    <li class={`call call-${c.status}`} data-call-id={c.callId}>
      <details open={c.status === "running" || c.children.length > 0 || c.approval?.status === "pending"}>
        <summary>
          <span class="call-name">{c.name}</span> <Badge status={c.outcome ?? c.status} />{" "}
          <span class="muted">{c.durationMs === undefined ? "" : duration(c.durationMs)}</span>
          {c.approval && (
            <span class="muted">
              {" "}
              · approval {c.approval.status}
              {c.approval.decision ? ` (${c.approval.decision})` : ""}
            </span>
          )}
        </summary>
        {c.arguments !== undefined && (
          <>
            <h4>Arguments</h4>
            <pre tabIndex={0} class="code">
              {json(c.arguments)}
            </pre>
          </>
        )}
        {c.output.length > 0 && (
          <>
            <h4>Output</h4>
            <pre tabIndex={0} class="code output">
              {c.output.map((o, i) => (
                <span key={i} class={`out-${o.stream}`}>
                  {o.text}
                </span>
              ))}
            </pre>
          </>
        )}
        {c.children.length > 0 && (
          <>
            <h4>Nested calls</h4>
            <ol class="calls nested">
              {c.children.map((child) => (
                <CallView key={child.callId} call={child} />
              ))}
            </ol>
          </>
        )}
        {c.status === "completed" && (
          <>
            <h4>Result</h4>
            <pre tabIndex={0} class="code">
              {json(c.result)}
            </pre>
          </>
        )}
        {c.status === "failed" && (
          <>
            <h4>Error</h4>
            <pre tabIndex={0} class="code error-text">
              {json(c.error)}
            </pre>
          </>
        )}
      </details>
    </li>
  );
}

function ItemView(props: { item: Item }) {
  const item = props.item;
  switch (item.kind) {
    case "call":
      return <CallView call={item} />;
    case "text":
      return (
        <li class="text">
          <p class="assistant">{item.text || <span class="muted">(tool calls only)</span>}</p>
          {item.usage && (
            <p class="muted">
              Model call: <Usage usage={item.usage} />
            </p>
          )}
        </li>
      );
    case "thinking":
      return (
        <li class="thinking">
          <p>
            <span class="muted">Thinking: </span>
            {item.text}
          </p>
        </li>
      );
    case "approval":
      return (
        <li class="approval-item">
          Approval for {item.approval.toolName ?? item.approval.kind}: {item.approval.summary} —{" "}
          <Badge status={item.status} /> {item.decision ?? ""}
        </li>
      );
    case "question":
      return (
        <li class="question-item">
          Question: {item.question.prompt} — {item.answered ? `answered ${json(item.answer)}` : "waiting"}
        </li>
      );
    case "step":
      return (
        <li class="step">
          <span class="muted">{when(item.ts)}</span> {item.type} <span class="muted">{item.detail}</span>
        </li>
      );
  }
}

function inputOf(events: readonly TalonEvent[]): string {
  for (const e of events) if (e.type === "run.created") return e.data.input;
  return "";
}

function RunAgain(props: { run: T.Run; input: string }) {
  const talon = useTalon();
  const [input, setInput] = useState(props.input);
  const [error, setError] = useState<unknown>();
  return (
    <details class="again">
      <summary>Run again…</summary>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const params: T.RunsCreateParams = { agentId: props.run.agentId, input };
          if (props.run.sessionId) params.sessionId = props.run.sessionId;
          talon.client.runs.create(params).then(
            (accepted) => {
              navigate(`/runs/${encodeURIComponent(accepted.runId)}`);
            },
            (failure: unknown) => {
              setError(failure);
            },
          );
        }}
      >
        <label>
          Input
          <textarea
            name="input"
            rows={3}
            value={input}
            onInput={(e) => {
              setInput(e.currentTarget.value);
            }}
          />
        </label>
        <button type="submit" disabled={!input.trim()}>
          Start it
        </button>
        <ErrorLine error={error} />
      </form>
    </details>
  );
}

export default function RunDetail(props: { id: string }) {
  const talon = useTalon();
  const run = useRun(props.id);
  const canRun = useCan("agent.run");
  const ended = run.result !== undefined;
  const info = useAsync((signal) => talon.client.runs.get(props.id, { signal }), `${props.id}:${String(ended)}`);
  const items = useMemo(() => timelineOf(run.events), [run.events]);
  const artifactCount = run.events.filter((e) => e.type === "artifact.created").length;
  const [cancelError, setCancelError] = useState<unknown>();
  const r = info.value;
  const status = run.status ?? r?.status;
  const live = status !== undefined && ["queued", "running", "waiting"].includes(status);
  return (
    <>
      <h1>
        Run <code>{props.id}</code>
      </h1>
      <ErrorLine error={info.error}>Reading the run failed: </ErrorLine>
      <ErrorLine error={run.error}>Following the run failed: </ErrorLine>
      <dl class="facts">
        <dt>Status</dt>
        <dd aria-live="polite">
          <Badge status={status} />
        </dd>
        <dt>Agent</dt>
        <dd>{r?.agentId ?? "…"}</dd>
        <dt>Session</dt>
        <dd>
          {r?.sessionId ? (
            <a href={at(`/sessions/${encodeURIComponent(r.sessionId)}`)}>{r.sessionKey ?? r.sessionId}</a>
          ) : (
            "–"
          )}
        </dd>
        <dt>Created</dt>
        <dd>{when(r?.createdAt)}</dd>
        <dt>Started</dt>
        <dd>{when(r?.startedAt)}</dd>
        <dt>Ended</dt>
        <dd>{when(r?.endedAt ?? run.result?.endedAt)}</dd>
        <dt>Usage</dt>
        <dd>
          <Usage usage={run.result?.usage ?? r?.usage} />
        </dd>
      </dl>
      <div class="actions">
        {live &&
          (canRun ? (
            <button
              type="button"
              class="danger"
              onClick={() => {
                run.cancel({ reason: "cancelled from the dashboard" }).catch((e: unknown) => {
                  setCancelError(e);
                });
              }}
            >
              Cancel the run
            </button>
          ) : (
            <button type="button" disabled title={lacks("agent.run")}>
              Cancel the run
            </button>
          ))}
        {r && canRun && <RunAgain run={r} input={inputOf(run.events)} />}
      </div>
      <ErrorLine error={cancelError} />
      {run.pendingApprovals.length + run.pendingQuestions.length > 0 && (
        <p class="notice">
          The run waits for {run.pendingApprovals.length} approval(s) and {run.pendingQuestions.length} question(s):{" "}
          <a href={at("/inbox")}>answer in the inbox</a>.
        </p>
      )}
      <h2>Timeline</h2>
      <ol class="timeline">
        {items.map((item, i) => (
          <ItemView key={item.kind === "call" ? item.callId : i} item={item} />
        ))}
      </ol>
      {run.following && <p class="muted">Following the run…</p>}
      <h2>Artifacts</h2>
      <Artifacts runId={props.id} version={artifactCount + (ended ? 1 : 0)} />
    </>
  );
}
