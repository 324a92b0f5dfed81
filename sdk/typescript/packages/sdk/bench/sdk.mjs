// @talon/sdk's benchmarks against a real `talon gateway` (the mock model,
// its call rate lifted so no call waits out a 429). Run after `npm run
// build` at sdk/typescript, with the `talon` binary built:
//
//   node --experimental-websocket packages/sdk/bench/sdk.mjs [overhead] [resume] [fanout]
//
// - overhead: `runs.create` + `runs.wait`, 300 of each kind interleaved in
//   blocks of ten: raw `fetch` (JSON built by hand), the generated client,
//   and `agent.run` + `run.wait`; p50 and p99 and the SDK's overhead at p50.
//   End to end: the gateway's run time and its noise swamp the SDK's own
//   cost, which overhead.mjs measures against a canned server.
// - resume: a TCP proxy cuts a run's event stream after three events; the
//   time from the cut to the fourth event in the consumer's hands, 200 rounds.
// - fanout: 1,000 `talon.events()` iterators in this one process while 20
//   runs play; each event's delivery delay (receipt minus its `ts`) p50/p99
//   over all iterators, and the process's memory.
import net from "node:net";
import { performance } from "node:perf_hooks";

import { Talon } from "@talon/sdk";
import { startGateway } from "@talon/sdk-testing";

const parts = process.argv.slice(2);
const want = (name) => parts.length === 0 || parts.includes(name);
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))];
const fmt = (ms) => ms.toFixed(3);
const summary = (label, samples) => {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(34)} p50 ${fmt(pct(sorted, 50))} ms  p99 ${fmt(pct(sorted, 99))} ms  (n=${sorted.length})`,
  );
  return pct(sorted, 50);
};

// TALON_BIN names the gateway binary (a release build gives the SDK's
// figures, not a debug gateway's).
const gateway = await startGateway({
  script: { replay: "perRun", turns: [{ text: "Hello from the benchmark." }] },
  config: { gateway: { limits: { callsPerSecond: 1e6, burst: 1000000 } } },
});
const talon = new Talon({ baseUrl: gateway.url, token: gateway.token });
console.log(`node ${process.version}, gateway ${gateway.url}, ${new Date().toISOString()}`);

try {
  if (want("overhead")) await overhead();
  if (want("resume")) await resume();
  if (want("fanout")) await fanout();
} finally {
  await gateway.stop();
}

async function overhead() {
  const headers = { authorization: `Bearer ${gateway.token}`, "content-type": "application/json" };
  const post = async (method, body) => {
    const response = await fetch(`${gateway.url}/v1/${method}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const kinds = {
    raw: async () => {
      const run = await post("runs.create", {
        input: "hi",
        idempotencyKey: `raw-${performance.now()}-${Math.random()}`,
      });
      await post("runs.wait", { runId: run.id, timeoutMs: 30000 });
    },
    generated: async () => {
      const run = await talon.client.runs.create({ input: "hi" });
      await talon.client.runs.wait(run.id, { timeoutMs: 30000 });
    },
    high: async () => {
      const run = await talon.agent().run("hi");
      await run.wait();
    },
  };
  const samples = { raw: [], generated: [], high: [] };
  for (let i = 0; i < 20; i++) for (const f of Object.values(kinds)) await f(); // warm-up
  for (let block = 0; block < 30; block++) {
    for (const [name, f] of Object.entries(kinds)) {
      for (let i = 0; i < 10; i++) {
        const start = performance.now();
        await f();
        samples[name].push(performance.now() - start);
      }
    }
  }
  console.log("\nruns.create + runs.wait, one pair at a time:");
  const raw = summary("raw fetch", samples.raw);
  const generated = summary("SDK, generated client", samples.generated);
  const high = summary("SDK, agent.run + run.wait", samples.high);
  console.log(`overhead at p50: generated ${fmt(generated - raw)} ms, high level ${fmt(high - raw)} ms`);
}

/** A TCP proxy in front of the gateway that cuts the next event stream after `after` frames. */
function cutter(target) {
  const { hostname, port } = new URL(target);
  let cutAfter = Infinity;
  let onCut = () => {};
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    let request = "";
    let stream = false;
    let frames = 0;
    client.on("data", (chunk) => {
      request += chunk.toString("latin1");
      if (/^GET \/v1\/runs\/[^/]+\/events/.test(request) && cutAfter !== Infinity) stream = true;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!stream) return void client.write(chunk);
      const text = chunk.toString("latin1");
      let at = 0;
      for (;;) {
        const end = text.indexOf("\n\n", at);
        if (end < 0) break;
        const frame = text.slice(at, end);
        at = end + 2;
        if (!frame.startsWith(":")) frames += 1;
        if (frames >= cutAfter) {
          client.write(chunk.subarray(0, at));
          cutAfter = Infinity;
          onCut(performance.now());
          client.destroy();
          upstream.destroy();
          return;
        }
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        arm(after, callback) {
          cutAfter = after;
          onCut = callback;
        },
        close: () => new Promise((r) => server.close(r)),
      }),
    ),
  );
}

async function resume() {
  const proxy = await cutter(gateway.url);
  const through = new Talon({ baseUrl: proxy.url, token: gateway.token });
  const samples = [];
  for (let round = 0; round < 200; round++) {
    const run = await talon.agent().run("hi");
    await run.wait();
    let cutAt = 0;
    proxy.arm(3, (t) => (cutAt = t));
    let seen = 0;
    const handle = await through.run(run.id);
    for await (const _event of handle.events()) {
      seen += 1;
      if (seen === 4) samples.push(performance.now() - cutAt);
    }
  }
  console.log("\nrun.events() after a cut at the third event, to the fourth:");
  summary("resume", samples);
  await proxy.close();
}

async function fanout() {
  const iterators = 1000;
  const runs = 20;
  // One controller per iterator (one signal shared by a thousand streams
  // would carry a thousand abort listeners).
  const controllers = Array.from({ length: iterators }, () => new AbortController());
  const delays = [];
  const before = process.memoryUsage();
  const follow = async (controller) => {
    for await (const event of talon.events({
      signal: controller.signal,
      types: ["run.created", "run.started", "assistant.message", "run.completed"],
    })) {
      delays.push(Date.now() - event.ts);
    }
  };
  const tasks = controllers.map((controller) => follow(controller).catch(() => undefined));
  // Let every iterator open its stream before the runs start.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const opened = process.memoryUsage();
  const started = [];
  for (let i = 0; i < runs; i++) started.push(await talon.agent().run(`fan-out ${i}`));
  for (const run of started) await run.wait();
  const expected = iterators * runs * 4;
  const deadline = Date.now() + 60_000;
  while (delays.length < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const after = process.memoryUsage();
  for (const controller of controllers) controller.abort();
  await Promise.all(tasks);
  const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
  console.log(`\n${iterators} talon.events() iterators, ${runs} runs: ${delays.length} of ${expected} deliveries`);
  summary("delivery delay (receipt - ts)", delays);
  console.log(
    `memory: RSS ${mib(before.rss)} before, ${mib(opened.rss)} with the streams open, ${mib(after.rss)} after delivery; heap used ${mib(after.heapUsed)}`,
  );
}
