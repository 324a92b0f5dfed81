//! The worker pool: guest code runs off the async runtime, many VMs at once.

use std::time::{Duration, Instant};

use serde_json::json;
use talon_sandbox::{CellStatus, HostFunctions, Limits, Pool, SandboxError, VmOptions};

use super::sandbox;

#[tokio::test(flavor = "current_thread")]
async fn many_vms_run_concurrently_without_blocking_the_runtime() {
    let pool = Pool::new(sandbox()).unwrap();
    // A timer on the (single-threaded) runtime keeps ticking while a guest
    // spins: guest code is not on this thread.
    let spinner = pool.run(|sb| {
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let mut vm = sb.create_vm(
            VmOptions {
                limits,
                ..Default::default()
            },
            HostFunctions::new(),
        )?;
        vm.run_cell("while (true) {}")
    });
    let ticker = async {
        let started = Instant::now();
        // Not a wait: a timer, late only if the runtime is blocked.
        tokio::time::sleep(Duration::from_millis(50)).await;
        started.elapsed()
    };
    let (spun, ticked) = tokio::join!(spinner, ticker);
    assert!(matches!(spun.unwrap(), Err(SandboxError::Timeout(300))));
    assert!(
        ticked < Duration::from_millis(250),
        "the runtime was blocked for {ticked:?}"
    );

    let pool = std::sync::Arc::new(pool);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.run(move |sb| {
                    let mut vm = sb.create_vm(VmOptions::default(), HostFunctions::new())?;
                    vm.run_cell(&format!("return {i} * 2"))
                })
                .await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(
            task.await.unwrap().unwrap().unwrap(),
            CellStatus::Completed(json!(i * 2))
        );
    }
}
