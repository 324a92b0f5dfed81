//! Crash safety: a child process appends events and updates a run, and is
//! killed with SIGKILL at a random point, many times. Every append that
//! returned is there afterwards, nothing is torn, and the store opens
//! cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use talon_protocol::EventType;
use talon_store::{EventFilter, StoreConfig};

use super::events::event;

const CHILD: &str = "TALON_STORE_CRASH_CHILD";

/// The child process of `appends_that_returned_survive_sigkill` (this test
/// binary, run again with the store's directory in the environment): it
/// appends batches forever, printing each returned last id. In a normal run
/// the variable is absent and it returns at once. (`#[ignore]` would not do:
/// nextest's environment makes the child skip ignored tests even when asked
/// for them.)
#[tokio::test]
async fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let store = talon_store::open(&StoreConfig::embedded(dir))
        .await
        .unwrap();
    for n in 0.. {
        let batch = (0..(1 + n % 7))
            .map(|i| event("r1", EventType::AssistantDelta, n, i))
            .collect();
        let stored = store.append(batch).await.unwrap();
        println!("{}", stored.last().unwrap().id);
    }
}

#[test]
fn appends_that_returned_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut confirmed = 0u64;
    for round in 0..12 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "suite::crash::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(50 + seed % 250);
        let stdout = child.stdout.take().unwrap();
        let started = Instant::now();
        let reader = std::thread::spawn(move || {
            let mut last = 0u64;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(id) = line.trim().parse::<u64>() {
                    last = id;
                }
            }
            last
        });
        while started.elapsed() < run_for {
            std::thread::sleep(Duration::from_millis(5));
        }
        // SIGKILL: no destructor, no flush.
        child.kill().unwrap();
        child.wait().unwrap();
        let last_reported = reader.join().unwrap();
        confirmed = confirmed.max(last_reported);
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let store = talon_store::open(&StoreConfig::embedded(dir.path()))
                .await
                .unwrap();
            let mut events = Vec::new();
            let mut cursor = None;
            // Page through everything (pages are capped).
            loop {
                let page = store
                    .after(cursor, &EventFilter::default(), 10_000)
                    .await
                    .unwrap();
                let Some(last) = page.last() else { break };
                cursor = Some(last.id.parse().unwrap());
                events.extend(page);
            }
            let ids: Vec<u64> = events.iter().map(|e| e.id.parse().unwrap()).collect();
            // Every confirmed append is there; ids are contiguous from 1.
            assert!(
                ids.last().copied().unwrap_or(0) >= confirmed,
                "round {round}: confirmed {confirmed}, stored up to {:?}",
                ids.last()
            );
            assert!(
                ids.iter().enumerate().all(|(i, &id)| id == i as u64 + 1),
                "round {round}: a gap"
            );
            assert!(
                events.iter().all(|e| e.data["text"].is_string()),
                "round {round}: torn data"
            );
            store.close().await;
        });
    }
    assert!(confirmed > 0, "the child never appended");
}
