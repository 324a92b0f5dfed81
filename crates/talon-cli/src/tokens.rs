//! `talon token create|list|revoke`: tokens made, listed and revoked in
//! the store a config names (an operator's tools, beside the gateway's
//! `tokens.*` methods), with a token's binding to a subject and agents
//! checked by the rule `tokens.create` applies (`Binding::under`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use talon_protocol::gateway::{Scope, ScopePreset, expand_scopes};

use crate::gateway::{fail, runtime, store_config};

/// The presets and scopes, for `talon token create --help`.
fn scope_help() -> String {
    let mut help = String::from("Presets:\n");
    for preset in ScopePreset::ALL {
        let scopes: Vec<&str> = preset.scopes().iter().map(|s| s.as_str()).collect();
        help.push_str(&format!(
            "  {:<18} {}\n",
            preset.as_str(),
            scopes.join(", ")
        ));
    }
    help.push_str("\nScopes:\n");
    for scope in Scope::ALL {
        let methods: Vec<&str> = scope.methods().iter().map(|m| m.name()).collect();
        let opens = if methods.is_empty() {
            String::new()
        } else {
            format!(": {}", methods.join(", "))
        };
        help.push_str(&format!(
            "  {:<18} {}{opens}\n",
            scope.as_str(),
            scope.describe()
        ));
    }
    help.push_str("\nExample: talon token create --preset app --name web --expires-in 30d");
    help
}

/// The preset `--preset` names, or the exit of a command given another
/// word (saying which are known).
pub(crate) fn preset_named(word: &str) -> Result<ScopePreset, ExitCode> {
    ScopePreset::parse(word).ok_or_else(|| {
        let known: Vec<&str> = ScopePreset::ALL.iter().map(|p| p.as_str()).collect();
        fail(
            2,
            &format!("--preset {word:?}: expected one of {}", known.join(", ")),
        )
    })
}

/// `talon token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint a token and print it once, alone on its line.
    #[command(after_long_help = scope_help())]
    Create {
        /// What it may do, as a preset: `app`, `viewer`, `observer` or `admin`
        /// (`--help` lists their scopes).
        #[arg(long, required_unless_present = "scopes")]
        preset: Option<String>,
        /// What it may do, scope by scope (`agent.run`) or preset by preset;
        /// repeat or separate with commas; adds to `--preset`. `--help`
        /// lists them all.
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// A name for people.
        #[arg(long)]
        name: Option<String>,
        /// How long it lives (`30d`, `12h`, `15m`, `90s`, `2w`).
        #[arg(long)]
        expires_in: Option<String>,
        /// Bind it to a subject (an app's user or tenant): it sees and
        /// acts only on that subject's sessions, runs and what they made.
        #[arg(long)]
        subject: Option<String>,
        /// Bind it to agents: it sees, runs and reads only theirs; repeat
        /// or separate with commas.
        #[arg(long = "agent", value_delimiter = ',')]
        agents: Vec<String>,
        /// The config file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// List tokens (never their secrets).
    List {
        /// The config file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Revoke a token by id.
    Revoke {
        /// The token's id (`tok_...`).
        id: String,
        /// The config file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

pub fn run_token(command: TokenCommand) -> ExitCode {
    let config = match &command {
        TokenCommand::Create { config, .. }
        | TokenCommand::List { config }
        | TokenCommand::Revoke { config, .. } => config.clone(),
    };
    let (_, store) = match store_config(config.as_deref()) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let store = match talon_store::open(&store).await {
            Ok(store) => store,
            Err(e) => return fail(1, &e.to_string()),
        };
        let now = store.now_ms();
        let code = match command {
            TokenCommand::Create {
                preset,
                scopes,
                name,
                expires_in,
                subject,
                agents,
                ..
            } => {
                if let Some(preset) = &preset
                    && let Err(code) = preset_named(preset)
                {
                    return code;
                }
                let words = preset.iter().chain(&scopes).map(String::as_str);
                let parsed = match expand_scopes(words) {
                    Ok(parsed) => parsed,
                    Err(message) => return fail(2, &format!("--scope: {message}")),
                };
                let binding = match binding(subject, agents, &parsed) {
                    Ok(binding) => binding,
                    Err(message) => return fail(2, &message),
                };
                let expires_at = match expires_in.as_deref() {
                    None => None,
                    Some(text) => match talon_gateway::tokens::parse_duration(text) {
                        Some(d) => Some(now.saturating_add(d.as_millis() as u64)),
                        None => {
                            return fail(
                                2,
                                &format!(
                                    "--expires-in {text:?}: expected a number and s, m, h, d or w"
                                ),
                            );
                        }
                    },
                };
                let named = (name, &binding);
                match talon_gateway::tokens::create_bound(&store, named, parsed, expires_at, now)
                    .await
                {
                    Ok(minted) => {
                        let _ = writeln!(std::io::stdout(), "{}", minted.secret);
                        let _ = writeln!(
                            std::io::stderr(),
                            "talon token: created {}",
                            minted.stored.id
                        );
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(1, &e.to_string()),
                }
            }
            TokenCommand::List { .. } => match store.tokens().await {
                Ok(tokens) => {
                    let mut out = std::io::stdout().lock();
                    for t in tokens {
                        let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
                        let state = if t.revoked_at.is_some() {
                            "revoked"
                        } else if !t.is_live(now) {
                            "expired"
                        } else {
                            "live"
                        };
                        // Then its subject and agents, and last the token
                        // that minted it.
                        let agents = t.agents.as_ref().map(|a| a.join(","));
                        let _ = writeln!(
                            out,
                            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                            t.id,
                            state,
                            t.name.as_deref().unwrap_or("-"),
                            scopes.join(","),
                            t.subject.as_deref().unwrap_or("-"),
                            agents.as_deref().unwrap_or("-"),
                            t.parent_id.as_deref().unwrap_or("-")
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(1, &e.to_string()),
            },
            // The tokens minted under it go with it.
            TokenCommand::Revoke { id, .. } => match store.revoke_token_tree(&id, now).await {
                Ok(Some(revoked)) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "talon token: revoked {}",
                        revoked.join(" ")
                    );
                    ExitCode::SUCCESS
                }
                Ok(None) => fail(1, &format!("no token {id:?}")),
                Err(e) => fail(1, &e.to_string()),
            },
        };
        store.close().await;
        code
    })
}

/// `--subject` and `--agent` as a binding, by the rule `tokens.create`
/// applies (`Binding::under`): the message names the flag at fault.
fn binding(
    subject: Option<String>,
    agents: Vec<String>,
    scopes: &[talon_protocol::gateway::Scope],
) -> Result<talon_protocol::gateway::Binding, String> {
    use talon_protocol::gateway::bounded::{AgentId, Subject};
    if let Some(s) = &subject {
        Subject::check(s).map_err(|e| format!("--subject: {e}"))?;
    }
    for agent in &agents {
        AgentId::check(agent).map_err(|e| format!("--agent: {e}"))?;
    }
    let asked = talon_protocol::gateway::Binding {
        subject: subject.map(Subject::new),
        agents: (!agents.is_empty()).then(|| agents.into_iter().map(AgentId::new).collect()),
    };
    asked
        .under(scopes, &talon_protocol::gateway::Binding::default())
        .map_err(|e| {
            let field = e
                .details
                .as_ref()
                .and_then(|d| d.field.as_deref())
                .unwrap_or("scope");
            let flag = match field {
                "agents" => "agent",
                other => other,
            };
            let message = e
                .message
                .split_once(": ")
                .map_or(e.message.as_str(), |(_, m)| m);
            format!("--{flag}: {message}")
        })
}
