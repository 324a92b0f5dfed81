// Small pieces every view uses: times and durations for people, a status
// badge, JSON shown as text, an error line, and `useAsync` (one read when a
// view opens, again when its key changes or `reload` is called).

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";

/** A time as `2026-12-07 15:04:05` in the browser's zone. */
export function when(ms: number | null | undefined): string {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) return "–";
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** A duration as `850 ms`, `12.4 s` or `3 min 5 s`. */
export function duration(ms: number | null | undefined): string {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A value as indented JSON (strings as themselves). */
export function json(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return "(a value that is not JSON)";
  }
}

/** A status word in a coloured badge. */
export function Badge(props: { status: string | undefined }) {
  const status = props.status ?? "unknown";
  return <span class={`badge badge-${status.replace(/[^a-z_]/g, "")}`}>{status}</span>;
}

/** A failure, said once, for people. */
export function ErrorLine(props: { error: unknown; children?: ComponentChildren }) {
  if (!props.error) return null;
  const error: unknown = props.error;
  const message = error instanceof Error ? error.message : typeof error === "string" ? error : json(error);
  return (
    <p class="error" role="alert">
      {props.children}
      {message}
    </p>
  );
}

/** A read made when the view opens and again on `reload()` or when `key` changes. */
export function useAsync<T>(
  read: (signal: AbortSignal) => Promise<T>,
  key: string,
): { value: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ value: T | undefined; error: unknown; loading: boolean }>({
    value: undefined,
    error: undefined,
    loading: true,
  });
  const [round, setRound] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    read(abort.signal).then(
      (value) => {
        if (!abort.signal.aborted) setState({ value, error: undefined, loading: false });
      },
      (error: unknown) => {
        if (!abort.signal.aborted) setState({ value: undefined, error, loading: false });
      },
    );
    return () => {
      abort.abort();
    };
    // `read` is the caller's closure; `key` says when it reads something else.
  }, [key, round]);
  const reload = useCallback(() => {
    setRound((r) => r + 1);
  }, []);
  return { ...state, reload };
}

/** An ellipsis-free short id for tables (`run_01J…` keeps its prefix and tail). */
export function shortId(id: string): string {
  return id.length > 18 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id;
}
