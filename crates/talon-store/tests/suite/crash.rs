//! Crash safety, on both backends: a child process appends events and
//! updates a run, and is killed with SIGKILL at a random point, many
//! times. Every append and update that returned is there afterwards,
//! nothing is torn, ids have no gaps, and the store opens cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use talon_protocol::EventType;
use talon_protocol::gateway::{RunStatus, Usage};
use talon_store::StoreConfig;

use super::backend::{Kind, config_for};
use super::events::{event, everything};
use super::runs::run;

const CHILD: &str = "TALON_STORE_CRASH_CHILD";
const CHILD_URL: &str = "TALON_STORE_CRASH_URL";

/// The child process of the crash tests (this test binary, run again with
/// the store in the environment): it appends batches and counts them in a
/// run's usage forever, printing `<last event id> <count>` after each
/// returned write. In a normal run the variable is absent and it returns
/// at once. (`#[ignore]` would not do: nextest's environment makes the
/// child skip ignored tests even when asked for them.)
#[tokio::test]
async fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let config = match std::env::var(CHILD_URL) {
        Ok(url) => StoreConfig::at(url, dir),
        Err(_) => StoreConfig::embedded(dir),
    };
    let store = talon_store::open(&config).await.unwrap();
    let (mut current, _) = store
        .create_run(&run("r1"), Some("crash"), "h", "child", None)
        .await
        .unwrap();
    let mut count = current
        .usage
        .as_ref()
        .and_then(|u| u.total_tokens)
        .unwrap_or(0);
    for n in 0.. {
        let batch = (0..(1 + n % 7))
            .map(|i| event("r1", EventType::AssistantDelta, n, i))
            .collect();
        let stored = store.append(batch).await.unwrap();
        count += 1;
        current.status = RunStatus::Running;
        current.usage = Some(Usage {
            total_tokens: Some(count),
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost_usd: None,
        });
        assert!(store.update_run(&current).await.unwrap());
        println!("{} {count}", stored.last().unwrap().id);
    }
}

fn crash_many_times(kind: Kind, rounds: u32) {
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(kind, &dir);
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut confirmed_id, mut confirmed_count) = (0u64, 0u64);
    for round in 0..rounds {
        let mut command = Command::new(&exe);
        command
            .args([
                "--exact",
                "suite::crash::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
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
            let ids: Vec<u64> = events.iter().map(|e| e.id.parse().unwrap()).collect();
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
            let stored = store.run("r1").await.unwrap();
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
