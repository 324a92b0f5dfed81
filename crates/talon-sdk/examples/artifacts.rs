//! Downloading artifacts: run an agent, then save every artifact it left
//! (its trajectory, files, diffs, logs) into a directory
//! (`$TALON_ARTIFACTS_DIR`, else `./artifacts`).
//!
//! ```sh
//! TALON_URL=... TALON_TOKEN=... cargo run -p talon-sdk --example artifacts -- "Edit the notes"
//! ```
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use talon_sdk::Talon;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("TALON_URL")?;
    let token = std::env::var("TALON_TOKEN")?;
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    anyhow::ensure!(!prompt.is_empty(), "usage: artifacts PROMPT...");
    let dir = std::path::PathBuf::from(
        std::env::var("TALON_ARTIFACTS_DIR").unwrap_or_else(|_| "artifacts".into()),
    );
    tokio::fs::create_dir_all(&dir).await?;

    let talon = Talon::connect(url, token).await?;
    let run = talon.agent("main").run(prompt).await?;
    let result = run.wait().await?;
    println!("run {} ended {:?}", run.id(), result.status);

    let artifacts = run.artifacts().await?;
    anyhow::ensure!(!artifacts.is_empty(), "the run left no artifact");
    for artifact in artifacts {
        // The id is the gateway's; keep only safe characters in the name.
        let name: String = artifact
            .id
            .as_str()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(name);
        let mut file = tokio::fs::File::create(&path).await?;
        let bytes = artifact.download(&mut file).await?;
        println!(
            "{:?} {} → {} ({bytes} bytes)",
            artifact.kind,
            artifact.title.as_deref().unwrap_or(""),
            path.display()
        );
    }
    Ok(())
}
