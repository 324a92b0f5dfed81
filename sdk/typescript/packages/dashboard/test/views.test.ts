// The dashboard's views in Debian's chromium against @talon/sdk-testing's
// FakeGateway (behind `serveDashboard`, a stand-in for the gateway's
// dashboard routes), so they are checked without a gateway build: each view
// renders with no console error or CSP violation and no serious or critical
// axe-core violation; the runs list stays virtualised over many runs (only
// the rows in view are in the DOM; scrolling pages through `runs.list`),
// shows summaries and models, and filters text through the server and the
// log; the usage view matches `usage.summary` and follows runs as they end;
// a run of more than 500 events opens at its tail and loads the earlier
// pages from its button and by scrolling up, nesting a call once its parent
// is in. `walk.test.ts` does the real thing against `talon gateway`.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { CHROMIUM, CHROMIUM_ARGS as ARGS } from "./browser.js";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

import { Talon, type protocol as P } from "@talon/sdk";
import { FakeGateway, FakeRun } from "@talon/sdk-testing";

import { count, dayOf, usd, windowStart } from "../src/views/usage.js";
import { serveDashboard, type Served } from "./fakeserve.js";

const here = dirname(fileURLToPath(import.meta.url));
const ASSETS = join(here, "../../../../../../crates/talon-gateway/assets/dashboard");
const RUNS = 1_000;

describe("the dashboard's views against the fake gateway", () => {
  let fake: FakeGateway | undefined;
  let served: Served | undefined;
  let browser: Browser | undefined;
  let profile: string | undefined;
  let page: Page;
  const errors: string[] = [];
  let runId = "";

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    fake = await FakeGateway.start();
    fake.scriptRun(
      FakeRun.reply("Done.")
        .approval("openclaw:core:write", { path: "a.txt" })
        .question("Which branch?", ["main", "dev"])
        .artifact("change.diff", "diff", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"),
    );
    const talon = new Talon({ baseUrl: fake.url, token: fake.token });
    runId = (await talon.agent().run("the first run")).id;
    const batch: Promise<unknown>[] = [];
    for (let i = 1; i < RUNS; i++) {
      batch.push(talon.client.runs.create({ input: `run ${i}` }));
      if (batch.length === 50) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
    served = await serveDashboard(ASSETS, fake);
    profile = mkdtempSync(join(tmpdir(), "talon-views-profile-"));
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, userDataDir: profile });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`${m.text()} (${page.url()})`);
    });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.evaluateOnNewDocument(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await fake?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("keeps only the rows in view in the DOM, and pages as the list scrolls", async () => {
    assert.ok(served);
    await page.goto(served.link());
    await page.waitForFunction(() => document.querySelectorAll("li.run-row").length > 0, {
      polling: 100,
      timeout: 30_000,
    });
    const first = await page.$$eval("li.run-row", (rows) => rows.length);
    assert.ok(first < 60, `${first} rows in the DOM`);
    // Scroll to the end until every page is read.
    for (let i = 0; i < 20; i++) {
      await page.$eval(".scroller", (el) => {
        el.scrollTop = el.scrollHeight;
      });
      await new Promise((r) => setTimeout(r, 150));
      const done = await page.$eval("main", (m, n) => m.innerText.includes(`${n} runs`), RUNS);
      if (done) break;
    }
    await page.waitForFunction(
      (n: number) => document.querySelector("main")?.innerText.includes(`${n} runs`),
      {
        polling: 100,
        timeout: 30_000,
      },
      RUNS,
    );
    await page.$eval(".scroller", (el) => {
      el.scrollTop = el.scrollHeight;
    });
    await page.waitForFunction(
      (id: string) => document.querySelector(`li.run-row a[href="/runs/${id}"]`) !== null,
      { polling: 100, timeout: 10_000 },
      runId,
    );
    const last = await page.$$eval("li.run-row", (rows) => rows.length);
    assert.ok(last < 60, `${last} rows in the DOM after scrolling`);
    const hrefs = await page.$$eval("li.run-row a", (links) => links.map((a) => a.getAttribute("href")));
    assert.ok(hrefs.includes(`/runs/${runId}`), "the oldest run is at the end");
  });

  it("shows each run's summary and model, and filters by text on the server and in the log", async () => {
    assert.ok(served && fake);
    const talon = new Talon({ baseUrl: fake.url, token: fake.token });
    await page.goto(`${served.url}/`);
    const links = () => page.$$eval("li.run-row a", (as) => as.map((a) => a.textContent));
    await page.waitForFunction(
      () => [...document.querySelectorAll("li.run-row a")].some((a) => /^run \d+$/.test(a.textContent)),
      { polling: 100, timeout: 30_000 },
    );
    assert.ok(
      await page.$$eval("li.run-row .model", (ms) => ms.some((m) => m.textContent === "mock-model")),
      "a started run shows its model",
    );
    const before = fake.calls().length;
    await page.type("input[name=text]", "THE FIRST");
    await page.waitForFunction(() => document.querySelector("main")?.innerText.includes("1 runs match"), {
      polling: 100,
      timeout: 30_000,
    });
    assert.deepEqual(await links(), ["the first run"]);
    // One request, once the typing paused, with the text: the server filtered.
    const texts = fake
      .calls()
      .slice(before)
      .filter((c) => c.method === "runs.list")
      .map((c) => (c.params as { text?: string }).text)
      .filter((t) => t !== undefined);
    assert.deepEqual(texts, ["THE FIRST"]);
    // Runs the log brings are filtered the same way, by the summary of their input.
    const other = await talon.client.runs.create({ input: "not this one" });
    const again = await talon.client.runs.create({ input: "\n   The First run, again  \nand a second line" });
    await page.waitForFunction(() => document.querySelector("main")?.innerText.includes("2 runs match"), {
      polling: 100,
      timeout: 30_000,
    });
    assert.deepEqual(await links(), ["The First run, again", "the first run"]);
    assert.equal(await page.$(`li.run-row a[href="/runs/${other.id}"]`), null);
    // Cleared, the list is every run again, the newest first.
    await page.click("input[name=text]", { count: 3 });
    await page.keyboard.press("Backspace");
    await page.waitForFunction(
      (id: string) => document.querySelector(`li.run-row a[href="/runs/${id}"]`) !== null,
      { polling: 100, timeout: 30_000 },
      other.id,
    );
    assert.deepEqual((await links()).slice(0, 2), ["The First run, again", "not this one"]);
    assert.equal(await page.$eval("li.run-row a", (a) => a.getAttribute("href")), `/runs/${again.id}`);
    assert.ok(!(await page.$eval("main", (m) => m.innerText)).includes("match"));
  });

  it("shows the usage by day, agent and model, and follows runs as they end without a reload", async () => {
    assert.ok(served && fake);
    const talon = new Talon({ baseUrl: fake.url, token: fake.token });
    await page.goto(`${served.url}/`);
    await page.waitForSelector("li.run-row", { timeout: 30_000 });
    // Reached from the navigation, without loading the page again.
    await page.click('header nav a[href="/usage"]');
    await page.waitForFunction(() => document.querySelector("h1")?.textContent === "Usage", { polling: 100 });
    await page.evaluate(() => {
      (window as unknown as { stillHere: boolean }).stillHere = true;
    });
    const shows = async (): Promise<P.UsageSummary> => {
      const summary = await talon.client.usage.summary({ createdAfter: windowStart(Date.now(), 30) });
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
          throw new Error(`wanted ${wanted.join(", ")}: ${await page.$eval("main", (m) => m.innerText)}`, {
            cause: error,
          });
        });
      return summary;
    };
    const first = await shows();
    assert.ok(first.runs > RUNS, `${first.runs} runs`);
    assert.ok((first.usage.inputTokens ?? 0) > 0, "the fake's runs report tokens");
    const ended = await talon.agent().run("counted while the usage is open");
    await ended.wait();
    const second = await shows();
    assert.equal(second.runs, first.runs + 1);
    assert.ok((second.usage.inputTokens ?? 0) > (first.usage.inputTokens ?? 0));
    assert.equal(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere), true);
    const cells = await page.$$eval("table.usage-rows tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
    );
    assert.deepEqual(
      cells,
      second.rows.map((r) => [
        dayOf(r.day),
        r.agentId,
        r.model ?? "not started",
        count(r.runs),
        count(r.usage.inputTokens),
        count(r.usage.outputTokens),
        count(r.usage.cacheReadTokens),
        count(r.usage.cacheWriteTokens),
        usd(r.usage.costUsd),
      ]),
    );
    assert.equal(await page.$eval('[data-total="cost"] dd', (d) => d.textContent), usd(second.usage.costUsd));
    const days = await page.$$eval("table.days tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-day")));
    assert.deepEqual(days, [...new Set(second.rows.map((r) => dayOf(r.day)))]);
    // The window and the agent go to the server.
    const before = fake.calls().length;
    await page.select("select[name=days]", "7");
    await page.select("select[name=agentId]", "main");
    await shows();
    const asked = fake
      .calls()
      .slice(before)
      .filter((c) => c.method === "usage.summary")
      .map((c) => c.params as { createdAfter?: number; agentId?: string });
    assert.ok(
      asked.some((p) => p.agentId === "main" && p.createdAfter === windowStart(Date.now(), 7)),
      JSON.stringify(asked),
    );
  });

  it("opens a long run at its last events and loads the earlier ones at the top, nesting calls as parents arrive", async () => {
    assert.ok(served && fake);
    const talon = new Talon({ baseUrl: fake.url, token: fake.token });
    // A Code Mode cell; beside it a call whose output is 1,100 deltas; the cell's nested call at the end; then a
    // reply of 60 lines.
    let script = FakeRun.reply(Array.from({ length: 60 }, (_, i) => `The end, line ${i + 1}.`).join("\n"))
      .event({
        type: "tool.call.started",
        data: { callId: "cell_1", name: "exec", arguments: { code: "await tools.call('openclaw:core:read')" } },
      })
      .event({ type: "tool.call.started", data: { callId: "proc_1", name: "openclaw:core:process" } });
    for (let i = 0; i < 1_100; i++) {
      script = script.event({
        type: "tool.call.delta",
        data: { callId: "proc_1", update: { stream: "stdout", text: `line ${i}\n` } },
      });
    }
    script = script
      .event({
        type: "tool.call.completed",
        data: { callId: "proc_1", name: "openclaw:core:process", durationMs: 9, result: 0 },
      })
      .event({
        type: "tool.call.started",
        data: { callId: "cell_1.1", name: "openclaw:core:read", parentId: "cell_1", arguments: { path: "a.txt" } },
      })
      .event({
        type: "tool.call.completed",
        data: { callId: "cell_1.1", name: "openclaw:core:read", parentId: "cell_1", durationMs: 1, result: "42" },
      })
      .event({ type: "tool.call.completed", data: { callId: "cell_1", name: "exec", durationMs: 9, result: "done" } });
    fake.scriptRun(script);
    const long = await talon.agent().run("a long run");
    assert.equal((await long.wait()).status, "completed");
    const total = (await talon.client.runs.events(long.id, { limit: 500 })).events.length;
    assert.equal(total, 500, "more than a page");
    const before = fake.calls().length;
    await page.goto(`${served.url}/runs/${long.id}`);
    await page.waitForFunction(() => document.querySelector("main")?.innerText.includes("The last 500 events"), {
      polling: 100,
      timeout: 30_000,
    });
    await page.waitForFunction(() => document.querySelector("main")?.innerText.includes("The end, line 60."), {
      polling: 100,
    });
    const asked = fake
      .calls()
      .slice(before)
      .filter((c) => c.method === "runs.events")
      .map((c) => c.params as { last?: number; limit?: number; before?: string });
    // Its tail, and (a run with no page from its start) only its first event, for its input.
    assert.deepEqual(
      asked.filter((p) => p.last !== undefined),
      [{ runId: long.id, last: 500 }],
    );
    assert.ok(
      asked.every((p) => p.last !== undefined || p.limit === 1),
      JSON.stringify(asked),
    );
    const box = () =>
      page.$eval(".timeline-box", (el) => ({
        top: el.scrollTop,
        fromEnd: el.scrollHeight - el.scrollTop,
        atEnd: el.scrollHeight - el.scrollTop - el.clientHeight < 2,
        overflows: el.scrollHeight > el.clientHeight,
      }));
    const opened = await box();
    assert.ok(opened.overflows && opened.atEnd, `scrolled to the end: ${JSON.stringify(opened)}`);
    const shape = () =>
      page.evaluate(() => ({
        top: [...document.querySelectorAll("ol.timeline > li.call")].map((li) => li.getAttribute("data-call-id")),
        nested: [...document.querySelectorAll("ol.timeline > li.call ol.nested > li.call")].map((li) =>
          li.getAttribute("data-call-id"),
        ),
        names: [...document.querySelectorAll("ol.timeline > li.call > details > summary .call-name")].map(
          (n) => n.textContent,
        ),
        orphan: document.querySelector(".orphan")?.textContent ?? "",
      }));
    // The tail: the calls' starts are in an earlier page; the nested call stands alone, naming its cell.
    const tail = await shape();
    assert.deepEqual(tail.top, ["proc_1", "cell_1.1", "cell_1"]);
    assert.deepEqual(tail.nested, []);
    assert.deepEqual(tail.names, ["call proc_1", "openclaw:core:read", "call cell_1"]);
    assert.match(tail.orphan, /Made by call cell_1/);
    // The button, from the keyboard: the 500 before, what was in view kept in place.
    const pressed = await box();
    await page.focus(".earlier button");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("main")?.innerText.includes("The last 1000 events"), {
      polling: 100,
      timeout: 30_000,
    });
    const afterPress = await box();
    assert.ok(Math.abs(afterPress.fromEnd - pressed.fromEnd) <= 2, JSON.stringify([pressed, afterPress]));
    assert.deepEqual((await shape()).top, ["proc_1", "cell_1.1", "cell_1"], "the starts are earlier still");
    // Scrolled up to the top: the rest, and the nested call under its cell.
    await page.$eval(".timeline-box", (el) => {
      el.scrollTop = 0;
    });
    await page.waitForFunction(() => /All \d+ events\./.test(document.querySelector("main")?.innerText ?? ""), {
      polling: 100,
      timeout: 30_000,
    });
    const whole = await shape();
    assert.deepEqual(whole.top, ["cell_1", "proc_1"]);
    assert.deepEqual(whole.nested, ["cell_1.1"]);
    assert.deepEqual(whole.names, ["exec", "openclaw:core:process"]);
    assert.equal(whole.orphan, "");
    assert.ok((await box()).top > 0, "what was in view stays in view");
    const output = await page.$eval('li.call[data-call-id="proc_1"] pre.output', (p) => p.textContent);
    assert.ok(output.startsWith("line 0\nline 1\n") && output.endsWith("line 1099\n"), output.slice(0, 40));
    const pages = fake
      .calls()
      .slice(before)
      .filter((c) => c.method === "runs.events")
      .map((c) => c.params as { last?: number; before?: string });
    assert.equal(pages.filter((p) => p.before !== undefined && p.last === 500).length, 2);
    assert.match(await page.$eval("main", (m) => m.innerText), /All 1\d{3} events\./);
  });

  it("renders every view with no console error, CSP violation or serious accessibility violation", async () => {
    assert.ok(served && browser);
    const axe = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    const [approval] = await new Talon({ baseUrl: fake?.url ?? "", token: fake?.token ?? "" }).approvals();
    assert.ok(approval, "the first run waits for an approval");
    const paths: [string, string][] = [
      ["/", "Runs"],
      [`/runs/${runId}`, "Run"],
      ["/inbox", "Inbox"],
      [`/approve/${approval.info.id}`, "Approval"],
      ["/sessions", "Sessions"],
      ["/tasks", "Tasks"],
      ["/agents", "Agents and tools"],
      ["/environments", "Environments"],
      ["/health", "Health"],
      ["/usage", "Usage"],
    ];
    const audit = await browser.newPage();
    await audit.setBypassCSP(true);
    const found: string[] = [];
    for (const [path, title] of paths) {
      await page.goto(`${served.url}${path}`);
      await page
        .waitForFunction(
          (t: string) => document.querySelector("h1")?.textContent.startsWith(t),
          { polling: 100 },
          title,
        )
        .catch(async (error: unknown) => {
          throw new Error(`${path} shows no ${title}: ${await page.$eval("body", (m) => m.innerText)}`, {
            cause: error,
          });
        });
      await audit.goto(`${served.url}${path}`);
      await audit.waitForFunction(
        (t: string) => document.querySelector("h1")?.textContent.startsWith(t),
        { polling: 100 },
        title,
      );
      await audit
        .waitForFunction(() => !document.querySelector("main")?.textContent.includes("Loading…"), {
          polling: 100,
          timeout: 30_000,
        })
        .catch(async (error: unknown) => {
          throw new Error(`${path} still loads: ${await audit.$eval("main", (m) => m.innerText)}`, { cause: error });
        });
      await audit.addScriptTag({ content: axe });
      const violations = await audit.evaluate(async () => {
        const result = await (
          window as unknown as {
            axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: { html: string }[] }[] }> };
          }
        ).axe.run();
        return result.violations
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.html).join(" | ")}`);
      });
      for (const v of violations) found.push(`${path}: ${v}`);
    }
    await audit.close();
    assert.deepEqual(found, []);
    // The fake serves no /metrics: the Health view's 404 for it is the one expected error.
    assert.deepEqual(
      errors.filter((e) => !(e.includes("404") && e.endsWith("/health)"))),
      [],
    );
  });

  it("says so when the log no longer holds a view's cursor", async () => {
    assert.ok(served && fake);
    await page.goto(`${served.url}/sessions`);
    await page.waitForFunction(() => !document.querySelector("main")?.textContent.includes("Loading…"), {
      polling: 100,
      timeout: 30_000,
    });
    // The next stream opened with a cursor (the runs view's, which follows the log from "now") answers 410.
    fake.inject({ kind: "expireCursor" });
    await page.click('nav[aria-label="Main"] li:first-child a');
    await page.waitForFunction(
      () => [...document.querySelectorAll('main [role="alert"]')].some((e) => e.textContent.includes("has expired")),
      { polling: 100, timeout: 30_000 },
    );
    const alert = await page.$$eval('main [role="alert"]', (es) => es.map((e) => e.textContent).join(" "));
    assert.match(alert, /cursor \d+ has expired; the oldest event kept is \d+/);
  });
});
