// The dashboard's figures (issue 49), in Debian's headless chromium against
// a real `talon gateway` with the mock model (`$TALON_BIN`, else the
// workspace's debug build with `--features mock-model`). Run at
// sdk/typescript after `npm run build`:
//
//   node packages/dashboard/bench/dashboard.mjs [--part startup,tti,stream,scroll,long,idle]
//        [--tti-samples 15] [--runs 10000] [--events 20000] [--long-samples 5]
//        [--dashboards 20] [--idle-secs 30]
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
// - scroll: `--runs` completed runs of agent `main` (in one session made
//   with `sessions.create`) written straight into the gateway's SQLite
//   store with the `sqlite3` CLI, in one transaction while the gateway runs
//   (executing that many runs in a debug gateway takes too long), then
//   counted back with `runs.list`; the runs list scrolled to its end one
//   step per animation frame (paging in as it goes): the frame intervals
//   requestAnimationFrame saw, p50/p95/p99, the share of frames within
//   1/60 s (+1 ms), and the rows in the DOM (at the end, and the most at
//   any frame).
// - long: one real run whose model streams `--events` text deltas with no
//   pause between them (each an `assistant.delta` event), made and waited
//   for; then `--long-samples` times, a fresh page with the cache off
//   opens `/runs/{id}` (the run view reads the last 500 events first): the
//   time from navigation start until the status shows `completed` and the
//   timeline's last text holds the run's last word (in the DOM, and after
//   the next frame painted), the JS heap used and the DOM's nodes then;
//   p50 and max. Also how long the run took to make.
// - idle: `--dashboards` signed-in dashboards (each its own browser
//   context, so its own connections) open on `/`, then the gateway
//   process's CPU time (utime + stime, /proc) over `--idle-secs` with
//   nothing happening.
/* global document, window, requestAnimationFrame, MutationObserver -- the functions passed to page.evaluate run in the page */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
const parts = new Set(option("part", "startup,tti,stream,scroll,long,idle").split(","));
const TTI_SAMPLES = Number(option("tti-samples", "15"));
const RUNS = Number(option("runs", "10000"));
const EVENTS = Number(option("events", "20000"));
const LONG_SAMPLES = Number(option("long-samples", "5"));
const DASHBOARDS = Number(option("dashboards", "20"));
const IDLE_SECS = Number(option("idle-secs", "30"));

const LONG = Array.from({ length: 1000 }, (_, i) => `word${String(i).padStart(3, "0")}`).join(" ");
// The mock model streams a reply in pieces of 8 characters, one
// `assistant.delta` each: `--events` words of 8 characters with their space.
const HUGE = Array.from({ length: EVENTS }, (_, i) => `x${String(i).padStart(6, "0")}`).join(" ");
const HUGE_LAST = `x${String(EVENTS - 1).padStart(6, "0")}`;
const SCRIPT = {
  replay: "perRun",
  turns: [{ text: "Hello from the mock." }],
  byInput: {
    "stream please": [{ text: LONG, chunkDelayMs: 8 }],
    // No pause between the pieces: the whole reply at once.
    ...(parts.has("long") ? { "long please": [{ text: HUGE }] } : {}),
  },
};

/** The model the seeded runs name (the mock's, as a real run's `model` reads). */
const SEED_MODEL = "mock-model";

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

/** How many runs `runs.list` lists, page by page. */
async function countRuns(admin) {
  let count = 0;
  for (let cursor; ;) {
    const page = await admin.client.runs.list({ limit: 500, ...(cursor ? { cursor } : {}) });
    count += page.runs.length;
    if (!page.nextCursor) return count;
    cursor = page.nextCursor;
  }
}

/**
 * `RUNS` completed runs of agent `main` in `session`, written straight into
 * the gateway's SQLite store (`<dir>/state/talon.db`) by the `sqlite3` CLI
 * in one transaction, while the gateway runs (WAL: its next `runs.list`
 * reads them). One a second, the newest now; the columns `run_of` reads
 * back (crates/talon-store/src/runs.rs), as `create_run` and a run's end
 * write them. Which run is newest, and its summary.
 */
function seedRuns(gateway, session) {
  const started = Date.now();
  const q = (text) => `'${String(text).replaceAll("'", "''")}'`;
  const unique = started.toString(36);
  const first = started - RUNS * 1000;
  const rows = [];
  let last;
  let lastSummary;
  for (let i = 0; i < RUNS; i++) {
    const id = `run_seed${unique}_${String(i).padStart(6, "0")}`;
    const created = first + i * 1000;
    const summary = `Seeded run ${i}: Summarise the Quarterly report for Team ${i % 97}`;
    const usage = JSON.stringify({
      inputTokens: 10 + (i % 50),
      outputTokens: 2 + (i % 7),
      totalTokens: 12 + (i % 50) + (i % 7),
    });
    rows.push(
      `(${[q(id), q("main"), q(session.id), q(session.key), q("completed"), created, created + 5, created + 5 + 200 + (i % 800), q(usage), q(summary), q(summary.replace(/[A-Z]/g, (c) => c.toLowerCase())), q(SEED_MODEL)].join(", ")})`,
    );
    last = id;
    lastSummary = summary;
  }
  const columns =
    "id, agent_id, session_id, session_key, status, created_at, started_at, ended_at, usage, summary, summary_folded, model";
  const sql = ["PRAGMA busy_timeout=10000;", "BEGIN IMMEDIATE;"];
  for (let i = 0; i < rows.length; i += 500) {
    sql.push(`INSERT INTO runs (${columns}) VALUES\n${rows.slice(i, i + 500).join(",\n")};`);
  }
  sql.push("COMMIT;", "");
  const file = join(gateway.dir, "seed-runs.sql");
  writeFileSync(file, sql.join("\n"));
  execFileSync("sqlite3", ["-bail", join(gateway.dir, "state", "talon.db")], {
    input: readFileSync(file),
    stdio: ["pipe", "ignore", "inherit"],
  });
  return { ms: Date.now() - started, last, lastSummary };
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
    const before = await countRuns(admin);
    const seeded = seedRuns(gateway, await admin.client.sessions.create({ agentId: "main", key: "bench-scroll" }));
    console.log(`scroll: ${RUNS} runs written to the store in ${seeded.ms} ms (one transaction)`);
    // Read back through the gateway: every row, and one whole.
    const listed = await countRuns(admin);
    const one = await admin.client.runs.get(seeded.last);
    if (listed !== before + RUNS || one.status !== "completed" || one.summary !== seeded.lastSummary) {
      throw new Error(
        `runs.list counts ${listed} runs (${before} + ${RUNS} written); runs.get: ${JSON.stringify(one)}`,
      );
    }
    console.log(`scroll: runs.list counts ${listed} runs (${before} made before)`);
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
          let most = 0;
          const step = (t) => {
            if (last) intervals.push(t - last);
            last = t;
            box.scrollTop += 400;
            const rows = document.querySelectorAll('.scroller a[href*="/runs/"]').length;
            most = Math.max(most, rows);
            const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 2;
            const counted = document.querySelector("p.muted[aria-live]")?.textContent ?? "";
            const all = /^\d+ runs$/.test(counted) && Number.parseInt(counted, 10) >= total;
            steps++;
            if ((atEnd && all) || steps > 20_000) resolve({ intervals, rows, most, counted });
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
      runs: listed,
      rowsInDom: frames.rows,
      mostRowsInDom: frames.most,
      counted: frames.counted,
    };
    console.log(
      `scroll: ${s.length} frames, p50 ${ms(pct(s, 50))}, p95 ${ms(pct(s, 95))}, p99 ${ms(pct(s, 99))}, ${(smooth * 100).toFixed(1)} % within 1/60 s; ${frames.rows} rows in the DOM at the end (at most ${frames.most}), the list said "${frames.counted}"`,
    );
    await page.close();
  }

  if (parts.has("long")) {
    const made = Date.now();
    const accepted = await admin.client.runs.create({ agentId: "main", input: "long please" });
    let result;
    do result = await admin.client.runs.wait(accepted.runId, { timeoutMs: 60_000 });
    while (result.status === "accepted");
    const makeMs = Date.now() - made;
    const info = await admin.client.runs.get(accepted.runId);
    let events = 0;
    let deltas = 0;
    for (let after; ;) {
      const page = await admin.client.runs.events(accepted.runId, { after, limit: 500 });
      events += page.events.length;
      deltas += page.events.filter((e) => e.type === "assistant.delta").length;
      if (page.done || page.events.length === 0) break;
      after = page.events.at(-1).id;
    }
    console.log(
      `long: run ${accepted.runId} (model ${info.model}) ${result.status}: ${events} events (${deltas} assistant.delta), made in ${(makeMs / 1000).toFixed(1)} s (created to ended ${((info.endedAt - info.createdAt) / 1000).toFixed(1)} s)`,
    );
    if (result.status !== "completed") throw new Error(`the long run ended ${result.status}`);
    const samples = [];
    for (let i = 0; i < LONG_SAMPLES; i++) {
      const page = await context.newPage();
      await page.setViewport({ width: 1280, height: 900 });
      await page.setCacheEnabled(false);
      // Watches the DOM from the start: when the status says completed and
      // the timeline's last text ends with the run's last word, the time
      // (from navigation start) and the elements then, and the time after
      // the next frame was painted; and when the note above the timeline
      // no longer says it is reading the events ("The last 500 events…").
      await page.evaluateOnNewDocument((lastWord) => {
        const done = () => {
          const texts = document.querySelectorAll(".timeline li.text p.assistant");
          return (
            document.querySelector("dd[aria-live]")?.textContent.includes("completed") === true &&
            texts.length > 0 &&
            texts[texts.length - 1].textContent.trimEnd().endsWith(lastWord)
          );
        };
        const note = () =>
          [...document.querySelectorAll("p[aria-live]")].map((p) => p.textContent).find((t) => /events/.test(t)) ?? "";
        const observer = new MutationObserver(() => {
          if (!window.__shown && done()) {
            const box = document.querySelector(".timeline-box");
            window.__shown = {
              at: performance.now(),
              elements: document.getElementsByTagName("*").length,
              timelineItems: document.querySelectorAll(".timeline > li").length,
              note: note(),
              atEnd: box ? box.scrollHeight - box.scrollTop - box.clientHeight < 32 : false,
            };
            requestAnimationFrame(() =>
              setTimeout(() => {
                window.__painted = performance.now();
              }, 0),
            );
          }
          if (window.__shown && /^(The last|All) \d+ events/.test(note())) {
            window.__settled = { at: performance.now(), note: note() };
            observer.disconnect();
          }
        });
        observer.observe(document, { childList: true, subtree: true, characterData: true });
      }, HUGE_LAST);
      await page.goto(`${gateway.url}/runs/${accepted.runId}`, { waitUntil: "domcontentloaded" });
      await page.waitForFunction(() => window.__painted !== undefined && window.__settled !== undefined, {
        timeout: 60_000,
      });
      const shown = await page.evaluate(() => ({
        ...window.__shown,
        painted: window.__painted,
        settled: window.__settled,
      }));
      const metrics = await page.metrics();
      samples.push({
        shownMs: shown.at,
        paintedMs: shown.painted,
        settledMs: shown.settled.at,
        heapUsedBytes: metrics.JSHeapUsedSize,
        domNodes: metrics.Nodes,
        elements: shown.elements,
        timelineItems: shown.timelineItems,
        noteWhenShown: shown.note,
        noteSettled: shown.settled.note,
        atEnd: shown.atEnd,
      });
      console.log(
        `long: sample ${i + 1}: shown at ${ms(shown.at)}, painted at ${ms(shown.painted)}; JS heap ${(metrics.JSHeapUsedSize / 2 ** 20).toFixed(1)} MiB, ${metrics.Nodes} DOM nodes (${shown.elements} elements, ${shown.timelineItems} timeline items when shown), scrolled to the end: ${shown.atEnd}; the note said "${shown.note}" then, "${shown.settled.note}" at ${ms(shown.settled.at)}`,
      );
      await page.close();
    }
    const painted = sortedOf(samples.map((x) => x.paintedMs));
    const shownAt = sortedOf(samples.map((x) => x.shownMs));
    const settled = sortedOf(samples.map((x) => x.settledMs));
    const heap = sortedOf(samples.map((x) => x.heapUsedBytes));
    const nodes = sortedOf(samples.map((x) => x.domNodes));
    report.long = {
      runId: accepted.runId,
      events,
      deltas,
      makeMs,
      runMs: info.endedAt - info.createdAt,
      samples,
      shown: { p50: pct(shownAt, 50), max: shownAt.at(-1) },
      painted: { p50: pct(painted, 50), max: painted.at(-1) },
      settled: { p50: pct(settled, 50), max: settled.at(-1) },
      heapUsedBytes: { p50: pct(heap, 50), max: heap.at(-1) },
      domNodes: { p50: pct(nodes, 50), max: nodes.at(-1) },
    };
    console.log(
      `long: ${events} events; painted p50 ${ms(pct(painted, 50))}, max ${ms(painted.at(-1))} (in the DOM p50 ${ms(pct(shownAt, 50))}, max ${ms(shownAt.at(-1))}; the note settled p50 ${ms(pct(settled, 50))}, max ${ms(settled.at(-1))}); JS heap p50 ${(pct(heap, 50) / 2 ** 20).toFixed(1)} MiB, max ${(heap.at(-1) / 2 ** 20).toFixed(1)} MiB; DOM nodes p50 ${pct(nodes, 50)}, max ${nodes.at(-1)} (n = ${samples.length})`,
    );
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
