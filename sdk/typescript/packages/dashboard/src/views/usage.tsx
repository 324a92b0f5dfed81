// `/usage`: the tokens and cost of the runs (`usage.summary`) over the
// last 7, 30 or 90 days (today and the days before it, UTC), of every
// agent or one: the totals, each day's tokens as a bar beside its figures,
// and a table by day, agent and model. A run counts on the UTC day it was
// created, with its usage so far. The view follows the log: each run's end
// (`run.completed`, `run.failed`, `run.cancelled`, `run.timed_out`) asks
// for the summary again (the gateway stores a run's usage before its
// terminal event), a burst of ends making at most one request in flight
// and one after it (`coalesced`); no timer reads it.

import { useEffect, useMemo, useState } from "preact/hooks";
import type { Talon, TalonError } from "@talon/sdk";
import type { protocol as T } from "@talon/sdk";

import { asTalonError, ErrorLine, Live, nowCursor, useLive, useTalon } from "../kit.js";

/** The windows offered, in days; the first view shows `DEFAULT_DAYS`. */
export const WINDOWS = [7, 30, 90] as const;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

const ENDS: T.EventType[] = ["run.completed", "run.failed", "run.cancelled", "run.timed_out"];

/** The start of a window of `days` UTC days ending today: UTC midnight `days - 1` days before today's. */
export function windowStart(now: number, days: number): number {
  return now - (now % DAY_MS) - (days - 1) * DAY_MS;
}

/**
 * `work` on each call, one at a time: a call while it runs makes one more
 * run after it, however many calls there were (at most one in flight and
 * one pending). `work` handles its own failures.
 */
export function coalesced(work: () => Promise<unknown>): () => void {
  let running = false;
  let again = false;
  const go = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    again = false;
    void work()
      .catch(() => undefined)
      .finally(() => {
        running = false;
        if (again) go();
      });
  };
  return go;
}

const INTEGER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const DOLLARS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** A count as `12,345`, or `—` when unknown. */
export function count(n: number | null | undefined): string {
  return typeof n === "number" && Number.isFinite(n) ? INTEGER.format(n) : "—";
}

/** Dollars: cents from $1 up, four decimals below it, `< $0.0001` for less; `—` when unknown. */
export function usd(n: number | null | undefined): string {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  if (n === 0) return "$0.00";
  if (n < 0.0001) return "< $0.0001";
  if (n < 0.99995) return `$${n.toFixed(4)}`;
  return `$${DOLLARS.format(n)}`;
}

/** A UTC day as `2026-12-07`. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The tokens of a usage: its total, else input and output added (`undefined` when none is known). */
export function tokensOf(u: T.Usage): number | undefined {
  if (typeof u.totalTokens === "number") return u.totalTokens;
  if (typeof u.inputTokens !== "number" && typeof u.outputTokens !== "number") return undefined;
  return (u.inputTokens ?? 0) + (u.outputTokens ?? 0);
}

/** One day of the summary: its runs and tokens, every agent and model together. */
export interface Day {
  readonly day: number;
  readonly runs: number;
  readonly tokens: number | undefined;
}

/** The summary's rows by day (newest first, as the rows come). */
export function daysOf(rows: readonly T.UsageRow[]): Day[] {
  const days: Day[] = [];
  for (const row of rows) {
    const last = days.at(-1);
    const tokens = tokensOf(row.usage);
    if (last?.day === row.day) {
      days[days.length - 1] = {
        day: last.day,
        runs: last.runs + row.runs,
        tokens: tokens === undefined ? last.tokens : (last.tokens ?? 0) + tokens,
      };
    } else days.push({ day: row.day, runs: row.runs, tokens });
  }
  return days;
}

interface UsageState {
  readonly summary: T.UsageSummary | undefined;
  readonly loading: boolean;
  readonly error: TalonError | undefined;
}

class UsageStore extends Live<UsageState> {
  readonly #talon: Talon;
  readonly #days: number;
  readonly #agentId: string;
  #cursor: string | undefined;

  constructor(talon: Talon, days: number, agentId: string) {
    super({ summary: undefined, loading: true, error: undefined });
    this.#talon = talon;
    this.#days = days;
    this.#agentId = agentId;
  }

  async #read(signal: AbortSignal): Promise<void> {
    const params: T.UsageSummaryParams = { createdAfter: windowStart(Date.now(), this.#days) };
    if (this.#agentId) params.agentId = this.#agentId;
    const summary = await this.#talon.client.usage.summary(params, { signal });
    if (!signal.aborted) this.update({ summary, loading: false, error: undefined });
  }

  protected async run(signal: AbortSignal): Promise<void> {
    // The cursor comes before the summary: a run that ends after it is read again.
    this.#cursor ??= await nowCursor(this.#talon, signal);
    await this.#read(signal);
    this.connected();
    const again = coalesced(async () => {
      try {
        await this.#read(signal);
      } catch (error) {
        if (!signal.aborted) this.update({ error: asTalonError(error) });
      }
    });
    for await (const event of this.#talon.events({ after: this.#cursor, types: ENDS, signal })) {
      if (signal.aborted) return;
      this.#cursor = event.id;
      if (this.#agentId && event.agentId !== this.#agentId) continue;
      again();
    }
  }

  protected failed(error: TalonError): void {
    this.update({ error, loading: false });
  }
}

function Totals(props: { summary: T.UsageSummary }) {
  const s = props.summary;
  const u = s.usage;
  const figures: [string, string, string][] = [
    ["runs", "Runs", count(s.runs)],
    ["input", "Input tokens", count(u.inputTokens)],
    ["output", "Output tokens", count(u.outputTokens)],
    ["cacheRead", "Cache read tokens", count(u.cacheReadTokens)],
    ["cacheWrite", "Cache write tokens", count(u.cacheWriteTokens)],
    ["cost", "Cost (USD)", usd(u.costUsd)],
  ];
  return (
    <dl class="totals">
      {figures.map(([key, label, value]) => (
        <div key={key} class="total" data-total={key}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Days(props: { rows: readonly T.UsageRow[] }) {
  const days = daysOf(props.rows);
  const most = Math.max(0, ...days.map((d) => d.tokens ?? 0));
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-label="Tokens by day">
      <table class="days">
        <caption>Tokens by day (UTC)</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Runs</th>
            <th scope="col">Tokens</th>
            <th scope="col" class="bar-cell">
              <span class="visually-hidden">Tokens against the busiest day</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {days.map((d) => (
            <tr key={d.day} data-day={dayOf(d.day)}>
              <th scope="row">{dayOf(d.day)}</th>
              <td class="num">{count(d.runs)}</td>
              <td class="num">{count(d.tokens)}</td>
              <td class="bar-cell">
                <span
                  class="bar"
                  aria-hidden="true"
                  style={{ width: `${most > 0 ? ((d.tokens ?? 0) / most) * 100 : 0}%` }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Rows(props: { rows: readonly T.UsageRow[] }) {
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-label="Usage by day, agent and model">
      <table class="usage-rows">
        <caption>By day (UTC), agent and model</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Agent</th>
            <th scope="col">Model</th>
            <th scope="col">Runs</th>
            <th scope="col">Input</th>
            <th scope="col">Output</th>
            <th scope="col">Cache read</th>
            <th scope="col">Cache write</th>
            <th scope="col">Cost (USD)</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={`${r.day}:${r.agentId}:${r.model ?? ""}`}>
              <td>{dayOf(r.day)}</td>
              <td>{r.agentId}</td>
              <td>{r.model ?? <span class="muted">not started</span>}</td>
              <td class="num">{count(r.runs)}</td>
              <td class="num">{count(r.usage.inputTokens)}</td>
              <td class="num">{count(r.usage.outputTokens)}</td>
              <td class="num">{count(r.usage.cacheReadTokens)}</td>
              <td class="num">{count(r.usage.cacheWriteTokens)}</td>
              <td class="num">{usd(r.usage.costUsd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export default function Usage() {
  const talon = useTalon();
  const [days, setDays] = useState<number>(DEFAULT_DAYS);
  const [agentId, setAgentId] = useState("");
  const store = useMemo(() => new UsageStore(talon, days, agentId), [talon, days, agentId]);
  const { summary, loading, error } = useLive(store);
  // The agents offered: every one seen in an answer (an agent's own answer names only it).
  const [agents, setAgents] = useState<readonly string[]>([]);
  useEffect(() => {
    if (!summary) return;
    const seen = new Set([...agents, ...summary.rows.map((r) => r.agentId)]);
    if (seen.size > agents.length) setAgents([...seen].sort());
  }, [summary]);
  return (
    <>
      <h1>Usage</h1>
      <p class="muted">
        Tokens and cost of the runs created in the window, each counted on the UTC day it was created with its usage so
        far; kept current as runs end.
      </p>
      <form
        class="filters"
        aria-label="Choose the usage shown"
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <label>
          Window
          <select
            name="days"
            value={String(days)}
            onChange={(e) => {
              setDays(Number(e.currentTarget.value));
            }}
          >
            {WINDOWS.map((d) => (
              <option key={d} value={String(d)}>
                the last {d} days
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent
          <select
            name="agentId"
            value={agentId}
            onChange={(e) => {
              setAgentId(e.currentTarget.value);
            }}
          >
            <option value="">any</option>
            {agents.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorLine error={error}>Reading the usage failed: </ErrorLine>
      {summary ? (
        <>
          <p class="muted">From {dayOf(summary.createdAfter)} to now (UTC).</p>
          <Totals summary={summary} />
          {summary.rows.length === 0 ? (
            <p>No runs were created in this window.</p>
          ) : (
            <>
              <Days rows={summary.rows} />
              <Rows rows={summary.rows} />
            </>
          )}
        </>
      ) : (
        loading && <p class="muted">Loading…</p>
      )}
    </>
  );
}
