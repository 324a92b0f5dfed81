//! `talon`: the command-line entry point.

mod agent;
mod agent_remote;
mod config;
mod exec;
mod gateway;
mod mock;
mod models;
mod tools;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Talon, an agent gateway.
#[derive(Debug, Parser)]
#[command(name = "talon", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a Code Mode cell (or resume one with --wait) and print its result as JSON.
    Exec(exec::ExecArgs),
    /// Run one turn of the configured agent and stream its answer.
    Agent(agent::AgentArgs),
    /// Search or describe the tools of a catalog file.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Prepare or inspect the embedding model tool search ranks with.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Serve the gateway protocol on one port: HTTP calls, SSE and WebSocket.
    Gateway(gateway::GatewayArgs),
    /// Check a config file, or print the config's JSON Schema.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Create, list or revoke the gateway's access tokens.
    #[command(subcommand)]
    Token(gateway::TokenCommand),
}

fn main() -> ExitCode {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("TALON_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // TALON_DEBUG_CODE_MODE=1: the model-visible tool names and bridge
    // activity, whatever TALON_LOG says.
    if std::env::var("TALON_DEBUG_CODE_MODE").is_ok_and(|v| v == "1")
        && let Ok(directive) = "talon::code_mode=info".parse()
    {
        filter = filter.add_directive(directive);
    }
    // TALON_DEBUG_MODEL_PAYLOAD=tools|full-redacted: what the model gets.
    if std::env::var("TALON_DEBUG_MODEL_PAYLOAD").is_ok()
        && let Ok(directive) = "talon::model_payload=info".parse()
    {
        filter = filter.add_directive(directive);
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Tools(command) => tools::run(command),
        Command::Models(command) => models::run(command),
        Command::Gateway(args) => gateway::run_gateway(args),
        Command::Token(command) => gateway::run_token(command),
        Command::Config(command) => config::run(command),
    }
}
