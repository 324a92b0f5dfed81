// `/`: the runs, live. A store lists them (`runs.list`, newest first, a
// page at a time as the list is scrolled to its end) after taking a cursor
// at "now", then follows the log's run lifecycle events: a new run comes in
// at the top, a row's status changes in place, without reading the list
// again. Each row is one line: status, the run's summary (its input's
// first line, `Run.summary`; the id when there is none), its model once it
// started, agent, times and tokens. Filters by status, agent, session,
// creation time and text in the summary (debounced): all sent to
// `runs.list`, which filters and pages on the server, and applied by the
// same rules to what the log brings (a new run's summary made from
// `run.created`'s input as the gateway makes it, `summaryOf`). Rows are
// virtualised: only those in view (and a few more) are in the DOM. A form
// starts a run when the sign-in may (`agent.run`).

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  RUN_STATUSES,
  caps,
  runSummary,
  summaryContains,
  type Talon,
  type TalonEvent,
  type TalonError,
} from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";
import { useTalon } from "@talon/sdk-react";

import { at, Badge, duration, ErrorLine, lacks, Live, navigate, nowCursor, useCan, useLive, when } from "../kit.js";

/** One row: a run as listed, kept current by the log. */
export type Row = T.Run;

export interface Filter {
  readonly status: string;
  readonly agentId: string;
  readonly sessionId: string;
  /** Created at or after this local time (`datetime-local`'s value), or "". */
  readonly since: string;
  /** Text the summary contains (ASCII letters in either case), or "". */
  readonly text: string;
}

/** The longest text `runs.list` takes. */
export const MAX_TEXT = caps.MAX_RUN_TEXT_CHARS;
/** How long the text filter waits for typing to pause before it asks the server. */
const TEXT_DEBOUNCE_MS = 250;

interface RunsState {
  readonly rows: readonly Row[];
  readonly loading: boolean;
  readonly more: boolean;
  readonly error: TalonError | undefined;
}

const LIFECYCLE: T.EventType[] = [
  "run.created",
  "run.queued",
  "run.started",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.timed_out",
  "approval.requested",
  "approval.resolved",
  "question.requested",
  "question.answered",
];

const PAGE = 200;

/** The status a lifecycle event leaves a run in. */
function statusAfter(event: TalonEvent, before: T.RunStatus | undefined): T.RunStatus | undefined {
  switch (event.type) {
    case "run.created":
    case "run.queued":
      return "queued";
    case "run.started":
    case "approval.resolved":
    case "question.answered":
      return before === "waiting" || before === "queued" || before === undefined ? "running" : before;
    case "run.completed":
      return "completed";
    case "run.failed":
      return "failed";
    case "run.cancelled":
      return "cancelled";
    case "run.timed_out":
      return "timed_out";
    case "approval.requested":
    case "question.requested":
      return "waiting";
    default:
      return before;
  }
}

/** A row after a lifecycle event (`undefined` for a run the event cannot make a row of). */
export function rowAfter(row: Row | undefined, event: TalonEvent): Row | undefined {
  const runId = event.runId;
  if (!runId) return row;
  const base: Row = row ?? {
    id: runId,
    agentId: event.agentId ?? "main",
    createdAt: event.ts,
    sessionId: event.sessionId ?? null,
    sessionKey: event.sessionKey ?? null,
    status: "queued",
  };
  if (!row && event.type !== "run.created") return undefined;
  const next: { -readonly [K in keyof Row]: Row[K] } = { ...base };
  next.status = statusAfter(event, base.status) ?? base.status;
  if (event.type === "run.created") {
    const summary = runSummary(event.data.input);
    if (summary !== undefined) next.summary = summary;
  }
  if (event.type === "run.started") {
    next.startedAt = event.ts;
    if (event.data.model) next.model = event.data.model;
  }
  if (
    event.type === "run.completed" ||
    event.type === "run.failed" ||
    event.type === "run.cancelled" ||
    event.type === "run.timed_out"
  ) {
    next.endedAt = event.ts;
    next.usage = event.data.usage;
  }
  return next;
}

class RunsStore extends Live<RunsState> {
  readonly #talon: Talon;
  readonly #filter: Filter;
  #cursor: string | undefined;
  #next: string | undefined;
  #index = new Map<string, number>();
  #paging = false;

  constructor(talon: Talon, filter: Filter) {
    super({ rows: [], loading: true, more: false, error: undefined });
    this.#talon = talon;
    this.#filter = filter;
  }

  #params(): T.RunsListParams {
    const params: T.RunsListParams = { limit: PAGE };
    if (this.#filter.status) params.status = [this.#filter.status as T.RunStatus];
    if (this.#filter.agentId) params.agentId = this.#filter.agentId;
    if (this.#filter.sessionId) params.sessionId = this.#filter.sessionId;
    const since = this.#since();
    if (since !== undefined) params.createdAfter = since;
    if (this.#filter.text) params.text = this.#filter.text;
    return params;
  }

  #since(): number | undefined {
    const ms = this.#filter.since ? new Date(this.#filter.since).getTime() : NaN;
    return Number.isFinite(ms) ? ms : undefined;
  }

  #wants(row: Row): boolean {
    const f = this.#filter;
    return (
      (!f.status || row.status === f.status) &&
      (!f.agentId || row.agentId === f.agentId) &&
      (!f.sessionId || row.sessionId === f.sessionId) &&
      row.createdAt >= (this.#since() ?? 0) &&
      summaryContains(row.summary, f.text)
    );
  }

  #reindex(rows: readonly Row[]): void {
    this.#index = new Map(rows.map((r, i) => [r.id, i]));
  }

  protected async run(signal: AbortSignal): Promise<void> {
    // The cursor comes before the list: whatever happens after the list is after it.
    const fresh = this.#cursor === undefined;
    if (fresh) this.#cursor = await nowCursor(this.#talon, signal);
    if (fresh || this.state.rows.length === 0) {
      const page = await this.#talon.client.runs.list(this.#params(), { signal });
      this.#next = page.nextCursor ?? undefined;
      this.#reindex(page.runs);
      this.update({ rows: page.runs, loading: false, more: this.#next !== undefined, error: undefined });
    } else this.update({ error: undefined });
    this.connected();
    let pending: TalonEvent[] = [];
    let scheduled = false;
    for await (const event of this.#talon.events({ after: this.#cursor, types: LIFECYCLE, signal })) {
      if (signal.aborted) return;
      this.#cursor = event.id;
      pending.push(event);
      // Events that arrive together are applied in one update.
      if (!scheduled) {
        scheduled = true;
        queueMicrotask(() => {
          scheduled = false;
          const batch = pending;
          pending = [];
          this.#apply(batch);
        });
      }
    }
  }

  #apply(events: readonly TalonEvent[]): void {
    let rows: Row[] | readonly Row[] = this.state.rows;
    let copied: Row[] | undefined;
    const added: Row[] = [];
    for (const event of events) {
      const runId = event.runId;
      if (!runId) continue;
      const at = this.#index.get(runId);
      const known = at === undefined ? added.find((r) => r.id === runId) : rows[at];
      const next = rowAfter(known, event);
      if (!next || next === known) continue;
      if (at !== undefined) {
        copied ??= rows.slice();
        rows = copied;
        copied[at] = next;
      } else if (known) added[added.indexOf(known)] = next;
      else added.push(next);
    }
    const fresh = added.filter((r) => this.#wants(r)).reverse();
    if (fresh.length > 0) {
      rows = [...fresh, ...rows];
      this.#reindex(rows);
    }
    if (rows !== this.state.rows) this.update({ rows });
  }

  /** Reads the next page (when the list is scrolled to its end). */
  async more(): Promise<void> {
    if (this.#paging || this.#next === undefined) return;
    this.#paging = true;
    try {
      const page = await this.#talon.client.runs.list({ ...this.#params(), cursor: this.#next });
      this.#next = page.nextCursor ?? undefined;
      const rows = [...this.state.rows, ...page.runs.filter((r) => !this.#index.has(r.id))];
      this.#reindex(rows);
      this.update({ rows, more: this.#next !== undefined });
    } catch (error) {
      this.failed(error as TalonError);
    } finally {
      this.#paging = false;
    }
  }

  protected failed(error: TalonError): void {
    this.update({ error, loading: false });
  }
}

const ROW = 40;
const OVERSCAN = 10;

/** The rows in view of a scrolled box: `[first, last)`. */
export function windowOf(scrollTop: number, height: number, count: number): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN);
  const last = Math.min(count, Math.ceil((scrollTop + height) / ROW) + OVERSCAN);
  return [first, Math.max(first, last)];
}

function RunList(props: { store: RunsStore; text: string }) {
  const { rows, loading, more, error } = useLive(props.store);
  const box = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => {
      setView({ top: el.scrollTop, height: el.clientHeight });
    };
    measure();
    el.addEventListener("scroll", measure, { passive: true });
    window.addEventListener("resize", measure);
    return () => {
      el.removeEventListener("scroll", measure);
      window.removeEventListener("resize", measure);
    };
  }, []);
  const [first, last] = windowOf(view.top, view.height, rows.length);
  useEffect(() => {
    if (more && last >= rows.length - OVERSCAN) void props.store.more();
  }, [more, last, rows.length]);
  const counted = `${rows.length}${more ? "+" : ""} runs${props.text ? " match" : ""}`;
  return (
    <>
      <ErrorLine error={error}>Following the runs failed: </ErrorLine>
      <p class="muted" aria-live="polite">
        {loading ? "Loading the runs…" : counted}
      </p>
      <div class="runs-head" aria-hidden="true">
        <span>Status</span>
        <span>Run</span>
        <span>Model</span>
        <span>Agent</span>
        <span>Created</span>
        <span>Took</span>
        <span>Tokens</span>
      </div>
      <div class="scroller" ref={box} tabIndex={0} role="region" aria-label="Runs, newest first">
        <ul class="runs" style={{ height: `${rows.length * ROW}px` }}>
          {rows.slice(first, last).map((row, i) => (
            <li key={row.id} class="run-row" style={{ transform: `translateY(${(first + i) * ROW}px)` }}>
              <Badge status={row.status} />
              <a
                href={at(`/runs/${encodeURIComponent(row.id)}`)}
                title={row.summary ? `${row.summary} (${row.id})` : row.id}
              >
                {row.summary ?? row.id}
              </a>
              <span class="model" title={row.model ?? undefined}>
                {row.model ?? "–"}
              </span>
              <span>{row.agentId}</span>
              <span>{when(row.createdAt)}</span>
              <span>{row.endedAt ? duration(row.endedAt - (row.startedAt ?? row.createdAt)) : "–"}</span>
              <span>{row.usage?.totalTokens ?? "–"}</span>
            </li>
          ))}
        </ul>
      </div>
    </>
  );
}

function NewRun() {
  const talon = useTalon();
  const [agent, setAgent] = useState("main");
  const [input, setInput] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="new-run"
      onSubmit={(event) => {
        event.preventDefault();
        if (!input.trim()) return;
        setBusy(true);
        talon.client.runs.create({ agentId: agent || "main", input }).then(
          (accepted) => {
            navigate(`/runs/${encodeURIComponent(accepted.runId)}`);
          },
          (failure: unknown) => {
            setBusy(false);
            setError(failure);
          },
        );
      }}
    >
      <h2>New run</h2>
      <label>
        Agent
        <input
          name="agent"
          value={agent}
          onInput={(e) => {
            setAgent(e.currentTarget.value);
          }}
        />
      </label>
      <label class="grow">
        Input
        <textarea
          name="input"
          rows={2}
          value={input}
          onInput={(e) => {
            setInput(e.currentTarget.value);
          }}
        />
      </label>
      <button type="submit" disabled={busy || !input.trim()}>
        Start the run
      </button>
      <ErrorLine error={error}>Starting the run failed: </ErrorLine>
    </form>
  );
}

export default function Runs() {
  const talon = useTalon();
  const canRun = useCan("agent.run");
  const [filter, setFilter] = useState<Filter>(() => ({
    status: "",
    agentId: "",
    sessionId: new URLSearchParams(location.search).get("session") ?? "",
    since: "",
    text: "",
  }));
  const [text, setText] = useState("");
  // The text goes to the server once typing pauses.
  useEffect(() => {
    const wanted = text.trim();
    if (wanted === filter.text) return;
    const timer = setTimeout(() => {
      setFilter((f) => ({ ...f, text: wanted }));
    }, TEXT_DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
    };
  }, [text, filter.text]);
  const store = useMemo(() => new RunsStore(talon, filter), [talon, filter]);
  const field = (key: keyof Filter) => (e: { currentTarget: { value: string } }) => {
    const value = e.currentTarget.value.trim();
    setFilter((f) => ({ ...f, [key]: value }));
  };
  return (
    <>
      <h1>Runs</h1>
      {canRun ? <NewRun /> : <p class="muted">{lacks("agent.run")} Starting runs is not offered.</p>}
      <form
        class="filters"
        aria-label="Filter the runs"
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <label>
          Status
          <select name="status" value={filter.status} onChange={field("status")}>
            <option value="">any</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent
          <input name="agentId" value={filter.agentId} onChange={field("agentId")} placeholder="any" />
        </label>
        <label>
          Session id
          <input name="sessionId" value={filter.sessionId} onChange={field("sessionId")} placeholder="any" />
        </label>
        <label>
          Created since
          <input name="since" type="datetime-local" value={filter.since} onChange={field("since")} />
        </label>
        <label>
          Input contains
          <input
            name="text"
            type="search"
            maxLength={MAX_TEXT}
            value={text}
            onInput={(e) => {
              setText(e.currentTarget.value);
            }}
          />
        </label>
      </form>
      <RunList key={JSON.stringify(filter)} store={store} text={filter.text} />
    </>
  );
}
