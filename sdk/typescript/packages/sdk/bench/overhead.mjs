// The SDK's own cost on `runs.create` + `runs.wait`, free of a gateway's
// run time: each client talks to a canned server in another process
// (canned-server.mjs: node:http, keep-alive, the bodies a real gateway gave,
// bench/fixtures from capture.mjs), so what differs between the clients is
// what the SDK does around `fetch` (the call's params, the idempotency
// key, headers, JSON, the deadline, validating the answer, the `Run`).
// Run at sdk/typescript after `npm run build`:
//
//   node packages/sdk/bench/overhead.mjs [--reps 3] [--rounds 20000] [--warmup 2000]
//        [--idle 80] [--idle-secs 3] [--max-wait-min 10] [--json FILE] [--cpu-prof DIR]
//
// Three clients, interleaved call by call: one round is one `raw` (fetch,
// the JSON built and parsed by hand, the SDK's headers and an idempotency
// key), one `high` (`talon.agent("main").run("hi")` then `run.wait()`) and
// one `low` (`talon.client.runs.create` then `talon.client.runs.wait`), in
// an order that cycles through all six permutations, so each goes first,
// second and third equally often. `--warmup` rounds are discarded (the JIT
// settles), then `--rounds` are kept: p50/p95/p99 of each client, and the
// p50 of the per-round differences high − raw and low − raw with a
// bootstrap 95 % interval (2,000 resamples of the rounds) and the spread of
// the p50 over ten consecutive blocks.
//
// Each repetition is a fresh pair of processes (server, client). Before
// each, the CPUs must be idle: /proc/stat over 1 s, `--idle-secs`
// consecutive seconds at ≥ `--idle` % idle, polled up to `--max-wait-min`
// minutes (then it measures anyway and says so). Each result carries the
// idle figure before, and the share of the machine other processes used
// while it measured (all CPU time minus this client's and server's).
//
// `--cpu-prof DIR` runs the client under `node --cpu-prof` (the profile of
// a repetition lands in DIR; its figures are then not clean ones).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 && at + 1 < argv.length ? argv[at + 1] : fallback;
};
const TOKEN = "talon_benchmark_token_0000000000000000000000000000000000000000000000000";

if (argv.includes("--measure")) await measure();
else await main();

// ---------------------------------------------------------------------------
// The client process: one repetition.

async function measure() {
  const { Talon } = await import("@talon/sdk");
  const url = opt("url");
  const serverPid = Number(opt("server-pid"));
  const rounds = Number(opt("rounds", 20000));
  const warmup = Number(opt("warmup", 2000));
  const talon = new Talon({ baseUrl: url, token: TOKEN });

  // The raw client: what an app would write with fetch alone.
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json" };
  const post = async (method, body) => {
    const response = await fetch(`${url}/v1/${method}`, { method: "POST", headers, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const kinds = {
    raw: async () => {
      const run = await post("runs.create", {
        input: "hi",
        agentId: "main",
        idempotencyKey: `raw-${crypto.randomUUID()}`,
      });
      return post("runs.wait", { runId: run.id, timeoutMs: 30000 });
    },
    high: async () => {
      const run = await talon.agent("main").run("hi");
      return run.wait();
    },
    low: async () => {
      const run = await talon.client.runs.create({ input: "hi", agentId: "main" });
      return talon.client.runs.wait(run.id, { timeoutMs: 30000 });
    },
  };
  const names = Object.keys(kinds);
  const fns = names.map((n) => kinds[n]);
  const orders = [
    [0, 1, 2],
    [1, 2, 0],
    [2, 0, 1],
    [0, 2, 1],
    [2, 1, 0],
    [1, 0, 2],
  ];
  for (const f of fns) {
    const result = await f();
    if (result.status !== "completed" || result.output?.text !== "Hello from the benchmark.") {
      throw new Error(`unexpected result ${JSON.stringify(result)}`);
    }
  }

  const samples = fns.map(() => new Float64Array(rounds));
  const round = async (i, keep) => {
    for (const k of orders[i % orders.length]) {
      const start = performance.now();
      const result = await fns[k]();
      const took = performance.now() - start;
      if (result.status !== "completed") throw new Error(`${names[k]}: ${result.status}`);
      if (keep) samples[k][i] = took;
    }
  };
  for (let i = 0; i < warmup; i++) await round(i, false);
  const before = cpuTimes(serverPid);
  const started = performance.now();
  for (let i = 0; i < rounds; i++) await round(i, true);
  const seconds = (performance.now() - started) / 1000;
  const after = cpuTimes(serverPid);

  const delta = (key) => after[key] - before[key];
  const total = delta("total");
  const ours = delta("ours");
  const stats = await (await fetch(`${url}/stats`)).json();

  const byKind = {};
  names.forEach((name, k) => (byKind[name] = quantiles(samples[k])));
  const diff = (k) => {
    const d = new Float64Array(rounds);
    for (let i = 0; i < rounds; i++) d[i] = samples[k][i] - samples[0][i];
    return { ...quantiles(d), ci: bootstrap(d, 2000), blocks: blocks(d, 10) };
  };
  const result = {
    rounds,
    warmup,
    seconds,
    idleDuring: (100 * delta("idle")) / total,
    // Other processes' share of the machine: all processes' time but this client's and the server's.
    othersDuring: (100 * Math.max(0, delta("tasks") - ours)) / total,
    oursDuring: (100 * ours) / total,
    kernelDuring: (100 * delta("kernel")) / total,
    stealDuring: (100 * delta("steal")) / total,
    kinds: byKind,
    high: diff(1),
    low: diff(2),
    served: stats,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** /proc/stat's all-CPU jiffies and this process's plus the server's CPU time, in jiffies. */
function cpuTimes(serverPid) {
  const stat = procStat();
  const proc = (pid) => {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime, stime
  };
  return { ...stat, ours: proc("self") + proc(serverPid) };
}

function procStat() {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest is inside user)
  const idle = v[3] + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  // Time processes ran (irq, softirq, such as loopback TCP, and a hypervisor's steal aside).
  const tasks = v[0] + v[1] + v[2];
  return { total, idle, tasks, kernel: (v[5] ?? 0) + (v[6] ?? 0), steal: v[7] ?? 0 };
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))];
}

function quantiles(values) {
  const sorted = Float64Array.from(values).sort();
  return { p50: pct(sorted, 50), p95: pct(sorted, 95), p99: pct(sorted, 99) };
}

/** The 95 % interval of the median, over `times` resamples (a fixed seed, so it repeats). */
function bootstrap(values, times) {
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const n = values.length;
  const sample = new Float64Array(n);
  const medians = new Float64Array(times);
  for (let b = 0; b < times; b++) {
    for (let i = 0; i < n; i++) sample[i] = values[Math.floor(random() * n)];
    sample.sort();
    medians[b] = pct(sample, 50);
  }
  medians.sort();
  return [pct(medians, 2.5), pct(medians, 97.5)];
}

/** The median of each of `count` consecutive blocks: min and max. */
function blocks(values, count) {
  const size = Math.floor(values.length / count);
  const medians = [];
  for (let b = 0; b < count; b++) medians.push(pct(values.slice(b * size, (b + 1) * size).sort(), 50));
  return [Math.min(...medians), Math.max(...medians)];
}

// ---------------------------------------------------------------------------
// The driver: waits for idle CPUs, then one server and one client process per repetition.

async function main() {
  const reps = Number(opt("reps", 3));
  const rounds = opt("rounds", "20000");
  const warmup = opt("warmup", "2000");
  const threshold = Number(opt("idle", 80));
  const idleSecs = Number(opt("idle-secs", 3));
  const maxWaitMs = Number(opt("max-wait-min", 10)) * 60_000;
  const profileDir = opt("cpu-prof");
  const model = (readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.*)$/m) ?? [])[1] ?? "?";
  console.log(`node ${process.version}, ${cpus().length} CPUs (${model}), ${new Date().toISOString()}`);
  console.log(`${reps} repetitions of ${warmup} warm-up + ${rounds} measured rounds (raw, high, low interleaved)\n`);

  const results = [];
  for (let rep = 1; rep <= reps; rep++) {
    const idle = await waitIdle(threshold, idleSecs, maxWaitMs);
    const at = new Date().toISOString();
    const server = spawn(process.execPath, [fileURLToPath(new URL("./canned-server.mjs", import.meta.url)), TOKEN], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const port = await new Promise((resolve, reject) => {
        const lines = createInterface({ input: server.stdout });
        lines.once("line", (line) => resolve(Number(line.split(" ")[1])));
        server.once("exit", (code) => reject(new Error(`the canned server exited (${code})`)));
      });
      const flags = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
      const client = spawn(
        process.execPath,
        [
          ...flags,
          fileURLToPath(import.meta.url),
          "--measure",
          "--url",
          `http://127.0.0.1:${port}`,
          "--server-pid",
          String(server.pid),
          "--rounds",
          rounds,
          "--warmup",
          warmup,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      let out = "";
      client.stdout.on("data", (chunk) => (out += chunk));
      const code = await new Promise((resolve) => client.once("exit", resolve));
      const line = out.split("\n").find((l) => l.startsWith("RESULT "));
      if (code !== 0 || !line) throw new Error(`the client exited (${code}):\n${out}`);
      const result = { rep, at, idleBefore: idle, ...JSON.parse(line.slice(7)) };
      results.push(result);
      report(result);
    } finally {
      server.kill("SIGTERM");
    }
  }
  summary(results);
  const json = opt("json");
  if (json)
    writeFileSync(json, `${JSON.stringify({ node: process.version, cpus: cpus().length, model, results }, null, 2)}\n`);
}

/** Waits until `secs` consecutive 1-s samples of /proc/stat are ≥ `threshold` % idle, or `maxWaitMs`. */
async function waitIdle(threshold, secs, maxWaitMs) {
  const started = Date.now();
  let run = [];
  let best = { min: -1 };
  for (;;) {
    const a = procStat();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const b = procStat();
    const idle = (100 * (b.idle - a.idle)) / (b.total - a.total);
    run = idle >= threshold ? [...run, idle] : [];
    const waited = (Date.now() - started) / 1000;
    if (run.length >= secs) return { percent: Math.min(...run), met: true, waitedSecs: waited };
    if (idle > best.min) best = { min: idle };
    if (Date.now() - started >= maxWaitMs) {
      console.log(
        `  (the CPUs did not go idle in ${Math.round(waited)} s: best ${best.min.toFixed(0)} %; measuring anyway)`,
      );
      return { percent: idle, met: false, waitedSecs: waited };
    }
    if (Math.round(waited) % 30 === 0)
      console.log(`  waiting for idle CPUs: ${idle.toFixed(0)} % idle after ${Math.round(waited)} s`);
  }
}

function ms(v) {
  return v.toFixed(3);
}

function signed(v) {
  return `${v >= 0 ? "+" : ""}${v.toFixed(3)}`;
}

function report(r) {
  const idle = `${r.idleBefore.percent.toFixed(0)} %${r.idleBefore.met ? "" : " (threshold not met)"}`;
  console.log(
    `rep ${r.rep} (${r.at}): idle before ${idle} after ${Math.round(r.idleBefore.waitedSecs)} s; ` +
      `while measuring: ${r.idleDuring.toFixed(0)} % idle, client + server ${r.oursDuring.toFixed(0)} %, ` +
      `other processes ${r.othersDuring.toFixed(1)} %, irq ${r.kernelDuring.toFixed(1)} %, steal ${r.stealDuring.toFixed(1)} % of the machine; ${r.seconds.toFixed(0)} s`,
  );
  for (const name of ["raw", "high", "low"]) {
    const q = r.kinds[name];
    console.log(`  ${name.padEnd(5)} p50 ${ms(q.p50)} ms  p95 ${ms(q.p95)} ms  p99 ${ms(q.p99)} ms`);
  }
  for (const name of ["high", "low"]) {
    const d = r[name];
    console.log(
      `  ${name} − raw per round: p50 ${signed(d.p50)} ms (95 % CI ${signed(d.ci[0])} … ${signed(d.ci[1])}; ` +
        `10 blocks ${signed(d.blocks[0])} … ${signed(d.blocks[1])}); p95 ${signed(d.p95)} ms; p50s differ by ${signed(r.kinds[name].p50 - r.kinds.raw.p50)} ms`,
    );
  }
  for (const [key, count] of Object.entries(r.served)) {
    console.log(key === "connections" ? `  TCP connections to the server: ${count}` : `  served ${count} × ${key}`);
  }
  console.log("");
}

function summary(results) {
  console.log(
    "| rep | idle before | others while measuring | raw p50 / p95 | high p50 / p95 | low p50 / p95 | high − raw p50 (95 % CI) | low − raw p50 (95 % CI) |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    const k = r.kinds;
    console.log(
      `| ${r.rep} | ${r.idleBefore.percent.toFixed(0)} %${r.idleBefore.met ? "" : " (not met)"} | ${r.othersDuring.toFixed(1)} % | ` +
        `${ms(k.raw.p50)} / ${ms(k.raw.p95)} | ${ms(k.high.p50)} / ${ms(k.high.p95)} | ${ms(k.low.p50)} / ${ms(k.low.p95)} | ` +
        `${signed(r.high.p50)} (${signed(r.high.ci[0])} … ${signed(r.high.ci[1])}) | ${signed(r.low.p50)} (${signed(r.low.ci[0])} … ${signed(r.low.ci[1])}) |`,
    );
  }
  const range = (f) => `${signed(Math.min(...results.map(f)))} … ${signed(Math.max(...results.map(f)))}`;
  console.log(
    `\nhigh − raw p50 over the repetitions: ${range((r) => r.high.p50)} ms; low − raw: ${range((r) => r.low.p50)} ms`,
  );
}
