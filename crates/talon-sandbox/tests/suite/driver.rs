//! The shared async cell driver (`CellEngine::drive`) and a cell's host
//! calls (`Calls`), driven by a small test host: its one asynchronous host
//! function is captured by a test prelude, whose image every test VM starts
//! from, with its guest API (`host(kind, value)`) and a set-up function the
//! host's prologue calls in each fresh VM.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_protocol::{ConsoleOutput, OutputStream};
use talon_sandbox::{
    Answer, CallFuture, CallResult, Calls, CellEngine, CellHost, DriveLimits, Driven, Halt,
    HostCallError, HostFunctions, Limits, Machine, PendingCall, Prelude, SandboxConfig,
    SandboxError, Suspend, VmOptions,
};
use talon_testing::wait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::TEST_KEY;

/// The test prelude's name (and its image's).
const API: &str = "driver-test";
/// The one host function the test prelude captures.
const HOST_FN: &str = "__driver_test_host";

/// Captures and hides the host function; defines `host(kind, value)` and
/// `__driver_test_setup(arg)`, which records its argument as `setupArg` and
/// removes itself.
const PRELUDE: &str = r#"(() => {
  "use strict";
  const g = globalThis;
  const call = g.__driver_test_host;
  delete g.__driver_test_host;
  Object.defineProperty(g, "host", {
    value: (kind, value) => call(String(kind), value === undefined ? null : value),
    writable: false,
    configurable: false,
    enumerable: false,
  });
  Object.defineProperty(g, "__driver_test_setup", {
    value: (arg) => { delete g.__driver_test_setup; g.setupArg = arg; },
    writable: false,
    configurable: true,
    enumerable: false,
  });
})();"#;

/// One engine per test process, with an image of the test prelude.
fn engine() -> &'static CellEngine {
    static ENGINE: OnceLock<CellEngine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        CellEngine::new(SandboxConfig {
            preludes: vec![Prelude {
                name: API.into(),
                source: PRELUDE.into(),
                host_functions: vec![HOST_FN.into()],
            }],
            snapshot_key: Some(TEST_KEY),
            pool_threads: 4,
            ..SandboxConfig::default()
        })
        .expect("cell engine")
    })
}

/// What the test host's calls report.
#[derive(Debug, Default)]
struct Probe {
    /// Requests the host accepted.
    accepted: AtomicUsize,
    /// `count` calls running now.
    running: AtomicUsize,
    /// The most `count` calls that ran at once.
    max_running: AtomicUsize,
    /// `forever` calls whose future was polled.
    started: AtomicUsize,
    /// `forever` call futures dropped (they never finish, so: aborted).
    dropped: AtomicUsize,
}

impl Probe {
    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Counts a drop of the future that owns it.
struct DropGuard(Arc<Probe>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// The test host. `host(kind, value)` in the guest asks for:
/// - `now`: `value`, at once (`Answer::Now`);
/// - `refuse`: an error with code `refused`, at once;
/// - `sleep`: `value.value` after `value.ms` milliseconds (a task);
/// - `gate`: `"<value>-result"` once the test opens the gate (a task);
/// - `panic`: a task whose future panics;
/// - `forever`: a task that never finishes (counts its start and its drop);
/// - `count`: `value` after 40 ms, counting how many run at once;
/// - `yield`: suspends the cell (`Answer::Yield`);
/// - `outside`: answered from outside the process (`Answer::Outside`).
///
/// The tag of a started call is its kind.
struct TestHost {
    probe: Arc<Probe>,
    gate: watch::Sender<bool>,
    requests: Vec<PendingCall>,
}

impl TestHost {
    fn new() -> Self {
        Self {
            probe: Arc::new(Probe::default()),
            gate: watch::channel(false).0,
            requests: Vec::new(),
        }
    }

    fn open_gate(&self) {
        self.gate.send_replace(true);
    }
}

fn start(kind: &str, call: impl Future<Output = CallResult> + Send + 'static) -> Answer<String> {
    let call: CallFuture = Box::pin(call);
    Answer::Start {
        tag: kind.to_owned(),
        call,
    }
}

impl CellHost for TestHost {
    type Tag = String;

    fn functions(&self) -> HostFunctions {
        HostFunctions::new().asynchronous(HOST_FN)
    }

    fn vm_options(&self, remaining: Duration) -> VmOptions {
        VmOptions {
            limits: Limits {
                timeout: remaining,
                ..Limits::default()
            },
            prelude: Some(API.into()),
            ..VmOptions::default()
        }
    }

    fn prologue(&self) -> Option<String> {
        Some("__driver_test_setup('set');".into())
    }

    fn accept(&mut self, call: PendingCall) -> Answer<String> {
        self.requests.push(call.clone());
        self.probe.accepted.fetch_add(1, Ordering::SeqCst);
        let kind = call.args[0].as_str().unwrap_or_default().to_owned();
        let value = call.args.get(1).cloned().unwrap_or(Value::Null);
        match kind.as_str() {
            "now" => Answer::Now(Ok(value)),
            "refuse" => Answer::Now(Err(HostCallError::new("refused").with_code("refused"))),
            "sleep" => start(&kind, async move {
                let ms = value["ms"].as_u64().unwrap_or(0);
                // Not a wait: a call that is slow on purpose.
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(value["value"].clone())
            }),
            "gate" => {
                let mut gate = self.gate.subscribe();
                start(&kind, async move {
                    let _ = gate.wait_for(|open| *open).await;
                    Ok(json!(format!("{}-result", value.as_str().unwrap_or("?"))))
                })
            }
            "panic" => start(&kind, async move {
                if value.is_null() {
                    panic!("the test call panics");
                }
                Ok(value)
            }),
            "forever" => {
                let probe = self.probe.clone();
                let guard = DropGuard(probe.clone());
                start(&kind, async move {
                    let _guard = guard;
                    probe.started.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<CallResult>().await
                })
            }
            "count" => {
                let probe = self.probe.clone();
                start(&kind, async move {
                    let now = probe.running.fetch_add(1, Ordering::SeqCst) + 1;
                    probe.max_running.fetch_max(now, Ordering::SeqCst);
                    // Not a wait: the call lasts a while, so calls overlap.
                    tokio::time::sleep(Duration::from_millis(40)).await;
                    probe.running.fetch_sub(1, Ordering::SeqCst);
                    Ok(value)
                })
            }
            "yield" => Answer::Yield,
            "outside" => Answer::Outside { tag: kind },
            other => Answer::Now(Err(HostCallError::new(format!("unknown kind {other}")))),
        }
    }
}

fn limits(budget_ms: u64) -> DriveLimits {
    DriveLimits {
        deadline: Instant::now() + Duration::from_millis(budget_ms),
        cancel: CancellationToken::new(),
    }
}

fn fresh(code: &str) -> Machine {
    Machine::Fresh(code.to_owned())
}

async fn drive(
    host: &mut TestHost,
    calls: &mut Calls<String>,
    machine: Machine,
    limits: &DriveLimits,
) -> Driven {
    engine().drive(host, calls, machine, limits).await
}

/// The value of a drive that must complete.
fn completed(halt: Halt) -> Value {
    match halt {
        Halt::Completed(value) => value,
        other => panic!("expected a completed cell, got {other:?}"),
    }
}

/// The error of a drive that must fail.
fn failed(halt: Halt) -> SandboxError {
    match halt {
        Halt::Failed(error) => error,
        other => panic!("expected a failed cell, got {other:?}"),
    }
}

/// The live VM of a drive that must suspend for `expected`.
fn suspended(halt: Halt, expected: Suspend) -> Machine {
    match halt {
        Halt::Suspended { machine, reason } => {
            assert_eq!(reason, expected);
            assert!(
                matches!(machine, Machine::Live(_)),
                "expected a live VM, got {machine:?}"
            );
            machine
        }
        other => panic!("expected a suspended cell, got {other:?}"),
    }
}

fn request(id: u64, kind: &str, value: Value) -> PendingCall {
    PendingCall {
        id,
        name: HOST_FN.into(),
        args: vec![json!(kind), value],
    }
}

fn stdout(text: &str) -> ConsoleOutput {
    ConsoleOutput {
        stream: OutputStream::Stdout,
        text: text.into(),
    }
}

fn stderr(text: &str) -> ConsoleOutput {
    ConsoleOutput {
        stream: OutputStream::Stderr,
        text: text.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_without_host_calls_completes() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let driven = drive(
        &mut host,
        &mut calls,
        fresh(
            "console.log('hi'); \
             return [typeof host, typeof __driver_test_host, typeof __driver_test_setup, \
                     setupArg, 1 + 1]",
        ),
        &limits(5_000),
    )
    .await;
    // The image has the API, the prelude hid the raw function, and the
    // prologue ran before the cell.
    assert_eq!(
        completed(driven.halt),
        json!(["function", "undefined", "undefined", "set", 2])
    );
    assert_eq!(driven.output, vec![stdout("hi\n")]);
    assert_eq!(host.requests, vec![]);
    assert_eq!(calls.in_flight(), &BTreeMap::new());
    assert!(!calls.has_ready());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_calls_run_together_and_their_results_reach_the_cell() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "const a = host('sleep', {ms: 300, value: 'slow'}); \
                const b = host('sleep', {ms: 20, value: 'fast'}); \
                const c = host('sleep', {ms: 200, value: [1, {x: 2}]}); \
                return await Promise.all([a, b, c])";
    // The engine's start is not the cell's.
    engine();
    let started = Instant::now();
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(5_000)).await;
    let elapsed = started.elapsed();
    assert_eq!(
        completed(driven.halt),
        json!(["slow", "fast", [1, {"x": 2}]])
    );
    assert_eq!(driven.output, vec![]);
    assert_eq!(
        host.requests,
        vec![
            request(1, "sleep", json!({"ms": 300, "value": "slow"})),
            request(2, "sleep", json!({"ms": 20, "value": "fast"})),
            request(3, "sleep", json!({"ms": 200, "value": [1, {"x": 2}]})),
        ]
    );
    // They ran at once: well under the 520 ms they take one after another.
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(500), "{elapsed:?}");
    assert_eq!(calls.in_flight(), &BTreeMap::new());
    assert!(!calls.has_ready());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_given_at_once_are_delivered() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "const a = await host('now', 1); \
                let r; try { await host('refuse') } catch (e) { r = [e instanceof Error, e.message, e.code] } \
                const [b, c] = await Promise.all([host('now', {b: true}), host('sleep', {ms: 20, value: 'late'})]); \
                return [a, r, b, c]";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(5_000)).await;
    assert_eq!(
        completed(driven.halt),
        json!([1, [true, "refused", "refused"], {"b": true}, "late"])
    );
    assert_eq!(
        host.requests,
        vec![
            request(1, "now", json!(1)),
            request(2, "refuse", Value::Null),
            request(3, "now", json!({"b": true})),
            request(4, "sleep", json!({"ms": 20, "value": "late"})),
        ]
    );
    assert_eq!(calls.in_flight(), &BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_call_is_a_catchable_internal_error_and_the_cell_goes_on() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "let caught; \
                try { await host('panic') } catch (e) { caught = [e instanceof Error, e.message, e.code] } \
                return [caught, await host('now', 'after'), await host('sleep', {ms: 5, value: 'task'})]";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(5_000)).await;
    assert_eq!(
        completed(driven.halt),
        json!([
            [true, "the host call failed", "internal_error"],
            "after",
            "task"
        ])
    );
    assert_eq!(calls.in_flight(), &BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_collected_in_order_across_steps() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "console.log('a'); \
                const x = await host('sleep', {ms: 10, value: 1}); \
                console.error('b', x); \
                const y = await host('now', 2); \
                console.log('c', y); console.log('d'); \
                await host('now', null); \
                console.log('e'); \
                return 'done'";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(5_000)).await;
    assert_eq!(completed(driven.halt), json!("done"));
    // Writes to one stream merge within a step, not across steps.
    assert_eq!(
        driven.output,
        vec![
            stdout("a\n"),
            stderr("b 1\n"),
            stdout("c 2\nd\n"),
            stdout("e\n"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_suspends_a_cell_whose_call_runs_on_and_it_resumes_live() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "console.log('before'); const v = await host('gate', 'x'); \
                console.log('after'); return ['done', v]";
    let started = Instant::now();
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(300)).await;
    let elapsed = started.elapsed();
    let machine = suspended(driven.halt, Suspend::Deadline);
    assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(1_300), "{elapsed:?}");
    assert_eq!(driven.output, vec![stdout("before\n")]);
    assert_eq!(host.requests, vec![request(1, "gate", json!("x"))]);
    // The call is still the cell's.
    assert_eq!(calls.in_flight(), &BTreeMap::from([(1, "gate".to_owned())]));
    assert!(!calls.has_ready());
    assert_eq!(calls.yielded(), None);

    host.open_gate();
    let driven = drive(&mut host, &mut calls, machine, &limits(5_000)).await;
    assert_eq!(completed(driven.halt), json!(["done", "x-result"]));
    assert_eq!(driven.output, vec![stdout("after\n")]);
    assert_eq!(host.requests.len(), 1);
    assert_eq!(calls.in_flight(), &BTreeMap::new());
    assert!(!calls.has_ready());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_cell_resumes_from_its_snapshot() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "let n = 40; const v = await host('gate', 'y'); n += 2; return [n, v]";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(200)).await;
    let machine = suspended(driven.halt, Suspend::Deadline);
    assert_eq!(calls.in_flight(), &BTreeMap::from([(1, "gate".to_owned())]));

    let bytes = engine().snapshot(machine).await.expect("snapshot");
    assert!(!bytes.is_empty());
    // A stored snapshot is returned as is; a cell that never ran cannot be.
    assert_eq!(
        engine()
            .snapshot(Machine::Stored(bytes.clone()))
            .await
            .expect("stored"),
        bytes
    );
    assert!(matches!(
        engine().snapshot(fresh("return 1")).await,
        Err(SandboxError::Internal(_))
    ));

    host.open_gate();
    let driven = drive(
        &mut host,
        &mut calls,
        Machine::Stored(bytes),
        &limits(5_000),
    )
    .await;
    assert_eq!(completed(driven.halt), json!([42, "y-result"]));
    assert_eq!(calls.in_flight(), &BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_restored_fails_the_drive() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    calls.answer(1, Ok(json!("late")));
    let driven = drive(
        &mut host,
        &mut calls,
        Machine::Stored(b"not a snapshot".to_vec()),
        &limits(5_000),
    )
    .await;
    let error = failed(driven.halt);
    assert!(
        matches!(error, SandboxError::SnapshotInvalid(_)),
        "{error:?}"
    );
    assert_eq!(driven.output, vec![]);
    assert_eq!(host.requests, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_cell_picks_up_a_running_call_after_reset_and_expect() {
    // Code Mode's resume path: the bookkeeping is rebuilt from the store,
    // the task that still runs delivers its result.
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "return await host('gate', 'z')";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(200)).await;
    let machine = suspended(driven.halt, Suspend::Deadline);
    let bytes = engine().snapshot(machine).await.expect("snapshot");

    calls.reset();
    assert_eq!(calls.in_flight(), &BTreeMap::new());
    calls.expect(1, "gate (stored)".to_owned());
    host.open_gate();
    let driven = drive(
        &mut host,
        &mut calls,
        Machine::Stored(bytes),
        &limits(5_000),
    )
    .await;
    assert_eq!(completed(driven.halt), json!("z-result"));
    assert_eq!(calls.in_flight(), &BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yield_suspends_the_cell_until_the_host_answers_it() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "console.log('one'); const v = await host('yield'); console.log('two'); \
                return ['resumed', v]";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(5_000)).await;
    let machine = suspended(driven.halt, Suspend::Yield);
    assert_eq!(driven.output, vec![stdout("one\n")]);
    assert_eq!(host.requests, vec![request(1, "yield", Value::Null)]);
    assert_eq!(calls.yielded(), Some(1));
    assert_eq!(calls.in_flight(), &BTreeMap::new());
    assert!(!calls.has_ready());

    calls.set_yielded(None);
    calls.answer(1, Ok(json!("go")));
    let driven = drive(&mut host, &mut calls, machine, &limits(5_000)).await;
    assert_eq!(completed(driven.halt), json!(["resumed", "go"]));
    assert_eq!(driven.output, vec![stdout("two\n")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_waiting_only_on_outside_answers_suspends_once_its_own_calls_end() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    // The outside call waits while a call of this process runs; once that
    // one ends, nothing here can settle the rest: the cell suspends then,
    // long before its 60 s deadline.
    let code = "const slow = host('sleep', {ms: 50, value: 'slept'}); \
                const app = host('outside', {q: 1}); \
                return [await slow, await app]";
    let started = Instant::now();
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(60_000)).await;
    let machine = suspended(driven.halt, Suspend::Outside);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(
        calls.in_flight(),
        &BTreeMap::from([(2, "outside".to_owned())])
    );
    assert!(!calls.running());

    // The answer arrives; the cell completes with it.
    calls.reset();
    calls.answer(2, Ok(json!("from the app")));
    let driven = drive(&mut host, &mut calls, machine, &limits(5_000)).await;
    assert_eq!(completed(driven.halt), json!(["slept", "from the app"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_waiting_on_a_call_aborts_at_once() {
    let mut host = TestHost::new();
    let probe = host.probe.clone();
    let mut calls = Calls::new(4);
    // Generous bounds: under a loaded machine the VM's first start is
    // slow; what is measured is the time from the cancel to the return.
    let limits = limits(60_000);
    let cancel = limits.cancel.clone();
    let started = probe.clone();
    // Cancelled once the cell waits on its running call.
    let canceller = tokio::spawn(async move {
        wait::until_async("the call to start", Duration::from_secs(45), async || {
            started.started() == 1
        })
        .await;
        // Not a wait on a condition: lets the guest settle into its wait on
        // the call. A cancellation that came sooner must abort just as
        // promptly.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let at = Instant::now();
        cancel.cancel();
        at
    });
    let code = "console.log('waiting'); await host('forever'); return 'unreachable'";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits).await;
    let returned = Instant::now();
    let cancelled_at = canceller.await.expect("canceller");
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Aborted), "{error:?}");
    let late = returned.saturating_duration_since(cancelled_at);
    assert!(late < Duration::from_secs(1), "{late:?}");
    assert_eq!(driven.output, vec![stdout("waiting\n")]);
    assert_eq!(probe.started(), 1);
    // A cancelled drive aborts its calls itself: the call's future is
    // dropped while the owner still holds `calls`.
    assert_eq!(
        calls.in_flight(),
        &BTreeMap::from([(1, "forever".to_owned())])
    );
    wait::until_async(
        "the calls' futures to be dropped",
        wait::DEADLINE,
        async || probe.dropped() == 1,
    )
    .await;
    drop(calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_a_busy_guest() {
    let mut host = TestHost::new();
    let probe = host.probe.clone();
    let mut calls = Calls::new(4);
    // Generous bounds, as above.
    let limits = limits(60_000);
    let cancel = limits.cancel.clone();
    // Cancelled once the cell is past its one request, in its loop.
    let canceller = tokio::spawn(async move {
        wait::until_async(
            "the request to be accepted",
            Duration::from_secs(45),
            async || probe.accepted.load(Ordering::SeqCst) == 1,
        )
        .await;
        // Not a wait on a condition: lets the guest get into its loop. A
        // cancellation that came sooner must abort just as promptly.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let at = Instant::now();
        cancel.cancel();
        at
    });
    let code =
        "console.log('looping'); await host('now', 1); let i = 0; while (true) { i++ } return i";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits).await;
    let returned = Instant::now();
    let cancelled_at = canceller.await.expect("canceller");
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Aborted), "{error:?}");
    let late = returned.saturating_duration_since(cancelled_at);
    assert!(late < Duration::from_secs(1), "{late:?}");
    // The loop ran in the second step; the first one's output is kept.
    assert_eq!(driven.output, vec![stdout("looping\n")]);
    assert_eq!(host.requests, vec![request(1, "now", json!(1))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_already_cancelled_run_aborts_without_running_guest_code() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let limits = limits(10_000);
    limits.cancel.cancel();
    let code = "console.log('ran'); await host('now', 1); return 'ran'";
    let started = Instant::now();
    let driven = drive(&mut host, &mut calls, fresh(code), &limits).await;
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Aborted), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(driven.output, vec![]);
    assert_eq!(host.requests, vec![]);
    assert_eq!(calls.in_flight(), &BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_awaiting_what_nothing_settles_is_stalled() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let code = "console.log('x'); const a = await host('now', 1); \
                await new Promise(() => {}); return a";
    let started = Instant::now();
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(10_000)).await;
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Stalled), "{error:?}");
    // At once, not at the deadline.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(driven.output, vec![stdout("x\n")]);

    // A yield the host forgets to answer leaves the live cell nothing to
    // wait for: the driver reports the stall itself.
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let driven = drive(
        &mut host,
        &mut calls,
        fresh("return await host('yield')"),
        &limits(10_000),
    )
    .await;
    let machine = suspended(driven.halt, Suspend::Yield);
    calls.set_yielded(None);
    let driven = drive(&mut host, &mut calls, machine, &limits(10_000)).await;
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Stalled), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_guest_past_the_deadline_times_out() {
    let mut host = TestHost::new();
    let mut calls = Calls::new(4);
    let driven = drive(
        &mut host,
        &mut calls,
        fresh("while (true) {}"),
        &limits(300),
    )
    .await;
    let error = failed(driven.halt);
    assert!(matches!(error, SandboxError::Timeout(_)), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_at_most_max_concurrent_at_once() {
    let mut host = TestHost::new();
    let probe = host.probe.clone();
    let mut calls = Calls::new(2);
    let code = "return await Promise.all([1, 2, 3, 4, 5, 6].map((i) => host('count', i)))";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(10_000)).await;
    assert_eq!(completed(driven.halt), json!([1, 2, 3, 4, 5, 6]));
    assert_eq!(probe.max_running.load(Ordering::SeqCst), 2);
    assert_eq!(probe.running.load(Ordering::SeqCst), 0);
    assert_eq!(host.requests.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_calls_aborts_its_running_calls() {
    let mut host = TestHost::new();
    let probe = host.probe.clone();
    let mut calls = Calls::new(4);
    let code = "return await Promise.all([host('forever'), host('forever')])";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(200)).await;
    let machine = suspended(driven.halt, Suspend::Deadline);
    assert_eq!(
        calls.in_flight(),
        &BTreeMap::from([(1, "forever".to_owned()), (2, "forever".to_owned())])
    );
    assert_eq!(probe.started(), 2);
    assert_eq!(probe.dropped(), 0);
    drop(machine);
    drop(calls);
    wait::until_async(
        "the calls' futures to be dropped",
        wait::DEADLINE,
        async || probe.dropped() == 2,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_calls_never_starts_a_queued_call() {
    let mut host = TestHost::new();
    let probe = host.probe.clone();
    // One permit: the first call runs, the other three wait for it.
    let mut calls = Calls::new(1);
    let code = "return await Promise.all([1, 2, 3, 4].map(() => host('forever')))";
    let driven = drive(&mut host, &mut calls, fresh(code), &limits(200)).await;
    let machine = suspended(driven.halt, Suspend::Deadline);
    assert_eq!(calls.in_flight().len(), 4);
    assert_eq!(probe.started(), 1);
    assert_eq!(probe.dropped(), 0);
    drop(machine);
    drop(calls);
    wait::until_async(
        "the calls' futures to be dropped",
        wait::DEADLINE,
        async || probe.dropped() == 4,
    )
    .await;
    // Not a wait on a condition: gives a wrongly started call time to
    // show (nothing signals a start that must not happen).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(probe.started(), 1);
}
