//! `talon agent --gateway URL`: the same one-shot turn as the in-process
//! `talon agent`, run on a gateway through the App SDK (`talon-sdk`), with
//! the same display. The run's events stream (resuming by themselves
//! after a dropped connection); an approval the gateway asks for is asked
//! on the terminal and answered with `approvals.respond` (refused when
//! stdin is not a terminal, as in-process); an `ask_user` question is
//! asked and answered with `questions.respond`. Ctrl-C cancels the run.
//!
//! The token: `--token`, else `$TALON_TOKEN`, else the admin token the
//! gateway wrote into the state directory on its first start.
//!
//! Exit status: 0 completed, 1 failed / cancelled / timed out or the
//! gateway failed, 2 usage (no token, a bad URL, no gateway there).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use futures::StreamExt as _;
use talon_protocol::EventData;
use talon_protocol::gateway::RunResultStatus;
use talon_sdk::{Approval, Question, Run, Talon};

use crate::agent::{AgentArgs, print_event, usage};

/// The token to use, and where it came from.
fn token(args: &AgentArgs) -> Result<String, String> {
    if let Some(token) = &args.token {
        return Ok(token.clone());
    }
    if let Ok(token) = std::env::var("TALON_TOKEN")
        && !token.trim().is_empty()
    {
        return Ok(token.trim().to_owned());
    }
    let path = talon_config::state_dir().join(talon_gateway::tokens::ADMIN_TOKEN_FILE);
    std::fs::read_to_string(&path)
        .map(|t| t.trim().to_owned())
        .map_err(|e| {
            format!(
                "no token: pass --token or set TALON_TOKEN ({} is unreadable: {e})",
                path.display()
            )
        })
}

pub(crate) async fn run_remote(args: AgentArgs) -> ExitCode {
    let started = Instant::now();
    let Some(url) = args.gateway.clone() else {
        return usage("--gateway URL is required here");
    };
    let token = match token(&args) {
        Ok(token) => token,
        Err(message) => return usage(&message),
    };
    let talon = match Talon::connect(&url, token).await {
        Ok(talon) => talon,
        Err(e) => return usage(&e.to_string()),
    };
    let run = match talon.agent(&args.agent).run(args.message.as_str()).await {
        Ok(run) => run,
        Err(e) => return fail(&e),
    };
    tokio::select! {
        code = follow(&run, started) => code,
        _ = tokio::signal::ctrl_c() => {
            let _ = writeln!(std::io::stderr(), "\ntalon agent: cancelling {}", run.id());
            if let Err(e) = run.cancel().await {
                return fail(&e);
            }
            ExitCode::from(1)
        }
    }
}

fn fail(error: &talon_sdk::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "talon agent: {error}");
    ExitCode::from(1)
}

/// Streams the run to the terminal, answering what it asks, then reports
/// how it ended.
async fn follow(run: &Run, started: Instant) -> ExitCode {
    let mut events = run.events();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => return fail(&e),
        };
        print_event(&event, started);
        let outcome = match event.typed() {
            Some(EventData::ApprovalRequested(info)) => {
                let approval = approval_of(run, info);
                decide(approval).await
            }
            Some(EventData::QuestionRequested(info)) => {
                let question = question_of(run, info);
                answer(question).await
            }
            _ => Ok(()),
        };
        if let Err(e) = outcome {
            // Someone else decided first: the run goes on with theirs.
            if e.code() != Some(talon_protocol::gateway::ErrorCode::Conflict) {
                return fail(&e);
            }
        }
    }
    match run.wait().await {
        Ok(result) if result.status == RunResultStatus::Completed => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => fail(&e),
    }
}

fn approval_of(run: &Run, info: talon_protocol::gateway::Approval) -> Approval {
    talon_sdk::Approval::from_parts(run.client().clone(), info)
}

fn question_of(run: &Run, info: talon_protocol::gateway::Question) -> Question {
    talon_sdk::Question::from_parts(run.client().clone(), info)
}

/// Reads one line from the terminal after `prompt` (`None` when stdin is
/// not a terminal).
async fn ask(prompt: String) -> Option<String> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    tokio::task::spawn_blocking(move || {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{prompt}");
        let _ = stderr.flush();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).ok().map(|_| line)
    })
    .await
    .ok()
    .flatten()
}

async fn decide(approval: Approval) -> talon_sdk::Result<()> {
    let what = shown(&approval);
    let arguments = approval
        .arguments
        .as_ref()
        .map(|a| a.to_string().chars().take(300).collect::<String>())
        .unwrap_or_default();
    let answer = ask(format!("approve {what} {arguments}? [y/N] ")).await;
    match answer.as_deref().map(str::trim) {
        Some("y" | "Y" | "yes") => approval.approve_once().await.map(drop),
        Some(_) => approval.deny("the user declined").await.map(drop),
        None => approval.deny(crate::agent::NO_TERMINAL).await.map(drop),
    }
}

/// What an approval asks to run, for the prompt: the tool's name and,
/// when the gateway gives it, its catalog id (`write
/// (openclaw:core:write)`: two tools may share a name); else its summary.
fn shown(approval: &talon_protocol::gateway::Approval) -> String {
    match (&approval.tool_name, &approval.tool_id) {
        (Some(name), Some(id)) if name != id => format!("{name} ({id})"),
        (Some(name), _) => name.clone(),
        (None, Some(id)) => id.clone(),
        (None, None) => approval.summary.clone(),
    }
}

async fn answer(question: Question) -> talon_sdk::Result<()> {
    let choices = question
        .choices
        .as_ref()
        .map(|c| format!(" [{}]", c.join(" / ")))
        .unwrap_or_default();
    let prompt = format!("{}{choices}\n> ", question.prompt);
    loop {
        let Some(line) = ask(prompt.clone()).await else {
            let _ = writeln!(
                std::io::stderr(),
                "talon agent: question {} waits for an answer (questions.respond); stdin is not a terminal",
                question.id
            );
            return Ok(());
        };
        let line = line.trim();
        // JSON where the question's schema wants a number, an object...;
        // else the text as typed.
        let value = match (&question.answer_schema, serde_json::from_str(line)) {
            (Some(_), Ok(value)) => value,
            _ => serde_json::Value::String(line.to_owned()),
        };
        match question.answer(value).await {
            Ok(_) => return Ok(()),
            Err(e) if e.code() == Some(talon_protocol::gateway::ErrorCode::InvalidRequest) => {
                let _ = writeln!(std::io::stderr(), "talon agent: {e}; try again");
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn an_approval_shows_its_tool_by_name_and_id() {
        let approval = |tool: serde_json::Value| -> talon_protocol::gateway::Approval {
            let mut doc = serde_json::json!({
                "id": "ap1", "runId": "r1", "kind": "tool", "summary": "write {}",
                "risk": "medium", "decisions": ["approve_once"], "reusable": true,
                "status": "pending", "createdAt": 1,
            });
            if let (Some(doc), Some(tool)) = (doc.as_object_mut(), tool.as_object()) {
                doc.extend(tool.clone());
            }
            serde_json::from_value(doc).unwrap()
        };
        let shown: Vec<String> = [
            serde_json::json!({"toolName": "write", "toolId": "openclaw:core:write"}),
            // Stored before `toolId`.
            serde_json::json!({"toolName": "openclaw:core:write"}),
            serde_json::json!({}),
        ]
        .into_iter()
        .map(|tool| shown(&approval(tool)))
        .collect();
        assert_eq!(
            shown,
            [
                "write (openclaw:core:write)",
                "openclaw:core:write",
                "write {}"
            ]
        );
    }
}
