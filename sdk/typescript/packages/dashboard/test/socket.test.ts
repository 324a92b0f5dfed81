// The dashboard's live streams over one WebSocket, in Debian's chromium
// against a real `talon gateway` with the mock model (the binary embeds the
// built dashboard: build it after `build-dashboard.mjs`). What the page does
// on the network is read from the DevTools protocol (every WebSocket made,
// its frames, every request): walking through the live views without a
// reload (runs, inbox, usage, sessions, tasks, a run) makes one WebSocket,
// authenticated by an empty token in its first frame (the cookie standing
// in), every view's stream a subscription on it, no Server-Sent Events
// request, and the views still follow the log live; after a gateway
// restart the page has one socket again and every stream resumed after its
// last event (the runs made meanwhile shown once, none missing); a hidden
// page closes its socket and opens none until it is shown again.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { CHROMIUM, CHROMIUM_ARGS as ARGS } from "./browser.js";
import puppeteer, { type Browser, type CDPSession, type Page } from "puppeteer-core";

import { Talon } from "@talon/sdk";
import { startGateway, type MockScript, type RunningGateway } from "@talon/sdk-testing";

const write = (path: string) =>
  `await tools.call('openclaw:core:write', {path: '${path}', content: 'from the socket test'}); return 'written';`;
const SCRIPT: MockScript = {
  replay: "perRun",
  turns: [{ text: "Hello from the mock." }],
  byInput: {
    "write one": [{ toolCalls: [{ name: "exec", arguments: { code: write("one.txt") } }] }, { text: "Wrote one." }],
    "write two": [{ toolCalls: [{ name: "exec", arguments: { code: write("two.txt") } }] }, { text: "Wrote two." }],
  },
};
const CONFIG = {
  tools: {
    codeMode: { enabled: true },
    approvals: { mode: "ask", rules: [{ tool: "write", action: "ask" }] },
  },
};

/** What the page did on the network, from the DevTools protocol. */
class Network {
  /** Every WebSocket made: its URL, whether its handshake succeeded, whether it closed. */
  readonly sockets = new Map<string, { url: string; open: boolean; closed: boolean }>();
  /** The most sockets open at once. */
  mostOpen = 0;
  /** The frames the page sent, parsed, with their socket. */
  readonly sent: { socket: string; frame: { type?: string; method?: string; params?: Record<string, unknown> } }[] = [];
  /** Requests that were event streams (EventSource, `accept: text/event-stream`, `GET …/events`). */
  readonly streams: string[] = [];

  static async watch(session: CDPSession): Promise<Network> {
    const seen = new Network();
    await session.send("Network.enable");
    session.on("Network.webSocketCreated", (e) => {
      seen.sockets.set(e.requestId, { url: e.url, open: false, closed: false });
    });
    session.on("Network.webSocketHandshakeResponseReceived", (e) => {
      const socket = seen.sockets.get(e.requestId);
      if (socket && e.response.status === 101) socket.open = true;
      seen.mostOpen = Math.max(seen.mostOpen, seen.openNow());
    });
    session.on("Network.webSocketClosed", (e) => {
      const socket = seen.sockets.get(e.requestId);
      if (socket) socket.closed = true;
    });
    session.on("Network.webSocketFrameSent", (e) => {
      seen.sent.push({ socket: e.requestId, frame: JSON.parse(e.response.payloadData) as Network["sent"][0]["frame"] });
    });
    session.on("Network.requestWillBeSent", (e) => {
      const accept = Object.entries(e.request.headers).find(([name]) => name.toLowerCase() === "accept")?.[1] ?? "";
      const path = new URL(e.request.url).pathname;
      if (
        e.type === "EventSource" ||
        accept.includes("text/event-stream") ||
        (e.request.method === "GET" && path.endsWith("/events"))
      ) {
        seen.streams.push(e.request.url);
      }
    });
    return seen;
  }

  openNow(): number {
    return [...this.sockets.values()].filter((s) => s.open && !s.closed).length;
  }

  /** The `events.subscribe` params the page sent, on every socket or one. */
  subscribes(socket?: string): Record<string, unknown>[] {
    return this.sent
      .filter((s) => s.frame.method === "events.subscribe" && (socket === undefined || s.socket === socket))
      .map((s) => s.frame.params ?? {});
  }
}

async function heading(page: Page, text: string): Promise<void> {
  await page.waitForFunction(
    (t: string) => document.querySelector("h1")?.textContent.startsWith(t) === true,
    { polling: 100, timeout: 30_000 },
    text,
  );
}

async function waitText(page: Page, text: string, selector = "main", timeout = 30_000): Promise<void> {
  await page.waitForFunction(
    (s: string, t: string) => document.querySelector<HTMLElement>(s)?.innerText.includes(t) === true,
    { polling: 100, timeout },
    selector,
    text,
  );
}

/** Goes to a view from the navigation: the page is not loaded again. */
async function go(page: Page, href: string, title: string): Promise<void> {
  await page.click(`header nav a[href="${href}"]`);
  await heading(page, title);
}

/** Waits for the navigation's inbox count to say `n`. */
async function pendingCount(page: Page, n: number): Promise<void> {
  await page.waitForFunction(
    (count: string) => document.querySelector("nav .count")?.textContent.trim() === count,
    { polling: 100, timeout: 30_000 },
    `(pending: ${n})`,
  );
}

/** Waits for the runs list to show run `id` with `status`. */
async function row(page: Page, id: string, status: string): Promise<void> {
  await page.waitForFunction(
    (runId: string, s: string) =>
      [...document.querySelectorAll("li.run-row")].some(
        (li) => li.querySelector(`a[href="/runs/${runId}"]`) !== null && li.textContent.includes(s),
      ),
    { polling: 100, timeout: 60_000 },
    id,
    status,
  );
}

describe("the dashboard's live streams over one WebSocket, against a real gateway", () => {
  let gateway: RunningGateway | undefined;
  let browser: Browser | undefined;
  let profile: string | undefined;
  let admin: Talon;
  let page: Page;
  let network: Network;
  const errors: string[] = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    gateway = await startGateway({ script: SCRIPT, config: CONFIG });
    admin = new Talon({ baseUrl: gateway.url, token: gateway.token });
    profile = mkdtempSync(join(tmpdir(), "talon-socket-profile-"));
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, userDataDir: profile });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`${m.text()} (${page.url()})`);
    });
    page.on("pageerror", (e) => errors.push(String(e)));
    network = await Network.watch(await page.createCDPSession());
  });

  after(async () => {
    await browser?.close();
    await gateway?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("walks the live views on one WebSocket, with no event stream request, following the log live", async () => {
    assert.ok(gateway?.loginLink);
    await page.goto(gateway.loginLink);
    await heading(page, "Runs");
    const first = await admin.agent().run("made while the runs list is open");
    await first.wait();
    await row(page, first.id, "completed");

    await go(page, "/inbox", "Inbox");
    const one = await admin.agent().run("write one");
    await page.waitForFunction(() => document.querySelectorAll("article[data-approval-id]").length === 1, {
      polling: 100,
      timeout: 30_000,
    });
    await pendingCount(page, 1);

    await go(page, "/usage", "Usage");
    await page.waitForSelector('[data-total="runs"] dd', { timeout: 30_000 });
    await go(page, "/sessions", "Sessions");
    await go(page, "/tasks", "Tasks");
    await go(page, "/", "Runs");
    await row(page, one.id, "waiting");
    // A run's own view, from its row (a link the app handles: no reload).
    await page.click(`li.run-row a[href="/runs/${one.id}"]`);
    await heading(page, "Run");
    await waitText(page, "waiting", "dd[aria-live]");
    const [pending] = await admin.approvals({ runId: one.id, status: "pending" });
    assert.ok(pending, "the write waits for its approval");
    await pending.approveOnce();
    await waitText(page, "completed", "dd[aria-live]", 60_000);
    await waitText(page, "Wrote one.");
    await pendingCount(page, 0);

    const sockets = [...network.sockets.entries()];
    assert.equal(sockets.length, 1, `one WebSocket: ${sockets.map(([, s]) => s.url).join(" ")}`);
    const [[id, socket] = ["", undefined]] = sockets;
    assert.ok(socket?.open && !socket.closed, "it is open");
    assert.equal(new URL(socket.url).pathname, "/v1/ws");
    assert.deepEqual(network.streams, [], "no event stream request");
    // Its first frame carries no token: the sign-in cookie stood in for it.
    assert.deepEqual(network.sent[0], { socket: id, frame: { type: "auth", token: "" } });
    // Every view's stream was a subscription on it: the runs list's, the inbox's two, the usage's,
    // the sessions', the tasks', the run's (its session's log).
    const subscribes = network.subscribes(id);
    assert.ok(subscribes.length >= 7, `${subscribes.length} subscriptions: ${JSON.stringify(subscribes)}`);
    assert.ok(
      subscribes.some((p) => p.sessionKey !== undefined),
      "the run view's stream follows the run's session",
    );
    assert.deepEqual(errors, []);
  });

  it("after a gateway restart, has one socket again and resumes every stream: none lost, none twice", async () => {
    assert.ok(gateway);
    await go(page, "/", "Runs");
    const before = network.sockets.size;
    const subscribed = network.subscribes().length;
    await gateway.restart();
    // Made before the page's streams are back: they come from the resumed streams' replay.
    const made = [await admin.agent().run("made after the restart"), await admin.agent().run("and another")];
    for (const run of made) await run.wait();
    const asking = await admin.agent().run("write two");
    for (const run of made) await row(page, run.id, "completed");
    await row(page, asking.id, "waiting");
    await pendingCount(page, 1);
    const [pending] = await admin.approvals({ runId: asking.id, status: "pending" });
    assert.ok(pending);
    await pending.deny({ reason: "not in this test" });
    await row(page, asking.id, "completed");
    await pendingCount(page, 0);

    const ids = await page.$$eval("li.run-row a", (links) => links.map((a) => a.getAttribute("href")));
    assert.equal(new Set(ids).size, ids.length, `no run shown twice: ${ids.join(", ")}`);
    const listed = (await admin.client.runs.list({ limit: 100 })).runs.map((r) => `/runs/${r.id}`);
    assert.deepEqual([...ids].sort(), [...listed].sort());
    assert.equal(network.openNow(), 1, "one socket open");
    assert.equal(network.mostOpen, 1, "never two at once");
    assert.ok(network.sockets.size > before, "the closed socket was replaced");
    // The streams came back where they were: each subscription after the restart starts at or
    // after where the same stream started before it (a stream that saw no event yet starts where
    // it did: the list's cursor at "now", or the log's start), never afresh at "now".
    const all = network.subscribes();
    const resumed = all.slice(subscribed);
    assert.ok(resumed.length >= 3, JSON.stringify(resumed));
    const filter = (p: Record<string, unknown>) => JSON.stringify({ ...p, after: undefined });
    for (const p of resumed) {
      const earlier = all.slice(0, subscribed).filter((q) => filter(q) === filter(p));
      const last = earlier.at(-1);
      assert.ok(last, `the stream of ${filter(p)} was there before the restart`);
      const before = last.after;
      if (typeof before === "string") {
        assert.ok(
          typeof p.after === "string" && BigInt(p.after) >= BigInt(before),
          `resumed after its last event: ${JSON.stringify(p)}, before ${JSON.stringify(last)}`,
        );
      }
    }
    const lifecycle = resumed.find((p) => Array.isArray(p.types) && p.types.includes("run.created"));
    assert.ok(typeof lifecycle?.after === "string", "the runs list resumed after the last run event it saw");
    assert.deepEqual(network.streams, []);
    // While the gateway was away the page's calls and sockets were refused: that is the restart, not the page.
    assert.deepEqual(
      errors.filter((e) => !/ERR_CONNECTION_REFUSED|WebSocket connection to .* failed/.test(e)),
      [],
    );
    errors.length = 0;
  });

  it("closes its socket while the page is hidden, opens none until it is shown, then catches up", async () => {
    await heading(page, "Runs");
    const before = network.sockets.size;
    await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent("pagehide", { persisted: true })));
    const deadline = Date.now() + 10_000;
    while (network.openNow() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(network.openNow(), 0, "the socket closed");
    const hiddenRun = await admin.agent().run("made while the page was hidden");
    await hiddenRun.wait();
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(network.sockets.size, before, "no socket while hidden");
    await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent("pageshow", { persisted: true })));
    await row(page, hiddenRun.id, "completed");
    assert.equal(network.sockets.size, before + 1, "one socket once shown");
    assert.equal(network.openNow(), 1);
    const ids = await page.$$eval("li.run-row a", (links) => links.map((a) => a.getAttribute("href")));
    assert.equal(new Set(ids).size, ids.length, "no run shown twice");
    assert.deepEqual(network.streams, []);
    assert.deepEqual(errors, []);
  });
});
