//! Hostile shell commands: huge output, background children, process
//! trees at the timeout, and runs cancelled or dropped mid-command. Every
//! process the command starts must be gone when the call ends.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_core_tools::{CoreTools, MAX_EXEC_OUTPUT};
use talon_testing::wait;
use talon_tools::ToolErrorCode;

use super::core_tools::{call, context, execute, failed, runner};

/// Whether process `pid` is gone (or a zombie awaiting its reaper).
pub(super) fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits for `pid` to be gone after `what` (the kill is asynchronous).
async fn wait_gone(pid: i32, what: &str) {
    wait::until_async(
        &format!("process {pid} to be gone after {what}"),
        wait::DEADLINE,
        async || gone(pid),
    )
    .await;
}

/// A sleep length no other test's command uses (`300.<n>`), so that the
/// host finds a command's processes by it: pids written from inside the
/// sandbox are its own PID namespace's, which mean nothing outside.
pub(super) fn marker(base: u32) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "{base}.{}{}",
        std::process::id() % 10_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The host pids of processes whose command line holds `needle`.
pub(super) fn host_pids(needle: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != std::process::id() as i32)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .collect()
}

/// Waits for the command to write `count` lines in `file` (its processes
/// are then running), and returns the host pids of the processes whose
/// command line holds one of `needles`.
async fn pids_in(file: &Path, count: usize, needles: &[&str]) -> Vec<i32> {
    wait::until_async(
        &format!("{} to hold {count} lines", file.display()),
        wait::DEADLINE,
        async || {
            let text = std::fs::read_to_string(file).ok()?;
            (text.lines().count() >= count).then_some(())
        },
    )
    .await;
    let pids: Vec<i32> = needles.iter().flat_map(|n| host_pids(n)).collect();
    assert!(pids.len() >= needles.len(), "{needles:?}: {pids:?}");
    pids
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn exec(dir: &Path, args: Value) -> Value {
    let (runner, ctx) = runner(dir);
    tokio::time::timeout(Duration::from_secs(20), call(&runner, &ctx, "exec", args))
        .await
        .expect("exec hung")
}

#[tokio::test]
async fn huge_output_is_capped_while_it_streams() {
    let ws = tempfile::tempdir().unwrap();
    let before = peak_rss_kib();
    let result = exec(
        ws.path(),
        json!({"command": "yes | head -c 200000000; yes e | head -c 100000000 >&2; echo done >&2"}),
    )
    .await;
    let grown = peak_rss_kib().saturating_sub(before);
    assert_eq!(
        result,
        json!({"exitCode": 0, "stdout": "y\n".repeat(MAX_EXEC_OUTPUT / 2),
               "stderr": "e\n".repeat(MAX_EXEC_OUTPUT / 2), "truncated": true})
    );
    // Buffering 300 MB would show; other tests share the process, so the
    // bound is loose.
    assert!(grown < 128 * 1024, "peak RSS grew by {grown} KiB");
}

#[tokio::test]
async fn background_children_do_not_outlive_the_call() {
    let ws = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (a, b, c) = (marker(300), marker(299), marker(298));
    let result = exec(
        ws.path(),
        json!({"command": format!("sleep {a} & echo started; (sleep {b} & sleep {c}) & setsid sleep {c} & exit 0")}),
    )
    .await;
    assert_eq!(
        (
            &result["exitCode"],
            &result["stdout"],
            &result["stderr"],
            &result["truncated"]
        ),
        (&json!(0), &json!("started\n"), &json!(""), &json!(false))
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Nothing of the command is left, `setsid` or not.
    all_gone(&[&a, &b, &c]).await;
}

#[tokio::test]
async fn the_timeout_kills_the_whole_group_with_grandchildren() {
    let ws = tempfile::tempdir().unwrap();
    let pids = ws.path().join("pids");
    let started = Instant::now();
    let (a, b, c) = (marker(300), marker(301), marker(302));
    let command = format!("(sleep {a} & echo $! >> pids; sleep {b}) & echo $! >> pids; sleep {c}");
    let result = exec(ws.path(), json!({"command": command, "timeoutMs": 1000})).await;
    assert_eq!(
        result,
        failed(
            ToolErrorCode::Timeout,
            "the command did not finish within 1000 ms and was killed"
        )
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The command was killed before this looks: its processes are found
    // by their marks, and none may be left.
    let _ = pids;
    all_gone(&[&a, &b, &c]).await;
}

/// The command of the cancellation tests: two background sleeps (of
/// lengths `a` and `b`) whose pids it writes to `pids`, then waits.
fn two_sleeps(a: &str, b: &str) -> String {
    format!("sleep {a} & echo $! >> pids; (sleep {b} & echo $! >> pids; wait) & wait")
}

#[tokio::test]
async fn cancelling_the_run_kills_the_group() {
    let ws = tempfile::tempdir().unwrap();
    let (runner, ctx) = runner(ws.path());
    let cancel = ctx.cancel.clone();
    let pids = ws.path().join("pids");
    let (a, b) = (marker(300), marker(301));
    let command = two_sleeps(&a, &b);
    let watcher = {
        let pids = pids.clone();
        tokio::spawn(async move {
            let found = pids_in(&pids, 2, &[&format!("sleep {a}"), &format!("sleep {b}")]).await;
            cancel.cancel();
            (found, Instant::now())
        })
    };
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        call(&runner, &ctx, "exec", json!({"command": command})),
    )
    .await
    .expect("exec ignored the cancellation");
    let (found, cancelled_at) = watcher.await.unwrap();
    // The runner drops the call at once (which kills the group).
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    assert_eq!(
        result,
        json!({"error": "the run was aborted", "status": "aborted"})
    );
    for pid in found {
        wait_gone(pid, "the cancellation").await;
    }
}

#[tokio::test]
async fn the_shell_itself_waits_on_the_cancellation_token() {
    // Called without the runner (which would drop it): the command sees
    // the token, kills its group and says why.
    let ws = tempfile::tempdir().unwrap();
    let core = CoreTools::new(ws.path()).unwrap();
    let ctx = context();
    let cancel = ctx.cancel.clone();
    let pids = ws.path().join("pids");
    let (a, b) = (marker(300), marker(301));
    let command = two_sleeps(&a, &b);
    let watcher = tokio::spawn(async move {
        let found = pids_in(&pids, 2, &[&format!("sleep {a}"), &format!("sleep {b}")]).await;
        cancel.cancel();
        (found, Instant::now())
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        execute(&core, &ctx, "exec", json!({"command": command})),
    )
    .await
    .expect("exec ignored the cancellation");
    let (found, cancelled_at) = watcher.await.unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(3));
    let error = result.unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str(), error.retryable),
        (
            ToolErrorCode::Aborted,
            "the run was aborted; the command was killed",
            false
        )
    );
    for pid in found {
        wait_gone(pid, "the cancellation").await;
    }
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let ws = tempfile::tempdir().unwrap();
    let pids = ws.path().join("pids");
    let dir = ws.path().to_path_buf();
    let a = marker(300);
    let command = format!("sleep {a} & echo $! >> pids; echo $$ >> pids; wait");
    let task = tokio::spawn(async move {
        let (runner, ctx) = runner(&dir);
        call(&runner, &ctx, "exec", json!({"command": command})).await
    });
    let found = pids_in(&pids, 2, &[&format!("sleep {a}")]).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    for pid in found {
        wait_gone(pid, "the dropped call").await;
    }
}

/// Waits until no process of `sleep <marker>` is left on the host, for
/// each marker.
pub(super) async fn all_gone(markers: &[&str]) {
    wait::until_async(
        "the command's processes to be gone",
        wait::DEADLINE,
        async || {
            markers
                .iter()
                .all(|m| host_pids(&format!("sleep {m}")).into_iter().all(gone))
        },
    )
    .await;
}
