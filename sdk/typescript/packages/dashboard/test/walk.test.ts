// The dashboard in a real browser (Debian's chromium, driven by
// puppeteer-core) against a real `talon gateway` with the mock model: sign
// in from the gateway's one-time link (which then fails a second time); a
// run whose Code Mode cell makes a nested call, watched to its end, its
// timeline (read tail first) showing the nested call under its `exec` with
// the cell's output;
// approvals decided from the inbox and from `/approve/{id}` in a phone-sized
// window; a question answered; an artifact downloaded; the connection cut
// and the gateway restarted, the runs list recovering without duplicates;
// the runs' summaries and models, and the text filter done by the gateway;
// the usage view (reached from the navigation) showing the runs made here
// and following a run's end;
// an observer sign-in that sees runs but has no act buttons; signing out;
// axe-core on every view; no CSP violation or console error; the startup
// budget as loaded. With TALON_SCREENSHOTS=1 it saves a screenshot of each
// view in docs/dashboard/.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

import { CHROMIUM, CHROMIUM_ARGS as ARGS } from "./browser.js";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

import { Talon, type protocol as P } from "@talon/sdk";
import { startGateway, type MockScript, type RunningGateway } from "@talon/sdk-testing";

import { count, windowStart } from "../src/views/usage.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../../../../../..");
const SHOTS = process.env.TALON_SCREENSHOTS === "1" ? join(repo, "docs/dashboard") : undefined;
const BUDGET_GZIP_BYTES = 120 * 1024;
const BUDGET_REQUESTS = 4;

const CELL =
  "console.log('cell says hi'); const r = await tools.call('openclaw:core:read', {path: 'notes.txt'}); return r;";
const write = (path: string) =>
  `await tools.call('openclaw:core:write', {path: '${path}', content: 'from the walk'}); return 'written';`;
const SCRIPT: MockScript = {
  replay: "perRun",
  turns: [{ text: "Hello from the mock." }],
  byInput: {
    "nested please": [
      { toolCalls: [{ name: "exec", arguments: { code: CELL } }] },
      { text: "The cell read the notes." },
    ],
    "write one": [{ toolCalls: [{ name: "exec", arguments: { code: write("one.txt") } }] }, { text: "Wrote one." }],
    "write two": [{ toolCalls: [{ name: "exec", arguments: { code: write("two.txt") } }] }, { text: "Wrote two." }],
    "ask me": [
      { toolCalls: [{ name: "ask_user", arguments: { prompt: "Which branch?", choices: ["main", "dev"] } }] },
      { text: "Answered." },
    ],
  },
};
const CONFIG = {
  tools: {
    codeMode: { enabled: true },
    directOnly: ["ask_user"],
    approvals: {
      mode: "ask",
      rules: [
        { tool: "read", action: "allow" },
        { tool: "ask_user", action: "allow" },
        { tool: "write", action: "ask" },
      ],
    },
  },
};

/** What a page did wrong: console errors and CSP violations. */
interface Watch {
  errors: string[];
}

function watch(page: Page): Watch {
  const seen: Watch = { errors: [] };
  page.on("console", (message) => {
    if (message.type() === "error") seen.errors.push(`console: ${message.text()} (${page.url()})`);
  });
  page.on("pageerror", (error) => seen.errors.push(`page: ${String(error)} (${page.url()})`));
  void page.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  return seen;
}

async function heading(page: Page, text: string): Promise<void> {
  await page.waitForFunction(
    (t: string) => document.querySelector("h1")?.textContent.startsWith(t) === true,
    {
      polling: 100,
      timeout: 30_000,
    },
    text,
  );
}

async function textOf(page: Page, selector = "main"): Promise<string> {
  return page.$eval(selector, (el) => (el as HTMLElement).innerText);
}

async function waitText(page: Page, text: string, selector = "main", timeout = 30_000): Promise<void> {
  await page.waitForFunction(
    (s: string, t: string) => document.querySelector<HTMLElement>(s)?.innerText.includes(t) === true,
    { timeout },
    selector,
    text,
  );
}

/** Waits for the navigation's inbox count to say `n`. */
async function pendingCount(page: Page, n: number): Promise<void> {
  await page.waitForFunction(
    (count: string) => document.querySelector("nav .count")?.textContent.trim() === count,
    { polling: 100, timeout: 30_000 },
    `(pending: ${n})`,
  );
}

/** Clicks the button with `label` inside the element matching `scope` whose text includes `within`. */
async function clickIn(page: Page, scope: string, within: string, label: string): Promise<void> {
  const clicked = await page.evaluate(
    (s: string, w: string, l: string) => {
      for (const el of document.querySelectorAll(s)) {
        if (!(el as HTMLElement).innerText.includes(w)) continue;
        for (const b of el.querySelectorAll("button")) {
          if (b.textContent.trim() === l) {
            b.click();
            return true;
          }
        }
      }
      return false;
    },
    scope,
    within,
    label,
  );
  assert.ok(clicked, `a "${label}" button in ${scope} with "${within}"`);
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Opens `/usage` through the navigation: a client-side route, so it works
 * whether or not the gateway serves the page at that path itself.
 */
async function openUsage(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/`);
  await heading(page, "Runs");
  await page.click('header nav a[href="/usage"]');
  await heading(page, "Usage");
}

/** A fresh sign-in link from `talon dashboard`. */
function dashboardLink(gateway: RunningGateway, preset: string): string {
  const out = execFileSync(
    gateway.bin,
    ["dashboard", "--preset", preset, "--url", gateway.url, "--config", gateway.config],
    { env: { ...process.env, HOME: gateway.dir, TALON_STATE_DIR: join(gateway.dir, "state") }, encoding: "utf8" },
  );
  const link = out.trim().split("\n").at(-1) ?? "";
  assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/login#code=lgn_[0-9a-f]{64}/);
  return link;
}

describe("the dashboard in a browser, against a real gateway", () => {
  let gateway: RunningGateway | undefined;
  let browser: Browser | undefined;
  let profile: string | undefined;
  let downloads: string | undefined;
  let admin: Talon;
  let page: Page;
  let seen: Watch;
  let nestedRun = "";
  const views = new Set<string>();

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    gateway = await startGateway({ script: SCRIPT, config: CONFIG, files: { "notes.txt": "the notes say 42" } });
    admin = new Talon({ baseUrl: gateway.url, token: gateway.token });
    profile = mkdtempSync(join(tmpdir(), "talon-walk-profile-"));
    downloads = mkdtempSync(join(tmpdir(), "talon-walk-downloads-"));
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, userDataDir: profile });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    seen = watch(page);
  });

  after(async () => {
    await browser?.close();
    await gateway?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (downloads) rmSync(downloads, { recursive: true, force: true });
  });

  it("signs in from the gateway's link, once", async () => {
    assert.ok(gateway?.loginLink, "the gateway printed a sign-in link");
    await page.goto(gateway.loginLink);
    await heading(page, "Runs");
    assert.equal(await page.evaluate(() => location.pathname + location.hash), "/");
    // The page keeps no credential of its own: the cookie is HttpOnly.
    assert.deepEqual(
      await page.evaluate(() => ({
        cookie: document.cookie,
        local: Object.keys(localStorage),
        session: Object.keys(sessionStorage),
      })),
      { cookie: "", local: [], session: [] },
    );
    views.add("/");
    await shot(page, "runs-empty");

    // The same link again: refused, with what to do.
    assert.ok(browser);
    const again = await browser.newPage();
    await again.goto(gateway.loginLink);
    await waitText(again, "Signing in failed");
    assert.match(await textOf(again), /talon dashboard/);
    assert.equal(await again.evaluate(() => location.hash), "");
    await shot(again, "login-failed");
    await again.close();
  });

  it("watches a Code Mode run to its end, the nested call under its exec with the cell's output", async () => {
    await page.type("textarea[name=input]", "nested please");
    await page.click("form.new-run button[type=submit]");
    await page.waitForFunction(() => location.pathname.startsWith("/runs/"), { polling: 100, timeout: 30_000 });
    nestedRun = decodeURIComponent((await page.evaluate(() => location.pathname)).slice("/runs/".length));
    await heading(page, "Run");
    await waitText(page, "completed", "dd[aria-live]", 60_000);
    await waitText(page, "The cell read the notes.");
    // Its last page is the whole run: nothing earlier to load.
    await waitText(page, "events.");
    assert.match(await textOf(page), /All \d+ events\./);
    assert.equal(await page.$(".earlier button"), null);
    const tree = await page.evaluate(() =>
      [...document.querySelectorAll("ol.timeline > li.call")].map((li) => ({
        name: li.querySelector(".call-name")?.textContent,
        output: li.querySelector("pre.output")?.textContent,
        nested: [...li.querySelectorAll("ol.nested > li.call .call-name")].map((n) => n.textContent),
        status: li.className,
      })),
    );
    assert.deepEqual(tree, [
      { name: "exec", output: "cell says hi\n", nested: ["openclaw:core:read"], status: "call call-completed" },
    ]);
    views.add(`/runs/${nestedRun}`);
    await shot(page, "run");
  });

  it("decides one approval in the inbox and one on /approve/{id} in a phone-sized window", async () => {
    assert.ok(gateway && browser);
    const one = await admin.agent().run("write one");
    const two = await admin.agent().run("write two");
    await page.goto(`${gateway.url}/inbox`);
    await heading(page, "Inbox");
    await page.waitForFunction(() => document.querySelectorAll("article[data-approval-id]").length === 2, {
      polling: 100,
      timeout: 30_000,
    });
    await pendingCount(page, 2);
    await shot(page, "inbox");
    views.add("/inbox");
    await clickIn(page, "article[data-approval-id]", "one.txt", "Approve once");
    assert.equal((await one.wait()).status, "completed");
    await page.waitForFunction(() => document.querySelectorAll("article[data-approval-id]").length === 1, {
      polling: 100,
      timeout: 30_000,
    });
    await pendingCount(page, 1);

    const [pending] = await admin.approvals();
    assert.ok(pending, "the second write waits");
    assert.equal(pending.info.runId, two.id);
    const phone = await browser.newPage();
    const phoneSeen = watch(phone);
    await phone.setViewport({ width: 375, height: 667, isMobile: true, hasTouch: true });
    await phone.goto(`${gateway.url}/approve/${pending.info.id}`);
    await heading(phone, "Approval");
    await waitText(phone, "two.txt");
    assert.equal(await phone.$("nav"), null, "no navigation on the standalone page");
    assert.ok(
      await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
      "nothing wider than the phone",
    );
    await shot(phone, "approve");
    await clickIn(phone, "article[data-approval-id]", "two.txt", "Approve once");
    await waitText(phone, "Resolved: approved");
    assert.equal((await two.wait()).status, "completed");
    assert.deepEqual(phoneSeen.errors, []);
    views.add(`/approve/${pending.info.id}`);
    await phone.close();
  });

  it("answers a question with one of its choices", async () => {
    assert.ok(gateway);
    const asking = await admin.agent().run("ask me");
    await page.goto(`${gateway.url}/inbox`);
    await page.waitForSelector("article[data-question-id]", { timeout: 30_000 });
    await waitText(page, "Which branch?");
    await clickIn(page, "article[data-question-id]", "Which branch?", "dev");
    const result = await asking.wait();
    assert.equal(result.status, "completed");
    const answered = await admin.client.questions.list({ runId: asking.id });
    assert.deepEqual(
      answered.questions.map((q) => [q.status, q.answer]),
      [["answered", "dev"]],
    );
    await page.waitForFunction(() => document.querySelectorAll("article[data-question-id]").length === 0, {
      polling: 100,
    });
  });

  it("downloads an artifact of a run", async () => {
    assert.ok(gateway && downloads);
    const session = await page.createCDPSession();
    await session.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: downloads });
    await page.goto(`${gateway.url}/runs/${nestedRun}`);
    await page.waitForSelector("ul.artifacts a[download]", { timeout: 30_000 });
    const href = await page.$eval("ul.artifacts a[download]", (a) => a.getAttribute("href"));
    assert.match(href ?? "", /^\/v1\/artifacts\//);
    await page.click("ul.artifacts a[download]");
    const deadline = Date.now() + 20_000;
    let files: string[] = [];
    while (Date.now() < deadline) {
      files = readdirSync(downloads).filter((n) => !n.endsWith(".crdownload"));
      if (files.length > 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(files.length, 1, "one file downloaded");
    const [name] = files;
    assert.ok(name !== undefined && readFileSync(join(downloads, name)).length > 0, "the download has bytes");
    await session.detach();
  });

  it("recovers after the connection is cut and after a gateway restart, without duplicates", async () => {
    assert.ok(gateway);
    await page.goto(`${gateway.url}/`);
    await heading(page, "Runs");
    await page.waitForFunction(() => document.querySelectorAll("li.run-row").length >= 4, {
      polling: 100,
      timeout: 30_000,
    });
    const before = seen.errors.length;
    await page.setOfflineMode(true);
    const during = await admin.agent().run("made while the page was offline");
    await during.wait();
    await new Promise((r) => setTimeout(r, 1_000));
    await page.setOfflineMode(false);
    await page.waitForFunction(
      (id: string) => document.querySelector(`li.run-row a[href="/runs/${id}"]`) !== null,
      { polling: 100, timeout: 60_000 },
      during.id,
    );
    const after = await admin.agent().run("made after the cut");
    await after.wait();
    await page.waitForFunction(
      (id: string) =>
        [...document.querySelectorAll("li.run-row")].some(
          (li) => li.querySelector(`a[href="/runs/${id}"]`) !== null && li.textContent.includes("completed"),
        ),
      { polling: 100, timeout: 60_000 },
      after.id,
    );
    // The requests the browser refused while offline are the cut itself, not the page's errors.
    seen.errors.splice(
      before,
      seen.errors.length - before,
      ...seen.errors.slice(before).filter((e) => !e.includes("ERR_INTERNET_DISCONNECTED")),
    );
    // A gateway restart (same port, same state): the page's streams open again by themselves.
    await gateway.restart();
    const restarted = await admin.agent().run("made after the restart");
    await restarted.wait();
    await page.waitForFunction(
      (id: string) =>
        [...document.querySelectorAll("li.run-row")].some(
          (li) => li.querySelector(`a[href="/runs/${id}"]`) !== null && li.textContent.includes("completed"),
        ),
      { polling: 100, timeout: 90_000 },
      restarted.id,
    );
    seen.errors.splice(
      before,
      seen.errors.length - before,
      ...seen.errors.slice(before).filter((e) => !e.includes("ERR_CONNECTION_REFUSED")),
    );
    const ids = await page.$$eval("li.run-row a", (links) => links.map((a) => a.getAttribute("href")));
    assert.equal(new Set(ids).size, ids.length, `no run shown twice: ${ids.join(", ")}`);
    const listed = (await admin.client.runs.list({ limit: 100 })).runs.map((r) => `/runs/${r.id}`);
    assert.deepEqual([...ids].sort(), [...listed].sort());
    await shot(page, "runs");
  });

  it("shows each run's summary and model, and filters by text on the gateway", async () => {
    assert.ok(gateway);
    const bodies: string[] = [];
    const listed = (request: { url: () => string; postData: () => string | undefined }) => {
      if (request.url().endsWith("/v1/runs.list")) bodies.push(request.postData() ?? "");
    };
    page.on("request", listed);
    try {
      await page.goto(`${gateway.url}/`);
      await heading(page, "Runs");
      await page.waitForFunction(
        (id: string) => document.querySelector(`li.run-row a[href="/runs/${id}"]`)?.textContent === "nested please",
        { polling: 100, timeout: 30_000 },
        nestedRun,
      );
      await page.type("input[name=text]", "NESTED");
      await waitText(page, "1 runs match");
      const rows = await page.$$eval("li.run-row", (lis) =>
        lis.map((li) => ({
          href: li.querySelector("a")?.getAttribute("href"),
          summary: li.querySelector("a")?.textContent,
          model: li.querySelector(".model")?.textContent,
        })),
      );
      const run = await admin.client.runs.get(nestedRun);
      assert.ok(run.model, "the gateway keeps the run's model");
      assert.deepEqual(rows, [{ href: `/runs/${nestedRun}`, summary: "nested please", model: run.model }]);
      const texts = bodies.map((b) => (JSON.parse(b || "{}") as { text?: string }).text).filter((t) => t);
      assert.deepEqual(texts, ["NESTED"]);
    } finally {
      page.off("request", listed);
    }
  });

  it("shows the usage of the runs made here by day, agent and model, and follows a run's end", async () => {
    assert.ok(gateway);
    await openUsage(page, gateway.url);
    const shows = async (): Promise<P.UsageSummary> => {
      const summary = await admin.client.usage.summary({ createdAfter: windowStart(Date.now(), 30) });
      const wanted = [count(summary.runs), count(summary.usage.inputTokens), count(summary.usage.outputTokens)];
      await page
        .waitForFunction(
          (w: string[]) =>
            ["runs", "input", "output"]
              .map((k) => document.querySelector(`[data-total="${k}"] dd`)?.textContent)
              .join("|") === w.join("|"),
          { polling: 100, timeout: 30_000 },
          wanted,
        )
        .catch(async (error: unknown) => {
          throw new Error(`wanted ${wanted.join(", ")}: ${await textOf(page)}`, { cause: error });
        });
      return summary;
    };
    const first = await shows();
    const made = (await admin.client.runs.list({ limit: 100 })).runs;
    assert.equal(first.runs, made.length, "every run made here, all today");
    assert.ok((first.usage.inputTokens ?? 0) > 0 && (first.usage.outputTokens ?? 0) > 0, "the mock reports usage");
    const models = new Set(made.map((r) => r.model).filter((m) => m));
    const rows = await page.$$eval("table.usage-rows tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
    );
    assert.deepEqual(
      rows.map((r) => [r[1], r[2], r[3]]),
      first.rows.map((r) => [r.agentId, r.model ?? "not started", count(r.runs)]),
    );
    assert.ok(
      first.rows.every((r) => r.model === undefined || r.model === null || models.has(r.model)),
      "the rows' models are the runs'",
    );
    await page.evaluate(() => {
      (window as unknown as { stillHere: boolean }).stillHere = true;
    });
    const more = await admin.agent().run("counted while the usage is open");
    assert.equal((await more.wait()).status, "completed");
    const second = await shows();
    assert.equal(second.runs, first.runs + 1);
    assert.ok((second.usage.inputTokens ?? 0) > (first.usage.inputTokens ?? 0));
    assert.equal(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere), true);
    views.add("/usage");
    await shot(page, "usage");
    assert.deepEqual(seen.errors, []);
  });

  it("shows every other view, with no console error or CSP violation", async () => {
    assert.ok(gateway);
    const run = await admin.client.runs.get(nestedRun);
    const paths: [string, string, string][] = [
      ["/sessions", "Sessions", "sessions"],
      [`/sessions/${run.sessionId ?? ""}`, "Session", "session"],
      ["/tasks", "Tasks", "tasks"],
      ["/agents", "Agents and tools", "agents"],
      ["/environments", "Environments", "environments"],
      ["/health", "Health", "health"],
    ];
    for (const [path, title, name] of paths) {
      await page.goto(`${gateway.url}${path}`);
      await heading(page, title);
      await page.waitForFunction(() => !document.querySelector("main")?.textContent.includes("Loading…"), {
        polling: 100,
        timeout: 30_000,
      });
      views.add(path);
      await shot(page, name);
    }
    await waitText(page, "Queue depth");
    assert.deepEqual(seen.errors, []);
  });

  it("lets an observer see the runs but not act", async () => {
    assert.ok(gateway && browser);
    const link = dashboardLink(gateway, "observer");
    const context = await browser.createBrowserContext();
    const observer = await context.newPage();
    const observerSeen = watch(observer);
    await observer.goto(link);
    await heading(observer, "Runs");
    await observer.waitForFunction(() => document.querySelectorAll("li.run-row").length > 0, {
      polling: 100,
      timeout: 30_000,
    });
    assert.equal(await observer.$("form.new-run"), null, "no new-run form");
    await waitText(observer, "Signed in (read-only)", "header");
    await observer.goto(`${gateway.url}/runs/${nestedRun}`);
    await waitText(observer, "completed", "dd[aria-live]");
    const buttons = await observer.$$eval("main button", (bs) => bs.map((b) => b.textContent));
    assert.deepEqual(
      buttons.filter((b) => /Cancel|Start|Run again|Approve|Deny/.test(b)),
      [],
    );
    await shot(observer, "observer");
    assert.deepEqual(observerSeen.errors, []);
    await context.close();
  });

  it("finds no serious or critical accessibility violation on any view", async () => {
    assert.ok(gateway && browser);
    const axe = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    // A page of its own that bypasses the CSP, only to inject axe-core.
    const audit = await browser.newPage();
    await audit.setBypassCSP(true);
    const found: string[] = [];
    for (const path of views) {
      await audit.setViewport(
        path.startsWith("/approve/") ? { width: 375, height: 667 } : { width: 1280, height: 900 },
      );
      if (path === "/usage") await openUsage(audit, gateway.url);
      else await audit.goto(`${gateway.url}${path}`);
      await audit.waitForSelector("h1", { timeout: 30_000 });
      await audit.waitForFunction(() => !document.querySelector("main")?.textContent.includes("Loading…"), {
        polling: 100,
        timeout: 30_000,
      });
      await audit.addScriptTag({ content: axe });
      const violations = await audit.evaluate(async () => {
        const result = await (
          window as unknown as {
            axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> };
          }
        ).axe.run();
        return result.violations
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
      });
      for (const v of violations) found.push(`${path}: ${v}`);
    }
    await audit.close();
    assert.deepEqual(found, []);
  });

  it("works under a base path, its links and calls under the prefix", async () => {
    assert.ok(browser);
    const prefixed = await startGateway({
      script: SCRIPT,
      config: { ...CONFIG, gateway: { controlUi: { basePath: "/ops/talon" } } },
    });
    const context = await browser.createBrowserContext();
    try {
      const tab = await context.newPage();
      const watched = watch(tab);
      const login = prefixed.loginLink;
      if (login === undefined) throw new Error("the gateway printed no sign-in link");
      assert.ok(login.startsWith(`${prefixed.url}/ops/talon/login#code=lgn_`), login);
      await tab.goto(login);
      await heading(tab, "Runs");
      assert.equal(await tab.evaluate(() => location.pathname), "/ops/talon/");
      await tab.click('header nav a[href="/ops/talon/inbox"]');
      await heading(tab, "Inbox");
      assert.equal(await tab.evaluate(() => location.pathname), "/ops/talon/inbox");
      const hrefs = await tab.evaluate(() =>
        [...document.querySelectorAll("header nav a")].map((a) => a.getAttribute("href")),
      );
      assert.ok(
        hrefs.every((href) => href?.startsWith("/ops/talon/")),
        hrefs.join(" "),
      );
      await tab.reload();
      await heading(tab, "Inbox");
      assert.deepEqual(watched.errors, []);
    } finally {
      await context.close();
      await prefixed.stop();
    }
  });

  it("signs out, and the cookie no longer works", async () => {
    assert.ok(gateway);
    await page.goto(`${gateway.url}/`);
    await heading(page, "Runs");
    await clickIn(page, "header", "Sign out", "Sign out");
    await heading(page, "Signed out");
    await page.goto(`${gateway.url}/`);
    await heading(page, "Signed out");
    await shot(page, "signed-out");
  });

  it("loads within the startup budget", async () => {
    assert.ok(gateway && browser);
    // A fresh context is signed out: the page loads its startup files and no view.
    const context = await browser.createBrowserContext();
    const fresh = await context.newPage();
    const session = await fresh.createCDPSession();
    await session.send("Network.enable");
    const assets = new Map<string, string>();
    session.on("Network.responseReceived", (event) => {
      const url = new URL(event.response.url);
      if (/\.(js|css)$/.test(url.pathname)) assets.set(event.requestId, url.pathname);
    });
    await fresh.goto(`${gateway.url}/`);
    await heading(fresh, "Signed out");
    let gzipped = 0;
    for (const requestId of assets.keys()) {
      const body = await session.send("Network.getResponseBody", { requestId });
      const bytes = Buffer.from(body.body, body.base64Encoded ? "base64" : "utf8");
      gzipped += gzipSync(bytes, { level: 9 }).length;
    }
    console.log(`startup as loaded: ${assets.size} requests, ${gzipped} B gzipped: ${[...assets.values()].join(" ")}`);
    assert.ok(assets.size <= BUDGET_REQUESTS, `${assets.size} startup requests`);
    assert.ok(gzipped <= BUDGET_GZIP_BYTES, `${gzipped} B gzipped at startup`);
    await context.close();
  });
});
