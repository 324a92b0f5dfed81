// What the hook tests share: a fresh FakeGateway and a client per test,
// a `fetch` that counts the event streams the hooks open (and can hold
// one back), the provider as a wrapper, and reading a run's whole log.
import "./dom.js";

import assert from "node:assert/strict";
import type { ReactNode } from "react";
import { cleanup, configure } from "@testing-library/react";
import { Talon, type TalonEvent } from "@talon/sdk";
import { FakeGateway } from "@talon/sdk-testing";
import { TalonProvider, type CursorStore } from "@talon/sdk-react";

configure({ asyncUtilTimeout: 10_000 });

/** The event streams a client opened: how many, how many are open now, and a gate for the next. */
export interface Streams {
  readonly fetch: typeof globalThis.fetch;
  /** Streams opened so far. */
  opened(): number;
  /** Streams open now. */
  open(): number;
  /** Holds the next stream's request until `release` resolves. */
  holdNext(release: Promise<void>): void;
}

/** A `fetch` that counts `GET …/events` (SSE) requests and their aborts (every stream aborts its request when it ends). */
export function countStreams(): Streams {
  const real = globalThis.fetch.bind(globalThis);
  let opened = 0;
  let open = 0;
  let hold: Promise<void> | undefined;
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.pathname.endsWith("/events") && (init?.method ?? "GET") === "GET") {
      opened += 1;
      open += 1;
      init?.signal?.addEventListener("abort", () => (open -= 1), { once: true });
      const gate = hold;
      hold = undefined;
      if (gate) await gate;
    }
    return real(input, init);
  }) as typeof globalThis.fetch;
  return {
    fetch,
    opened: () => opened,
    open: () => open,
    holdNext: (release) => void (hold = release),
  };
}

/** One test's gateway and client. */
export interface Env {
  fake: FakeGateway;
  talon: Talon;
  streams: Streams;
}

/** A fresh FakeGateway and a client of it that counts its streams. */
export async function env(): Promise<Env> {
  const fake = await FakeGateway.start();
  const streams = countStreams();
  const talon = new Talon({ baseUrl: fake.url, token: fake.token, fetch: streams.fetch });
  return { fake, talon, streams };
}

/** `value`, failing the test when it is missing (the `Env` before `beforeEach` made it, an item not there). */
export function present<T>(value: T | null | undefined): T {
  assert.ok(value !== undefined && value !== null, "expected a value, got none");
  return value;
}

/** Unmounts what a test rendered and stops its gateway. */
export async function teardown(e: Env | undefined): Promise<void> {
  cleanup();
  await e?.fake.close();
}

/** The provider as a `renderHook` wrapper (each call a new provider: new stores). */
export function provider(talon: Talon, cursorStore?: CursorStore) {
  return function Wrapper({ children }: { children: ReactNode }) {
    return cursorStore ? (
      <TalonProvider talon={talon} cursorStore={cursorStore}>
        {children}
      </TalonProvider>
    ) : (
      <TalonProvider talon={talon}>{children}</TalonProvider>
    );
  };
}

/** A run's log as the gateway has it now (`runs.events` pages: no stream). */
export async function logOf(talon: Talon, runId: string): Promise<TalonEvent[]> {
  const out: TalonEvent[] = [];
  for (;;) {
    const after = out.at(-1)?.id;
    const page = await talon.client.runs.events(runId, after === undefined ? {} : { after });
    out.push(...(page.events as TalonEvent[]));
    if (page.done || page.events.length === 0) return out;
  }
}

/** Events as `[type, id]`, to compare whole lists. */
export function ids(events: readonly TalonEvent[]): string[] {
  return events.map((e) => e.id);
}

/** Event types without deltas (how the reply is cut into deltas is not what these tests check). */
export function kinds(events: readonly TalonEvent[]): string[] {
  return events.map((e) => e.type).filter((t) => !t.endsWith(".delta"));
}

/** Polls `check` (a gateway-side condition) until it holds. */
export async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A cursor store that records what it is told. */
export function recordingCursors(inner: CursorStore): CursorStore & { sets: [string, string][] } {
  const sets: [string, string][] = [];
  return {
    sets,
    get: (key) => inner.get(key),
    set: (key, cursor) => {
      sets.push([key, cursor]);
      inner.set(key, cursor);
    },
    delete: (key) => inner.delete?.(key),
  };
}
