//! Fan out: a run that spawns three sub-agents (its agent needs a
//! `subagents` section in the gateway's config), each a background task;
//! list the tasks the run started (`run.tasks()`), follow one's events,
//! and gather every answer with `task.wait()` (which follows the event
//! log, never polls).
//!
//! ```sh
//! TALON_URL=http://127.0.0.1:7777 TALON_TOKEN=talon_... \
//!   cargo run -p talon-sdk --example fan_out -- "Check each part of the notes"
//! ```
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use futures::StreamExt as _;
use talon_sdk::Talon;
use talon_sdk::protocol::gateway::RunResultStatus;
use talon_sdk::protocol::gateway::tasks::TaskStatus;
use talon_sdk::protocol::{EventData, EventType};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("TALON_URL")?;
    let token = std::env::var("TALON_TOKEN")?;
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    anyhow::ensure!(!prompt.is_empty(), "usage: fan_out PROMPT...");
    let wanted: usize = std::env::var("TALON_FAN_OUT")
        .unwrap_or_else(|_| "3".into())
        .parse()?;

    let talon = Talon::connect(url, token).await?;
    // The parent run asks for its helpers (the model calls
    // `sessions_spawn`) and goes on; each helper is a child run in a
    // session of its own.
    let run = talon.agent("main").run(prompt).await?;
    println!("run {}", run.id());
    let parent = run.wait().await?;
    println!("parent {:?}", parent.status);

    // The tasks the run started, newest first, every page.
    let tasks = run.tasks().await?;
    let labels: Vec<&str> = tasks
        .iter()
        .map(|t| t.label.as_deref().unwrap_or(t.id()))
        .collect();
    println!("{} sub-agents: {}", tasks.len(), labels.join(", "));
    anyhow::ensure!(
        tasks.len() == wanted,
        "expected {wanted} sub-agents, the run started {}",
        tasks.len()
    );

    // One task's own events: its changes (`task.updated`) and its child
    // run's.
    if let Some(first) = tasks.first() {
        let mut events = first.events(None);
        while let Some(event) = events.next().await {
            let event = event?;
            if event.kind == EventType::TaskUpdated
                && let Some(EventData::TaskUpdated(task)) = event.typed()
            {
                println!("  {}: {}", task.id, task.status.as_str());
            }
        }
    }

    // Gather: wait for every task to end, at most a minute in all.
    let waits = tasks.iter().map(|task| task.wait());
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        futures::future::try_join_all(waits),
    )
    .await??;
    let mut failed = Vec::new();
    for task in ended.iter().rev() {
        let answer = match task.status {
            TaskStatus::Succeeded => task.result.clone(),
            _ => task.error.as_ref().map(|e| e.message.clone()),
        };
        println!(
            "{} ({}): {}",
            task.label.as_deref().unwrap_or(task.id()),
            task.status.as_str(),
            answer.unwrap_or_else(|| "(nothing)".into())
        );
        if task.status != TaskStatus::Succeeded {
            failed.push(task.id().to_owned());
        }
    }
    anyhow::ensure!(
        parent.status == RunResultStatus::Completed && failed.is_empty(),
        "not every helper succeeded: parent {:?}, failed {failed:?}",
        parent.status
    );
    Ok(())
}
