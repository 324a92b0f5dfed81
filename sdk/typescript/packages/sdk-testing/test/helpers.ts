// What the FakeGateway tests share: a fake per test (closed whatever
// happens), raw calls, whole values with their run-to-run differences
// normalised (generated ids numbered by first appearance, clock readings,
// durations, secrets), waiting on a condition, and collecting a stream.

import { FakeGateway, type FakeGatewayOptions } from "@talon/sdk-testing";
import { Talon, type TalonOptions } from "@talon/sdk";

/** Starts a fake, runs `test` with it, and closes it. */
export async function withFake(
  test: (fake: FakeGateway) => Promise<void>,
  options: FakeGatewayOptions = {},
): Promise<void> {
  const fake = await FakeGateway.start(options);
  try {
    await test(fake);
  } finally {
    await fake.close();
  }
}

/** A client of `fake`. */
export function talonOf(fake: FakeGateway, options: Partial<TalonOptions> = {}): Talon {
  return new Talon({ baseUrl: fake.url, token: fake.token, ...options });
}

/** A raw HTTP answer: status, the headers that matter, the body (JSON when it is). */
export interface Raw {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

const KEPT_HEADERS = [
  "content-type",
  "retry-after",
  "www-authenticate",
  "allow",
  "etag",
  "content-range",
  "accept-ranges",
  "cache-control",
];

/** Reads a response whole. */
export async function rawOf(response: Response): Promise<Raw> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text.
  }
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return { status: response.status, headers, body };
}

/** `POST /v1/<method>` with `body` (JSON unless a string), as `token`. */
export async function post(
  fake: FakeGateway,
  method: string,
  body?: unknown,
  token: string | null = fake.token,
): Promise<Raw> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${fake.url}/v1/${method}`, {
    method: "POST",
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return rawOf(response);
}

const ID = /(?<![A-Za-z0-9_])([a-z]+)_[0-9a-f]{24}(?![A-Za-z0-9_])/g;
const LONG_SECRET = /^(talon|tkt)_[0-9a-f]{64}$/;

/**
 * `value` with its run-to-run differences replaced: generated ids become
 * `<run_1>`, `<sess_2>` (numbered by first appearance, so equal ids stay
 * equal), clock readings (`ts`, `…At`) `<time>`, durations `<ms>`, secrets
 * and tickets `<secret>`.
 */
export function normalised(value: unknown, ids = new Map<string, string>()): unknown {
  const counts = new Map<string, number>();
  for (const placeholder of ids.values()) {
    const prefix = /^<([a-z]+)_/.exec(placeholder)?.[1] ?? "";
    counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
  }
  const text = (s: string) =>
    LONG_SECRET.test(s)
      ? "<secret>"
      : s.replace(ID, (id: string, prefix: string) => {
          const known = ids.get(id);
          if (known) return known;
          const n = (counts.get(prefix) ?? 0) + 1;
          counts.set(prefix, n);
          const placeholder = `<${prefix}_${n}>`;
          ids.set(id, placeholder);
          return placeholder;
        });
  const walk = (item: unknown, key?: string): unknown => {
    if (typeof item === "number" && key !== undefined && (key === "ts" || key.endsWith("At"))) return "<time>";
    if (typeof item === "number" && key === "durationMs") return "<ms>";
    if (typeof item === "string") return text(item);
    if (Array.isArray(item)) return item.map((x) => walk(x));
    if (item !== null && typeof item === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(item)) out[k] = walk(v, k);
      return out;
    }
    return item;
  };
  return walk(value);
}

/** Polls `check` until it gives a value, failing after `ms` and naming what it waited for. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 10_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every item of an async iterable. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** An event stream's raw text until it ends (or `signal` aborts). */
export async function sseText(response: Response): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>)
      text += decoder.decode(chunk, { stream: true });
  } catch {
    // Cut or aborted: what arrived.
  }
  return text;
}

/** The `data:` payloads of an SSE text, parsed. */
export function sseEvents(text: string): { id: string; type: string; [key: string]: unknown }[] {
  return text
    .split("\n\n")
    .map((frame) => frame.split("\n").find((line) => line.startsWith("data: ")))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice("data: ".length)) as { id: string; type: string });
}

/** The first `count` events of `GET <path>` (an SSE stream that may not end by itself), read raw. */
export async function firstEvents(
  fake: { url: string; token: string },
  path: string,
  count: number,
): Promise<{ id: string; type: string; [key: string]: unknown }[]> {
  const controller = new AbortController();
  const response = await fetch(`${fake.url}${path}`, {
    headers: { authorization: `Bearer ${fake.token}` },
    signal: controller.signal,
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (sseEvents(text).length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    controller.abort();
  }
  return sseEvents(text).slice(0, count);
}

/** A raw WebSocket to `fake`, authenticated by its first frame (as a browser's is) and answered `authenticated`. */
export async function authenticatedSocket(fake: { url: string; token: string }): Promise<WebSocket> {
  const ws = new WebSocket(`${fake.url.replace("http", "ws")}/v1/ws`);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  ws.send(JSON.stringify({ type: "auth", token: fake.token }));
  const answer = await new Promise((resolve) => {
    ws.addEventListener(
      "message",
      (m) => {
        resolve(String(m.data));
      },
      { once: true },
    );
  });
  if (answer !== '{"type":"authenticated"}') throw new Error(`the socket was not authenticated: ${String(answer)}`);
  return ws;
}
