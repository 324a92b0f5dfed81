// Whole values to assert on (the TypeScript twin of talon-testing's
// `redact`): generated ids (`<prefix>_<24 hex>`, wherever they stand in a
// string) become `<run_1>`, `<sess_1>.3`, numbered by first appearance so
// equal ids stay equal; clock readings (`ts`, `…At`) become `<time>`,
// measured durations `<ms>`, paging cursors `<cursor>`, bearer secrets
// `<secret>`. An event's own `id` (the log's cursor, numbered differently by
// each server) becomes `<event>`.

const ID = /(?<![A-Za-z0-9_])([a-z]+)_[0-9a-fA-F]{24}(?![A-Za-z0-9_])/g;
const DURATIONS = new Set(["durationMs", "elapsedMs", "latencyMs"]);
const CURSORS = new Set(["cursor", "nextCursor"]);
const SECRETS = new Set(["token", "secret"]);

export class Redactor {
  readonly #ids = new Map<string, string>();
  readonly #perPrefix = new Map<string, number>();

  /** `value` with its run-to-run differences replaced. */
  value(value: unknown): unknown {
    if (typeof value === "string") return this.#string(value);
    if (Array.isArray(value)) return value.map((item) => this.value(item));
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) out[key] = this.#byKey(key, item) ?? this.value(item);
      return out;
    }
    return value;
  }

  /** A run's events without deltas (how a reply is cut into deltas is not the run's behaviour), redacted. */
  transcript(events: readonly unknown[]): unknown[] {
    return events
      .filter((e) => !String((e as { type?: unknown }).type).endsWith(".delta"))
      .map((e) => this.value({ ...(e as object), id: "<event>" }));
  }

  #byKey(key: string, item: unknown): string | undefined {
    if (typeof item === "number" && (key === "ts" || key.endsWith("At"))) return "<time>";
    if (typeof item === "number" && DURATIONS.has(key)) return "<ms>";
    if (typeof item === "string" && CURSORS.has(key)) return "<cursor>";
    if (typeof item === "string" && SECRETS.has(key)) return "<secret>";
    return undefined;
  }

  #string(text: string): string {
    return text.replace(ID, (id: string, prefix: string) => {
      const known = this.#ids.get(id);
      if (known) return known;
      const n = (this.#perPrefix.get(prefix) ?? 0) + 1;
      this.#perPrefix.set(prefix, n);
      const placeholder = `<${prefix}_${n}>`;
      this.#ids.set(id, placeholder);
      return placeholder;
    });
  }
}

/** `value` redacted with a fresh numbering. */
export function redacted(value: unknown): unknown {
  return new Redactor().value(value);
}

/** `events` as a transcript with a fresh numbering. */
export function transcript(events: readonly unknown[]): unknown[] {
  return new Redactor().transcript(events);
}
