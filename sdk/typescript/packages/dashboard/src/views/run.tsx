// `/runs/{id}`: one run, live (`RunTail`): its header (status, agent,
// session, times, usage), cancel, run again with edited input, the
// timeline (`timelineOf`: text as it streams, each call with arguments,
// output, result or error, duration, approval, nested calls under the call
// that made them) and its artifacts (downloadable; text, logs, diffs and
// patches shown inline). The timeline loads tail first: the run's last
// 500 events, shown scrolled to the end and followed live; scrolling to
// the top of the timeline (or its "Load earlier events" button) loads the
// 500 before, put in front with what was in view kept in place.

import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { protocol as T } from "@talon/sdk";

import {
  at,
  Badge,
  duration,
  ErrorLine,
  json,
  lacks,
  navigate,
  useAsync,
  useCan,
  useLive,
  useTalon,
  when,
} from "../kit.js";
import { RunTail, type RunTailState } from "../runtail.js";
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

function CallView(props: { call: Call; top?: boolean }) {
  const c = props.call;
  return (
    <li class={`call call-${c.status}`} data-call-id={c.callId}>
      <details open={c.status === "running" || c.children.length > 0 || c.approval?.status === "pending"}>
        <summary>
          <span class="call-name">{c.earlier ? <span class="muted">call {c.callId}</span> : c.name}</span>{" "}
          <Badge status={c.outcome ?? c.status} />{" "}
          <span class="muted">{c.durationMs === undefined ? "" : duration(c.durationMs)}</span>
          {c.approval && (
            <span class="muted">
              {" "}
              · approval {c.approval.status}
              {c.approval.decision ? ` (${c.approval.decision})` : ""}
            </span>
          )}
        </summary>
        {c.earlier && <p class="muted">It started before the events loaded: load earlier events for its name.</p>}
        {props.top && c.parentId !== undefined && (
          <p class="muted orphan">
            Made by call <code>{c.parentId}</code>, in events not loaded yet.
          </p>
        )}
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
      return <CallView call={item} top />;
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

/** The timeline in a box of its own, scrolled to its end; earlier events load at its top. */
function Timeline(props: { tail: RunTail; state: RunTailState }) {
  const { events, earlier, loadingEarlier, earlierError, loading } = props.state;
  const items = useMemo(() => timelineOf(events), [events]);
  const box = useRef<HTMLDivElement>(null);
  const lastTop = useRef(0);
  const shownFirst = useRef<string | undefined>(undefined);
  // Where the box is before this render changes it (read before the DOM is).
  const el = box.current;
  const before = el && {
    height: el.scrollHeight,
    top: el.scrollTop,
    atEnd: el.scrollHeight - el.scrollTop - el.clientHeight < 32,
  };
  const first = events[0]?.id;
  useLayoutEffect(() => {
    const el = box.current;
    if (!el || first === undefined) return;
    if (shownFirst.current === undefined || !before) el.scrollTop = el.scrollHeight;
    // Earlier events went in front: what was in view stays in place.
    else if (first !== shownFirst.current) el.scrollTop = before.top + (el.scrollHeight - before.height);
    // New events at the end, the box at its end: it follows them.
    else if (before.atEnd) el.scrollTop = el.scrollHeight;
    shownFirst.current = first;
    lastTop.current = el.scrollTop;
  }, [items]);
  const loadEarlier = () => {
    void props.tail.loadEarlier().then(() => {
      // The button is gone once everything is loaded: the focus goes to the box.
      if (!props.tail.state.earlier && document.activeElement === document.body) box.current?.focus();
    });
  };
  return (
    <>
      <p class="muted" aria-live="polite">
        {loading
          ? "Reading the run's events…"
          : events.length === 0
            ? ""
            : earlier
              ? `The last ${events.length} events; earlier ones load at the top of the timeline.`
              : `All ${events.length} events.`}
      </p>
      {earlier && (
        <p class="earlier">
          <button type="button" onClick={loadEarlier} aria-busy={loadingEarlier}>
            {loadingEarlier ? "Loading earlier events…" : "Load earlier events"}
          </button>
        </p>
      )}
      <ErrorLine error={earlierError}>Loading earlier events failed: </ErrorLine>
      <div
        class="timeline-box"
        ref={box}
        tabIndex={0}
        role="region"
        aria-label="Timeline"
        onScroll={(e) => {
          const top = e.currentTarget.scrollTop;
          // Scrolled up to the top (not moved by new events): the page before.
          if (top < 48 && top < lastTop.current && props.state.earlier) loadEarlier();
          lastTop.current = top;
        }}
      >
        <ol class="timeline">
          {items.map((item, i) => (
            <ItemView key={item.kind === "call" ? item.callId : i} item={item} />
          ))}
        </ol>
      </div>
    </>
  );
}

export default function RunDetail(props: { id: string }) {
  const talon = useTalon();
  const tail = useMemo(() => new RunTail(talon, props.id), [talon, props.id]);
  const run = useLive(tail);
  const canRun = useCan("agent.run");
  const ended = run.result !== undefined;
  const info = useAsync((signal) => talon.client.runs.get(props.id, { signal }), `${props.id}:${String(ended)}`);
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
        <dt>Model</dt>
        <dd>{r?.model ?? "–"}</dd>
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
                tail.cancel("cancelled from the dashboard").catch((e: unknown) => {
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
        {r && canRun && <RunAgain key={run.input ?? ""} run={r} input={run.input ?? ""} />}
      </div>
      <ErrorLine error={cancelError} />
      {run.pendingApprovals.length + run.pendingQuestions.length > 0 && (
        <p class="notice">
          The run waits for {run.pendingApprovals.length} approval(s) and {run.pendingQuestions.length} question(s):{" "}
          <a href={at("/inbox")}>answer in the inbox</a>.
        </p>
      )}
      <h2>Timeline</h2>
      <Timeline tail={tail} state={run} />
      {run.following && <p class="muted">Following the run…</p>}
      <h2>Artifacts</h2>
      <Artifacts runId={props.id} version={artifactCount + (ended ? 1 : 0)} />
    </>
  );
}
