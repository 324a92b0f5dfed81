//! The child process of talon-store's crash tests (`tests/suite/crash.rs`),
//! not a tool: it opens the store in `TALON_STORE_CRASH_CHILD` (a state
//! directory; `TALON_STORE_CRASH_URL` names a PostgreSQL database instead of
//! the embedded SQLite), then appends batches of events and counts them in a
//! run's usage forever, printing `<last event id> <count>` after each
//! returned write, until its parent SIGKILLs it. A program of its own, so
//! that no test in the suite does nothing in a normal run.

#![allow(
    clippy::print_stdout,
    clippy::expect_used,
    reason = "a test's helper process: it reports on stdout and fails loudly"
)]

use serde_json::json;
use talon_protocol::gateway::bounded::{AgentId, RunId, SessionId, SessionKey};
use talon_protocol::gateway::{Run, RunStatus, Usage};
use talon_protocol::{Event, EventType};
use talon_store::StoreConfig;

fn event(n: u64, i: u64) -> Event {
    Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts: n,
        kind: EventType::AssistantDelta,
        run_id: Some(RunId::new("r1")),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new("key-r1")),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"text": format!("delta {i}")}),
        raw: None,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::var_os("TALON_STORE_CRASH_CHILD").expect("TALON_STORE_CRASH_CHILD");
    let config = match std::env::var("TALON_STORE_CRASH_URL") {
        Ok(url) => StoreConfig::at(url, dir),
        Err(_) => StoreConfig::embedded(dir),
    };
    let store = talon_store::open(&config).await.expect("the store");
    let run = Run {
        summary: None,
        model: None,
        subject: None,
        id: RunId::new("r1"),
        agent_id: AgentId::new("main"),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new("k")),
        status: RunStatus::Queued,
        created_at: 1,
        started_at: None,
        ended_at: None,
        usage: None,
        error: None,
    };
    let (mut current, _) = store
        .create_run(&run, Some("crash"), "h", "child", None)
        .await
        .expect("the run");
    let mut count = current
        .usage
        .as_ref()
        .and_then(|u| u.total_tokens)
        .unwrap_or(0);
    for n in 0.. {
        let batch = (0..(1 + n % 7)).map(|i| event(n, i)).collect();
        let stored = store.append(batch).await.expect("an append");
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
        assert!(store.update_run(&current).await.expect("an update"));
        let last = stored.last().expect("the batch's last event");
        println!("{} {count}", last.id);
    }
}
