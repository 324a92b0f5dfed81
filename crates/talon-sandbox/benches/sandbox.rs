//! Sandbox benchmarks, mirroring `benches/node/anchor.mjs` (quickjs-wasi
//! driven by Node) so the two can be compared on one machine. Results and
//! the comparison live in `docs/benchmarks.md`.
//!
//! `cargo bench -p talon-sandbox --bench sandbox`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary; criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use talon_sandbox::{CellStatus, HostFunctions, Sandbox, SandboxConfig, VmOptions};

/// Braces keep `let s` block-scoped, so the script can run again in one VM.
const LOOP_3M: &str =
    "{ let s = 0; for (let i = 0; i < 3000000; i++) { s = (s + i * 7) % 1000003; } s }";

fn functions() -> HostFunctions {
    HostFunctions::new()
        .asynchronous("later")
        .sync("f", |args| Ok(args.first().cloned().unwrap_or_default()))
}

fn pending_snapshot(sandbox: &Sandbox) -> (Vec<u8>, usize) {
    let mut vm = sandbox
        .create_vm(VmOptions::default(), functions())
        .unwrap();
    let status = vm
        .run_cell("const v = await later(); return v + 1")
        .unwrap();
    assert!(matches!(status, CellStatus::Waiting(_)));
    let raw = vm.memory_bytes();
    (vm.snapshot().unwrap(), raw)
}

fn benches(c: &mut Criterion) {
    let started = Instant::now();
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    println!(
        "sandbox ready in {:?} (module from cache: {})",
        started.elapsed(),
        sandbox.module_load().from_cache
    );

    c.bench_function("create_eval_dispose", |b| {
        b.iter(|| {
            let mut vm = sandbox
                .create_vm(VmOptions::default(), HostFunctions::new())
                .unwrap();
            black_box(vm.eval("1+2").unwrap());
        })
    });

    let (snapshot, raw) = pending_snapshot(&sandbox);
    println!(
        "snapshot_pending_promise: linear memory {raw} bytes, stored snapshot {} bytes",
        snapshot.len()
    );
    c.bench_function("snapshot_pending_promise", |b| {
        let mut vm = sandbox
            .create_vm(VmOptions::default(), functions())
            .unwrap();
        vm.run_cell("const v = await later(); return v + 1")
            .unwrap();
        b.iter(|| black_box(vm.snapshot().unwrap()))
    });

    c.bench_function("restore_resolve_jobs", |b| {
        b.iter(|| {
            let mut vm = sandbox
                .restore_vm(&snapshot, VmOptions::default(), functions())
                .unwrap();
            vm.settle(1, Ok(json!(41))).unwrap();
            let done = vm.resume().unwrap();
            debug_assert_eq!(done, CellStatus::Completed(json!(42)));
            black_box(done);
        })
    });

    let calls = 100_000u32;
    let mut vm = sandbox
        .create_vm(VmOptions::default(), functions())
        .unwrap();
    vm.eval("function g(x) { return x }").unwrap();
    let host_loop = format!("{{ let s = 0; for (let i = 0; i < {calls}; i++) s += f(i); s }}");
    let guest_loop = format!("{{ let s = 0; for (let i = 0; i < {calls}; i++) s += g(i); s }}");
    let median = |vm: &mut talon_sandbox::Vm, code: &str| -> Duration {
        let mut times: Vec<Duration> = (0..15)
            .map(|_| {
                let t = Instant::now();
                black_box(vm.eval(code).unwrap());
                t.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let host = median(&mut vm, &host_loop);
    let guest = median(&mut vm, &guest_loop);
    println!(
        "host_call: {:.3} µs per call raw, {:.3} µs net of a guest call ({calls} calls: {:?} vs {:?})",
        host.as_secs_f64() * 1e6 / f64::from(calls),
        host.saturating_sub(guest).as_secs_f64() * 1e6 / f64::from(calls),
        host,
        guest
    );
    c.bench_function("host_call_x1000", |b| {
        b.iter(|| {
            black_box(
                vm.eval("{ let t = 0; for (let i = 0; i < 1000; i++) t += f(i); t }")
                    .unwrap(),
            )
        })
    });

    let mut group = c.benchmark_group("loop");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("loop_3m", |b| {
        let mut vm = sandbox
            .create_vm(VmOptions::default(), HostFunctions::new())
            .unwrap();
        b.iter(|| black_box(vm.eval(LOOP_3M).unwrap()))
    });
    group.finish();
}

criterion_group!(sandbox, benches);
criterion_main!(sandbox);
