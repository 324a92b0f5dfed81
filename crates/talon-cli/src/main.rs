//! `talon`: the command-line entry point.
//!
//! The `talon` binary (clap); each subcommand is a module.
//!
//! - `talon exec` (`exec.rs`) runs one Code Mode cell against the config's tools
//!   (`talon_runtime::RunTools` starts the `mcp.servers`, builds the catalog with
//!   `tools.allow`/`tools.deny`, warns about servers that failed, and shuts them down) and prints
//!   a `CodeModeResult` as one JSON line; `--wait RUN_ID` resumes a suspended cell from the state
//!   directory's `FileStore`, so another process can finish it. Exit status: 0 completed,
//!   1 failed, 2 usage or config, 3 waiting.
//! - `talon agent -m` (`agent.rs`) runs one turn of the configured agent on a
//!   `talon_runtime::Host` (core tools in the workspace, the config's MCP servers, the surface by
//!   config; approvals asked on the terminal, or denied when not interactive unless
//!   `tools.approvals` says `allow`), streams the answer, shows tool calls (nested ones indented)
//!   and prints a summary line. `talon agent --gateway URL` (`agent_remote.rs`) runs the same turn
//!   on a gateway through `talon-sdk`, with the same display (`agent::print_event`), answering
//!   approvals and questions from the terminal.
//! - `talon tools search|describe` (`tools.rs`) ranks or shows the tools of a catalog file
//!   (hybrid ranking unless `--lexical`); `talon models prepare|status` (`models.rs`) distils
//!   the embedding table into the cache once, or says whether search is hybrid; `talon config
//!   check` (`config.rs`) checks the whole config file, and `talon config get|set|unset` reads or
//!   edits one value in place (written only when the edited file passes the same check).
//! - `talon gateway [--listen] [--mock-script]` (`gateway.rs`) starts `talon-gateway` on the
//!   config's store and a host of the config, prints a first start's admin token once on stdout,
//!   and stops on SIGTERM or Ctrl-C; `talon token create|list|revoke` manage tokens in the same
//!   store (a new secret alone on stdout; lists never show secrets).
//!
//! The process's one sandbox is started by `talon_runtime::engine` when a surface needs it; a
//! start failure is reported, never dropped (`talon exec` prints a failed result with
//! `runtime_unavailable` and exits 1; `talon agent` exits 2). The mock model
//! (`--mock-script`, `mock.rs`) is behind the `mock-model` cargo feature, which links
//! `talon-mock-model` only; `scripts/talon` and `scripts/test` enable it, a lean build leaves it
//! out, and the CLI's integration tests require it. `logging.rs` installs the process's tracing
//! subscriber on stderr (`TALON_LOG`, else `RUST_LOG`, else `warn`; `TALON_LOG_FORMAT`; colour
//! only on a terminal) and `otlp/` the OTLP/HTTP trace exporter, a `tracing` layer that turns the
//! spans under target `talon::trace` into OpenTelemetry spans, batched and posted by the
//! `opentelemetry` crates (SDK, `opentelemetry-otlp`). It is the only crate that prints to stdout;
//! it reports the library crates' typed errors itself and does not use `anyhow`.

mod agent;
mod agent_remote;
mod config;
mod dashboard;
mod exec;
mod gateway;
mod logging;
mod mock;
mod models;
mod otlp;
mod tokens;
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
    /// Check a config file, print its JSON Schema, or get, set or unset one value.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Create, list or revoke the gateway's access tokens.
    #[command(subcommand)]
    Token(tokens::TokenCommand),
    /// Print a new one-time sign-in link to the gateway's dashboard.
    Dashboard(dashboard::DashboardArgs),
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
        Command::Token(command) => tokens::run_token(command),
        Command::Dashboard(args) => dashboard::run(args),
        Command::Config(command) => config::run(command),
    }
}
