//! Crash safety, on both backends: a child process appends events and
//! updates a run, and is killed with SIGKILL at a random point, many
//! times. Every append and update that returned is there afterwards,
//! nothing is torn, ids have no gaps, and the store opens cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::backend::{Kind, config_for};
use super::events::everything;

const CHILD: &str = "TALON_STORE_CRASH_CHILD";
const CHILD_URL: &str = "TALON_STORE_CRASH_URL";

fn crash_many_times(kind: Kind, rounds: u32) {
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(kind, &dir);
    // The child: `src/bin/talon-store-crash-child.rs`.
    let exe = env!("CARGO_BIN_EXE_talon-store-crash-child");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut confirmed_id, mut confirmed_count) = (0u64, 0u64);
    for round in 0..rounds {
        let mut command = Command::new(exe);
        command
            .env(CHILD, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(url) = &config.url {
            command.env(CHILD_URL, url);
        }
        let mut child = command.spawn().unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(150 + seed % 250);
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut last = (0u64, 0u64);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((id, count)) = line.trim().split_once(' ')
                    && let (Ok(id), Ok(count)) = (id.parse(), count.parse())
                {
                    last = (id, count);
                }
            }
            last
        });
        // Not a wait on a condition: the child appends for a random while,
        // then is killed wherever it is.
        std::thread::sleep(run_for);
        // SIGKILL: no destructor, no flush.
        child.kill().unwrap();
        child.wait().unwrap();
        let (id, count) = reader.join().unwrap();
        confirmed_id = confirmed_id.max(id);
        confirmed_count = confirmed_count.max(count);
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let store = talon_store::open(&config).await.unwrap();
            let events = everything(&store, None).await;
            let ids: Vec<u64> = events
                .iter()
                .map(|e| e.id.as_str().parse().unwrap())
                .collect();
            assert!(
                ids.last().copied().unwrap_or(0) >= confirmed_id,
                "round {round}: confirmed {confirmed_id}, stored up to {:?}",
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
            let stored = store
                .run(&talon_protocol::gateway::bounded::RunId::new("r1"))
                .await
                .unwrap();
            let count = stored
                .as_ref()
                .and_then(|r| r.usage.as_ref())
                .and_then(|u| u.total_tokens)
                .unwrap_or(0);
            assert!(
                count >= confirmed_count,
                "round {round}: run update lost ({count} < {confirmed_count})"
            );
            store.close().await;
        });
    }
    assert!(confirmed_id > 0, "the child never appended");
}

#[test]
fn sqlite_appends_that_returned_survive_sigkill() {
    crash_many_times(Kind::Sqlite, 12);
}

#[test]
fn postgres_appends_that_returned_survive_sigkill() {
    crash_many_times(Kind::Postgres, 12);
}
