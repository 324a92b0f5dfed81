//! Quickstart: run an agent, stream its events, print the result.
//!
//! ```sh
//! TALON_URL=http://127.0.0.1:7777 TALON_TOKEN=talon_... \
//!   cargo run -p talon-sdk --example quickstart -- "What is in the README?"
//! ```
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use futures::StreamExt as _;
use talon_sdk::Talon;
use talon_sdk::protocol::EventData;
use talon_sdk::protocol::gateway::RunResultStatus;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("TALON_URL")?;
    let token = std::env::var("TALON_TOKEN")?;
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    anyhow::ensure!(!prompt.is_empty(), "usage: quickstart PROMPT...");

    let talon = Talon::connect(url, token).await?;
    let run = talon.agent("main").run(prompt).await?;
    println!("run {}", run.id());

    let mut events = run.events();
    while let Some(event) = events.next().await {
        let event = event?;
        match event.typed() {
            Some(EventData::AssistantDelta(delta)) => print!("{}", delta.text),
            Some(EventData::ToolCallStarted(call)) => println!("\n→ {}", call.name),
            _ => {}
        }
    }

    let result = run.wait().await?;
    println!("\nstatus: {:?}", result.status);
    if let Some(text) = result.output.and_then(|o| o.text) {
        println!("answer: {text}");
    }
    anyhow::ensure!(
        result.status == RunResultStatus::Completed,
        "the run ended {:?}: {:?}",
        result.status,
        result.error
    );
    Ok(())
}
