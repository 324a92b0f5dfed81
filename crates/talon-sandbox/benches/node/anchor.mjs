// Anchor benchmark: quickjs-wasi 3.7.0 (QuickJS-NG compiled to WASM) driven
// by Node, so the talon-sandbox wasmtime host (benches/sandbox.rs) can be
// compared with it on the same machine. Prints one JSON object per line.
//
//   npm install --no-audit --no-fund && node anchor.mjs
//
// Every benchmark does a warm-up (so V8 has tiered the shared, compiled
// WebAssembly.Module up) and reports the median of the timed iterations.

import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { gzipSync } from 'node:zlib';
import { QuickJS } from 'quickjs-wasi';

const now = () => performance.now();

function median(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const round = (x, digits = 4) => Number(x.toFixed(digits));

function report(bench, samples, extra = {}) {
  console.log(
    JSON.stringify({
      bench,
      median_ms: round(median(samples)),
      iterations: samples.length,
      min_ms: round(Math.min(...samples)),
      ...extra,
    }),
  );
}

/** Runs `fn` `warmup` times untimed, then `iterations` times; `fn` returns its own elapsed ms. */
async function measure(warmup, iterations, fn) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  for (let i = 0; i < iterations; i++) samples.push(await fn());
  return samples;
}

function assertEq(actual, expected, what) {
  if (actual !== expected) throw new Error(`${what}: expected ${expected}, got ${actual}`);
}

// The WASM binary is compiled once and the Module reused by every VM.
const wasmBytes = await readFile(new URL(import.meta.resolve('quickjs-wasi/quickjs.wasm')));
const module = await WebAssembly.compile(wasmBytes);

let sink = 0; // keeps results observable

{
  const probe = await QuickJS.create({ wasm: module });
  const versions = probe.versions;
  probe.dispose();
  console.log(
    JSON.stringify({
      machine: os.cpus()[0].model,
      cores: os.cpus().length,
      node: process.version,
      date: new Date().toISOString(),
      quickjs_wasi: versions['quickjs-wasi'],
      quickjs: versions.quickjs,
    }),
  );
}

// 1. create_eval_dispose -----------------------------------------------------
{
  const samples = await measure(50, 500, async () => {
    const t0 = now();
    const vm = await QuickJS.create({ wasm: module });
    const result = vm.evalCode('1+2');
    sink += result.toNumber();
    result.dispose();
    vm.dispose();
    return now() - t0;
  });
  report('create_eval_dispose', samples);
}

// 2. snapshot_pending_promise ------------------------------------------------
// The guest awaits a promise the host created with vm.newPromise() (returned
// by the host function `later`, the usual async-host-call pattern). A
// Deferred is a host-side closure over the original VM object (its resolve
// handle is private and `resolve()` calls into that VM), so it cannot resolve
// the promise in a restored VM. Following the package README's
// snapshot/restore example, the guest therefore also keeps a resolve
// function in a global (`__resolve`) that the host calls after restore.
const CELL = `globalThis.cell = (async () => {
  const v = await new Promise((resolve) => {
    globalThis.__resolve = resolve;
    later().then(resolve);
  });
  return (globalThis.out = v + 1);
})();`;

const deferreds = [];
const origin = await QuickJS.create({ wasm: module });
{
  const later = origin.newFunction('later', () => {
    const deferred = origin.newPromise();
    deferreds.push(deferred); // kept so the host could resolve it later
    return deferred.handle;
  });
  origin.setProp(origin.global, 'later', later);
  later.dispose();
  origin.evalCode(CELL).dispose();
  origin.executePendingJobs();
  const cell = origin.global.getProp('cell');
  assertEq(cell.promiseState, 0, 'cell pending before snapshot');
  cell.dispose();
  assertEq(deferreds.length, 1, 'host promises created');
}

let serialized;
{
  const samples = await measure(20, 300, () => {
    const t0 = now();
    const snapshot = origin.snapshot();
    const bytes = QuickJS.serializeSnapshot(snapshot);
    const elapsed = now() - t0;
    serialized = bytes;
    return elapsed;
  });
  const gz = gzipSync(serialized);
  report('snapshot_pending_promise', samples, {
    raw_bytes: serialized.length,
    gzip_bytes: gz.length,
    linear_memory_bytes: origin._getMemory().buffer.byteLength,
  });

  // Same, plus gzip (talon's own snapshot() compresses, so this is the closer match).
  const gzSamples = await measure(10, 200, () => {
    const t0 = now();
    const bytes = gzipSync(QuickJS.serializeSnapshot(origin.snapshot()));
    const elapsed = now() - t0;
    sink += bytes.length;
    return elapsed;
  });
  report('snapshot_pending_promise_gzip', gzSamples, { gzip_bytes: gz.length });
}

// 3. restore_resolve_jobs ----------------------------------------------------
{
  const deserializeSamples = [];
  const samples = await measure(30, 300, async () => {
    const t0 = now();
    const snapshot = QuickJS.deserializeSnapshot(serialized);
    const t1 = now();
    const vm = await QuickJS.restore(snapshot, { wasm: module });
    const resolve = vm.global.getProp('__resolve');
    const arg = vm.newNumber(41);
    vm.callFunction(resolve, vm.undefined, arg).dispose();
    arg.dispose();
    resolve.dispose();
    const jobs = vm.executePendingJobs();
    const out = vm.global.getProp('out');
    const value = out.toNumber();
    out.dispose();
    vm.dispose();
    const elapsed = now() - t0;
    deserializeSamples.push(t1 - t0);
    assertEq(value, 42, 'restored cell result');
    sink += jobs;
    return elapsed;
  });
  report('restore_resolve_jobs', samples, {
    deserialize_median_ms: round(median(deserializeSamples.slice(30))),
  });
}
origin.dispose();

// 4. host_call ---------------------------------------------------------------
// Each run uses a fresh VM (created untimed): a global script declaring
// `let s` cannot be evaluated twice in one VM ("redeclaration of 's'").
{
  const CALLS = 100000;
  const HOST_LOOP = `let s = 0; for (let i = 0; i < ${CALLS}; i++) s += f(i); s`;
  const GUEST_LOOP = `let s = 0; for (let i = 0; i < ${CALLS}; i++) s += g(i); s`;
  const expected = (CALLS * (CALLS - 1)) / 2;

  const runLoop = async (code) => {
    const vm = await QuickJS.create({ wasm: module });
    const f = vm.newFunction('f', (x) => x);
    vm.setProp(vm.global, 'f', f);
    f.dispose();
    vm.evalCode('function g(x) { return x }').dispose();
    const t0 = now();
    const result = vm.evalCode(code);
    const value = result.toNumber();
    result.dispose();
    const elapsed = now() - t0;
    vm.dispose();
    assertEq(value, expected, 'loop sum');
    return elapsed;
  };

  // Interleave host and guest runs so drift affects both equally.
  for (let i = 0; i < 3; i++) {
    await runLoop(HOST_LOOP);
    await runLoop(GUEST_LOOP);
  }
  const host = [];
  const guest = [];
  for (let i = 0; i < 15; i++) {
    host.push(await runLoop(HOST_LOOP));
    guest.push(await runLoop(GUEST_LOOP));
  }
  const hostMs = median(host);
  const guestMs = median(guest);
  report('host_call', host, {
    calls: CALLS,
    guest_loop_median_ms: round(guestMs),
    per_call_us: round(((hostMs - guestMs) * 1000) / CALLS),
    per_call_raw_us: round((hostMs * 1000) / CALLS),
  });
}

// 5. loop_3m -----------------------------------------------------------------
{
  const LOOP_3M = 'let s = 0; for (let i = 0; i < 3000000; i++) { s = (s + i * 7) % 1000003; } s';
  let expected;
  const samples = await measure(2, 5, async () => {
    const vm = await QuickJS.create({ wasm: module }); // fresh VM, untimed (see host_call)
    const t0 = now();
    const result = vm.evalCode(LOOP_3M);
    const value = result.toNumber();
    result.dispose();
    const elapsed = now() - t0;
    vm.dispose();
    expected ??= value;
    assertEq(value, expected, 'loop_3m result');
    return elapsed;
  });
  report('loop_3m', samples, { result: expected });
}

if (sink === -1) console.log(sink);
