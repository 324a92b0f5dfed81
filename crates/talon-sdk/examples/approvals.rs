//! An approval policy: the app approves writes inside the workspace once,
//! refuses anything else, and leaves shell commands to a person.
//!
//! ```sh
//! TALON_URL=... TALON_TOKEN=... cargo run -p talon-sdk --example approvals -- "Write notes.txt"
//! ```
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use talon_sdk::protocol::gateway::{ApprovalKind, RunResultStatus};
use talon_sdk::{Approval, ApprovalAction, Talon};

/// The app's policy, in the seed's shape: it reads the tool's name as the
/// model calls it (`toolName`); `toolId` (the catalog id,
/// `openclaw:core:write`) says exactly which tool that is, where two
/// tools share a name.
fn policy(approval: &Approval) -> ApprovalAction {
    if approval.kind != ApprovalKind::Tool {
        return ApprovalAction::AskUser;
    }
    let tool = approval.tool_name.as_deref().unwrap_or_default();
    let path = approval
        .arguments
        .as_ref()
        .and_then(|a| a.get("path"))
        .and_then(|p| p.as_str())
        .unwrap_or_default();
    let inside = !path.is_empty() && !path.starts_with('/') && !path.contains("..");
    println!(
        "approval {}: {tool} ({}) {path}",
        approval.id,
        approval.tool_id.as_deref().unwrap_or("?")
    );
    match tool {
        "write" | "edit" if inside => {
            ApprovalAction::approve_once_because("a write inside the workspace")
        }
        "write" | "edit" => ApprovalAction::Deny {
            reason: format!("{path} is outside the workspace"),
        },
        "exec" => ApprovalAction::AskUser,
        _ => ApprovalAction::Deny {
            reason: format!("{tool} is not allowed by this app"),
        },
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("TALON_URL")?;
    let token = std::env::var("TALON_TOKEN")?;
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    anyhow::ensure!(!prompt.is_empty(), "usage: approvals PROMPT...");

    let talon = Talon::connect(url, token).await?;
    let mut run = talon.agent("main").run(prompt).await?;
    run.on_approval(policy);
    let result = run.wait().await?;

    for approval in run.approvals().await? {
        println!(
            "{} ({}) {:?} → {:?} {:?}",
            approval.tool_name.as_deref().unwrap_or("?"),
            approval.tool_id.as_deref().unwrap_or("?"),
            approval.arguments,
            approval.status,
            approval.decision
        );
    }
    println!("status: {:?}", result.status);
    anyhow::ensure!(
        result.status == RunResultStatus::Completed,
        "{:?}",
        result.error
    );
    Ok(())
}
