//! What the gateway's bench binaries share, included into each with
//! `#[path = "support/mod.rs"] mod support;`: the frame of a bench's
//! `main` (its command line, logging and runtime) here; an in-process
//! gateway and its calls in [`gateway`], an SSE reader in [`sse`], the
//! figures of samples and the clocks in [`measure`].

#![allow(
    dead_code,
    reason = "each bench binary includes the whole module and uses only some of it"
)]

pub mod gateway;
pub mod measure;
pub mod sse;

/// The command line: `quick` (a smoke run), and the parts it names.
pub struct Args {
    pub quick: bool,
    chosen: Vec<&'static str>,
}

impl Args {
    /// This process's arguments; a part of `parts` is chosen when named.
    pub fn parse(parts: &[&'static str]) -> Self {
        let args: Vec<String> = std::env::args().collect();
        Self {
            quick: args.iter().any(|a| a == "quick"),
            chosen: parts
                .iter()
                .copied()
                .filter(|p| args.iter().any(|a| a == p))
                .collect(),
        }
    }

    /// Whether to run `part`: every part when none is named.
    pub fn wants(&self, part: &str) -> bool {
        self.chosen.is_empty() || self.chosen.contains(&part)
    }
}

/// `name` from the environment as a number, else `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Logs to stderr, at `TALON_LOG` (default `warn`).
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TALON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// The runtime a bench runs in: two worker threads.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
