// `/health`: the gateway's `/healthz` and the main figures of `/metrics`
// (`healthOf`), read when the view opens and on Refresh (the one view that
// reads rather than follows: neither has events).

import { allows, at, ErrorLine, GrantContext, useAsync } from "../kit.js";
import { healthOf } from "../health.js";
import { useContext } from "preact/hooks";

async function text(path: string, signal: AbortSignal): Promise<{ status: number; body: string }> {
  const response = await fetch(path, { signal, credentials: "same-origin" });
  return { status: response.status, body: await response.text() };
}

function Figure(props: { label: string; value: string | number | undefined }) {
  return (
    <>
      <dt>{props.label}</dt>
      <dd>{props.value ?? "–"}</dd>
    </>
  );
}

export default function Health() {
  const grant = useContext(GrantContext);
  const canMetrics = allows(grant, "metrics.read");
  const read = useAsync(
    async (signal) => ({
      healthz: await text(at("/healthz"), signal),
      metrics: canMetrics ? await text(at("/metrics"), signal) : undefined,
    }),
    "health",
  );
  const v = read.value;
  const h = v?.metrics?.status === 200 ? healthOf(v.metrics.body) : undefined;
  const record = (r: Readonly<Record<string, number>> | undefined) =>
    r && Object.keys(r).length > 0
      ? Object.entries(r)
          .map(([k, n]) => `${k} ${n}`)
          .join(", ")
      : undefined;
  return (
    <>
      <h1>Health</h1>
      <button type="button" onClick={read.reload} disabled={read.loading}>
        Refresh
      </button>
      <ErrorLine error={read.error} />
      <h2>Readiness</h2>
      {v ? (
        <>
          <p>
            <span class={v.healthz.status === 200 ? "badge badge-completed" : "badge badge-failed"}>
              {v.healthz.status === 200 ? "ready" : `not ready (${v.healthz.status})`}
            </span>
          </p>
          <pre tabIndex={0} class="code">
            {v.healthz.body}
          </pre>
        </>
      ) : (
        <p class="muted">Loading…</p>
      )}
      <h2>Figures</h2>
      {!canMetrics ? (
        <p class="muted">This sign-in lacks the metrics.read scope.</p>
      ) : v?.metrics && v.metrics.status !== 200 ? (
        <p class="error">/metrics answered {v.metrics.status}.</p>
      ) : h ? (
        <dl class="facts">
          <Figure label="Store" value={h.storeUp === undefined ? undefined : h.storeUp ? "up" : "down"} />
          <Figure label="Store errors" value={h.storeErrors} />
          <Figure label="Queue depth" value={h.queueDepth} />
          <Figure label="Runs now" value={record(h.runs)} />
          <Figure label="Approvals pending" value={h.approvalsPending} />
          <Figure label="Runs created" value={h.runsCreated} />
          <Figure label="Runs finished" value={record(h.runsFinished)} />
          <Figure label="SSE connections" value={h.sseConnections} />
          <Figure label="WebSocket connections" value={h.wsConnections} />
          <Figure label="HTTP requests" value={h.httpRequests} />
          <Figure label="Model cost (USD)" value={h.costUsd === undefined ? undefined : h.costUsd.toFixed(4)} />
        </dl>
      ) : (
        <p class="muted">Loading…</p>
      )}
      {h && (
        <>
          <h2>Nodes</h2>
          <p>
            This page was answered by node <code>{h.node ?? "unknown"}</code>.
          </p>
          {h.nodes.length === 0 ? (
            <p class="muted">No node holds a live run.</p>
          ) : (
            <table>
              <caption>Nodes holding live runs, and their earliest lease</caption>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Live runs</th>
                  <th scope="col">Lease</th>
                </tr>
              </thead>
              <tbody>
                {h.nodes.map((n) => (
                  <tr key={n.node}>
                    <td>
                      <code>{n.node}</code>
                    </td>
                    <td>{n.runs}</td>
                    <td>{leaseText(n.leaseSeconds)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </>
  );
}

/** A lease as a person reads it. */
function leaseText(seconds: number | undefined): string {
  if (seconds === undefined) return "–";
  return seconds >= 0
    ? `${seconds.toFixed(1)} s left`
    : `lapsed ${(-seconds).toFixed(1)} s ago: another node takes its runs back`;
}
