// The dashboard's figures (issue 49), in Debian's headless chromium against
// a real `talon gateway` with the mock model (`$TALON_BIN`, else the
// workspace's debug build with `--features mock-model`). Run at
// sdk/typescript after `npm run build`:
//
//   node packages/dashboard/bench/dashboard.mjs [--part startup,tti,stream,scroll,idle]
//        [--tti-samples 15] [--runs 10000] [--dashboards 20] [--idle-secs 30]
//
// - startup: what the committed build loads before the first view
//   (manifest.json), and what a fresh, signed-out browser actually loaded.
// - tti: a cold load of `/` (cache off) until the runs list shows its
//   rows: `performance.now()` in the page then, from navigation start.
// - stream: one run whose model streams ~1,000 text deltas 8 ms apart
//   (about 100 events/s, with the gateway's own time), its page open from the start: how far the page is
//   behind when the run ends (the time from its `run.completed` event to
//   the page showing it completed with its whole text), and the main
//   thread's long tasks (over 50 ms) while it streamed.
// - scroll: `--runs` runs in the gateway, the runs list scrolled to its end
//   one step per animation frame (paging in as it goes): the frame
//   intervals requestAnimationFrame saw, p50/p95/p99, and the share of
//   frames within 1/60 s (+1 ms).
// - idle: `--dashboards` signed-in dashboards (each its own browser
//   context, so its own connections) open on `/`, then the gateway
//   process's CPU time (utime + stime, /proc) over `--idle-secs` with
//   nothing happening.
/* global document, window, requestAnimationFrame -- the functions passed to page.evaluate run in the page */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import puppeteer from "puppeteer-core";
import { Talon } from "@talon/sdk";
import { startGateway } from "@talon/sdk-testing";

const here = dirname(fileURLToPath(import.meta.url));
const ASSETS = join(here, "../../../../../crates/talon-gateway/assets/dashboard");
const CHROMIUM = process.env.TALON_CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
};
const parts = new Set(option("part", "startup,tti,stream,scroll,idle").split(","));
const TTI_SAMPLES = Number(option("tti-samples", "15"));
const RUNS = Number(option("runs", "10000"));
const DASHBOARDS = Number(option("dashboards", "20"));
const IDLE_SECS = Number(option("idle-secs", "30"));

const LONG = Array.from({ length: 1000 }, (_, i) => `word${String(i).padStart(3, "0")}`).join(" ");
const SCRIPT = {
  replay: "perRun",
  turns: [{ text: "Hello from the mock." }],
  byInput: { "stream please": [{ text: LONG, chunkDelayMs: 8 }] },
};

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const sortedOf = (xs) => [...xs].sort((a, b) => a - b);
const ms = (x) => `${x.toFixed(1)} ms`;

/** The gateway's pid, by the port it listens on. */
function pidOf(url) {
  const port = new URL(url).port;
  const out = execFileSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
  const pid = /pid=(\d+)/.exec(out)?.[1];
  if (!pid) throw new Error(`no process listens on ${port}`);
  return Number(pid);
}

/** The process's CPU time so far, in seconds. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** How many HTTP requests the gateway has answered (`/metrics`). */
async function requests() {
  const text = await (
    await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${gateway.token}` } })
  ).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("talon_http_requests_total")) total += Number(line.split(" ").at(-1));
  }
  return total;
}

/** A fresh sign-in link from `talon dashboard`. */
function link(gateway) {
  const out = execFileSync(gateway.bin, ["dashboard", "--url", gateway.url, "--config", gateway.config], {
    env: { ...process.env, HOME: gateway.dir, TALON_STATE_DIR: join(gateway.dir, "state") },
    encoding: "utf8",
  });
  return out.trim().split("\n").at(-1);
}

const heading = (page, text) =>
  page.waitForFunction(
    (t) => document.querySelector("h1")?.textContent.startsWith(t) === true,
    { polling: "mutation", timeout: 60_000 },
    text,
  );

/** A browser context signed in with `cookie` (or by a fresh link when none): the context and its cookie. */
async function signedIn(browser, gateway, cookie) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  if (cookie) await page.setCookie(cookie);
  else {
    await page.goto(link(gateway));
    await heading(page, "Runs");
    cookie = (await page.cookies()).find((c) => c.name === "talon_dashboard");
  }
  await page.close();
  return { context, cookie };
}

const gateway = await startGateway({
  script: SCRIPT,
  config: {
    gateway: { runs: { maxConcurrent: 64, maxQueued: 100000 }, limits: { callsPerSecond: 100000, burst: 100000 } },
  },
});
const admin = new Talon({ baseUrl: gateway.url, token: gateway.token });
const profile = mkdtempSync(join(tmpdir(), "talon-bench-profile-"));
const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, userDataDir: profile });
const report = {};
try {
  const { context, cookie } = await signedIn(browser, gateway);

  if (parts.has("startup")) {
    const manifest = JSON.parse(readFileSync(join(ASSETS, "manifest.json"), "utf8"));
    const fresh = await (await browser.createBrowserContext()).newPage();
    const loaded = [];
    fresh.on("response", (r) => {
      if (/\/assets\/.*\.(js|css)$/.test(new URL(r.url()).pathname)) loaded.push(new URL(r.url()).pathname);
    });
    await fresh.goto(`${gateway.url}/`);
    await heading(fresh, "Signed out");
    report.startup = {
      requests: manifest.startupRequests,
      gzipBytes: manifest.startupGzipBytes,
      loadedByABrowser: loaded,
    };
    console.log(
      `startup: ${manifest.startupRequests} requests, ${manifest.startupGzipBytes} B gzipped; loaded ${loaded.length}`,
    );
  }

  if (parts.has("tti")) {
    for (let i = 0; i < 20; i++) await admin.agent().run(`seed ${i}`);
    const samples = [];
    for (let i = 0; i < TTI_SAMPLES; i++) {
      const page = await context.newPage();
      await page.setCacheEnabled(false);
      await page.goto(`${gateway.url}/`, { waitUntil: "domcontentloaded" });
      await page.waitForFunction(() => document.querySelectorAll('.scroller a[href*="/runs/"]').length > 0, {
        polling: "mutation",
        timeout: 60_000,
      });
      samples.push(await page.evaluate(() => performance.now()));
      await page.close();
    }
    const s = sortedOf(samples);
    report.tti = { samples: s.length, p50: pct(s, 50), max: s.at(-1) };
    console.log(`tti (cold, cache off): p50 ${ms(pct(s, 50))}, max ${ms(s.at(-1))} over ${s.length}`);
  }

  if (parts.has("stream")) {
    const page = await context.newPage();
    await page.evaluateOnNewDocument(() => {
      window.__long = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__long.push(e.duration);
      }).observe({ type: "longtask", buffered: true });
    });
    const accepted = await admin.client.runs.create({ agentId: "main", input: "stream please" });
    await page.goto(`${gateway.url}/runs/${accepted.runId}`);
    await page.waitForFunction(
      (last) =>
        document.querySelector("dd[aria-live]")?.textContent.includes("completed") &&
        document.querySelector("main")?.textContent.includes(last),
      { polling: "mutation", timeout: 120_000 },
      "word999",
    );
    const shownAt = await page.evaluate(() => Date.now());
    const long = await page.evaluate(() => window.__long);
    const events = [];
    for (let after; ;) {
      const page = await admin.client.runs.events(accepted.runId, { after, limit: 1000 });
      events.push(...page.events);
      if (page.done || page.events.length === 0) break;
      after = page.events.at(-1).id;
    }
    const deltas = events.filter((e) => e.type === "assistant.delta");
    const ended = events.find((e) => e.type === "run.completed");
    const span = (deltas.at(-1).ts - deltas[0].ts) / 1000;
    const rate = deltas.length / Math.max(0.001, span);
    const longest = Math.max(0, ...long);
    report.stream = {
      deltas: deltas.length,
      eventsPerSecond: rate,
      behindAtEndMs: shownAt - ended.ts,
      longTasks: long.length,
      longestTaskMs: longest,
    };
    console.log(
      `stream: ${deltas.length} deltas at ${rate.toFixed(0)}/s; the page showed the end ${shownAt - ended.ts} ms after run.completed; ${long.length} long tasks (longest ${longest.toFixed(0)} ms)`,
    );
    await page.close();
  }

  if (parts.has("scroll")) {
    const started = Date.now();
    const todo = RUNS;
    for (let i = 0; i < todo; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, todo - i) }, (_, j) =>
          admin.client.runs.create({ agentId: "main", input: `r${i + j}` }),
        ),
      );
    }
    console.log(`scroll: ${todo} runs created in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(`${gateway.url}/`);
    await page.waitForFunction(() => document.querySelectorAll('.scroller a[href*="/runs/"]').length > 0, {
      timeout: 60_000,
    });
    const frames = await page.evaluate(
      (total) =>
        new Promise((resolve) => {
          const box = document.querySelector(".scroller");
          const intervals = [];
          let last = 0;
          let steps = 0;
          const step = (t) => {
            if (last) intervals.push(t - last);
            last = t;
            box.scrollTop += 400;
            const rows = document.querySelectorAll('.scroller a[href*="/runs/"]').length;
            const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 2;
            const counted = document.querySelector("p.muted[aria-live]")?.textContent ?? "";
            const all = /^\d+ runs$/.test(counted) && Number.parseInt(counted, 10) >= total;
            steps++;
            if ((atEnd && all) || steps > 20_000) resolve({ intervals, rows, counted });
            else requestAnimationFrame(step);
          };
          requestAnimationFrame(step);
        }),
      RUNS,
    );
    const s = sortedOf(frames.intervals);
    const smooth = frames.intervals.filter((x) => x <= 1000 / 60 + 1).length / frames.intervals.length;
    report.scroll = {
      frames: s.length,
      p50: pct(s, 50),
      p95: pct(s, 95),
      p99: pct(s, 99),
      within60fps: smooth,
      rowsInDom: frames.rows,
    };
    console.log(
      `scroll: ${s.length} frames, p50 ${ms(pct(s, 50))}, p95 ${ms(pct(s, 95))}, p99 ${ms(pct(s, 99))}, ${(smooth * 100).toFixed(1)} % within 1/60 s; ${frames.rows} rows in the DOM`,
    );
    await page.close();
  }

  if (parts.has("idle")) {
    const pid = pidOf(gateway.url);
    // Nothing running: the runs made above have ended.
    for (;;) {
      const busy = await admin.client.runs.list({ status: ["queued", "running"], limit: 1 });
      if (busy.runs.length === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const idleCpu = async () => {
      const before = cpuSeconds(pid);
      await new Promise((r) => setTimeout(r, IDLE_SECS * 1000));
      return cpuSeconds(pid) - before;
    };
    await new Promise((r) => setTimeout(r, 5_000));
    const alone = await idleCpu();
    const contexts = [];
    for (let i = 0; i < DASHBOARDS; i++) {
      const { context: c } = await signedIn(browser, gateway, cookie);
      const page = await c.newPage();
      await page.goto(`${gateway.url}/`);
      await heading(page, "Runs");
      contexts.push(c);
    }
    await new Promise((r) => setTimeout(r, 5_000));
    const requestsBefore = await requests();
    const used = await idleCpu();
    const during = (await requests()) - requestsBefore - 1;
    report.idle = {
      dashboards: DASHBOARDS,
      seconds: IDLE_SECS,
      cpuSecondsAlone: alone,
      cpuSeconds: used,
      requests: during,
    };
    const share = (x) => `${((100 * x) / IDLE_SECS).toFixed(2)} % of a core`;
    console.log(
      `idle: the gateway used ${alone.toFixed(2)} s of CPU in ${IDLE_SECS} s with no dashboard (${share(alone)}), ${used.toFixed(2)} s with ${DASHBOARDS} open (${share(used)}); ${during} HTTP requests reached it meanwhile`,
    );
    for (const c of contexts) await c.close();
  }
} finally {
  await browser.close();
  await gateway.stop();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(report));
