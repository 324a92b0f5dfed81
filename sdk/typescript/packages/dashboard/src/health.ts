// `healthOf(text)`: the main figures of the gateway's `/metrics`
// (Prometheus text format) for the Health view. Pure.

/** One sample: a metric's name, its labels, its value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A node holding live runs, and its earliest lease. */
export interface NodeLease {
  readonly node: string;
  /** Live runs it holds (`talon_node_runs`). */
  readonly runs: number;
  /** Seconds until its earliest lease lapses (`talon_node_lease_seconds`); below 0, another node takes its runs back. */
  readonly leaseSeconds: number | undefined;
}

/** What the Health view shows. */
export interface Health {
  /** The node that answered (`talon_node_info`). */
  readonly node: string | undefined;
  /** Every node holding live runs, by id. */
  readonly nodes: readonly NodeLease[];
  /** Whether the store can write (`talon_store_up`), if reported. */
  readonly storeUp: boolean | undefined;
  readonly storeErrors: number | undefined;
  /** Runs waiting in the store to be claimed. */
  readonly queueDepth: number | undefined;
  /** Runs by status (`talon_runs{status}`). */
  readonly runs: Readonly<Record<string, number>>;
  readonly approvalsPending: number | undefined;
  readonly runsCreated: number | undefined;
  /** Runs finished, by outcome label when there is one. */
  readonly runsFinished: Readonly<Record<string, number>>;
  readonly sseConnections: number | undefined;
  readonly wsConnections: number | undefined;
  readonly httpRequests: number | undefined;
  readonly costUsd: number | undefined;
}

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

/** The samples of a Prometheus text exposition (comments and malformed lines skipped). */
export function samplesOf(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match?.[1] || match[3] === undefined) continue;
    const labels: Record<string, string> = {};
    const body = match[2] ?? "";
    for (const pair of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (pair[1] !== undefined) labels[pair[1]] = unescape(pair[2] ?? "");
    }
    const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
    if (Number.isNaN(value) && match[3] !== "NaN") continue;
    out.push({ name: match[1], labels, value });
  }
  return out;
}

/** The main figures of `/metrics`. */
export function healthOf(text: string): Health {
  const samples = samplesOf(text);
  const one = (name: string) => {
    const found = samples.filter((s) => s.name === name);
    return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
  };
  const by = (name: string, label: string) => {
    const out: Record<string, number> = {};
    for (const s of samples)
      if (s.name === name) {
        const key = s.labels[label] ?? "all";
        out[key] = (out[key] ?? 0) + s.value;
      }
    return out;
  };
  const up = one("talon_store_up");
  const leases = by("talon_node_lease_seconds", "node");
  const nodes = Object.entries(by("talon_node_runs", "node"))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, runs]) => ({ node, runs, leaseSeconds: leases[node] }));
  return {
    node: samples.find((s) => s.name === "talon_node_info")?.labels.node,
    nodes,
    storeUp: up === undefined ? undefined : up > 0,
    storeErrors: one("talon_store_errors_total"),
    queueDepth: one("talon_queue_depth"),
    runs: by("talon_runs", "status"),
    approvalsPending: one("talon_approvals_pending"),
    runsCreated: one("talon_runs_created_total"),
    runsFinished: by("talon_runs_finished_total", "status"),
    sseConnections: one("talon_sse_connections"),
    wsConnections: one("talon_ws_connections"),
    httpRequests: one("talon_http_requests_total"),
    costUsd: one("talon_model_cost_usd_total"),
  };
}
