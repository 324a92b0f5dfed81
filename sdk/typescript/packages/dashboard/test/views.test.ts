// The dashboard's views in Debian's chromium against @talon/sdk-testing's
// FakeGateway (behind `serveDashboard`, a stand-in for the gateway's
// dashboard routes), so they are checked without a gateway build: each view
// renders with no console error or CSP violation and no serious or critical
// axe-core violation, and the runs list stays virtualised over many runs
// (only the rows in view are in the DOM; scrolling pages through
// `runs.list`). `walk.test.ts` does the real thing against `talon gateway`.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { CHROMIUM, CHROMIUM_ARGS as ARGS } from "./browser.js";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

import { Talon } from "@talon/sdk";
import { FakeGateway, FakeRun } from "@talon/sdk-testing";

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
});
