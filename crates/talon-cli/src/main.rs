//! `talon`: the command-line entry point.

mod agent;
mod agent_remote;
mod config;
mod exec;
mod gateway;
mod logging;
mod mock;
mod models;
mod otlp;
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
    logging::init();
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
