//! Reconnecting with a cursor: follow a run's events, save the last id,
//! drop the connection, and pick up where it left off from another
//! connection, with no event lost and none repeated. (`Run::events`
//! already resumes by itself after a dropped connection; a saved cursor
//! is for resuming in another process, after a restart.)
//!
//! ```sh
//! TALON_URL=... TALON_TOKEN=... cargo run -p talon-sdk --example reconnect -- "Tell me a story"
//! ```
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use futures::StreamExt as _;
use talon_sdk::Talon;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("TALON_URL")?;
    let token = std::env::var("TALON_TOKEN")?;
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    anyhow::ensure!(!prompt.is_empty(), "usage: reconnect PROMPT...");

    let talon = Talon::connect(&url, &token).await?;
    let run = talon.agent("main").run(prompt).await?;

    // Read two events, then "crash": keep only the run id and the cursor.
    let mut events = run.events();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match events.next().await {
            Some(event) => seen.push(event?.id),
            None => break,
        }
    }
    let cursor = events.cursor();
    let run_id = run.id().to_owned();
    drop(events);
    drop(run);
    println!("saved run {run_id} at cursor {cursor:?} after {seen:?}");

    // Later, elsewhere: a new connection resumes after the cursor.
    let talon = Talon::connect(&url, &token).await?;
    let run = talon.run(&run_id).await?;
    let mut rest = match cursor {
        Some(cursor) => run.events_after(cursor),
        None => run.events(),
    };
    while let Some(event) = rest.next().await {
        let event = event?;
        println!("{} {}", event.id, event.kind.as_str());
        seen.push(event.id);
    }

    // Check against the whole log: nothing lost, nothing twice.
    let mut whole = Vec::new();
    let mut all = run.events();
    while let Some(event) = all.next().await {
        whole.push(event?.id);
    }
    anyhow::ensure!(seen == whole, "resumed {seen:?}, stored {whole:?}");
    println!("resumed {} events with no gap and no duplicate", seen.len());
    Ok(())
}
