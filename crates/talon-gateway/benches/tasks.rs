//! The background tasks' benchmarks (issue 48):
//!
//! 1. `spawn`: a parent run whose scripted model calls `sessions_spawn`;
//!    on a pre-opened `/v1/events` stream, from the arrival of the task's
//!    first `task.updated` (queued) to the arrival of the child run's
//!    `run.started` (its events carry `taskId`); in-process, SQLite;
//! 2. `concurrent`: 100 sub-agents live at once (5 parent runs spawning 20
//!    each in one turn; each child answers 5 s after its first turn) on a
//!    `talon gateway` process (the same binary as part 4) whose model is a
//!    mock in this process: the peak count of running sub-agent tasks
//!    (`tasks.list`), the gateway process's RSS idle after a warm-up
//!    round, at its peak during, and settled after; every task must end
//!    `succeeded`;
//! 3. `fire`: 20 `at` schedules 300 ms apart and 5 `every` 1 s ones, on
//!    SQLite and on PostgreSQL: how late each firing's first
//!    `task.updated` arrives after its slot;
//! 4. `nodes`: two `talon gateway` processes on one PostgreSQL database
//!    (parts 2 and 4 run the binary of `cargo build --release -p talon-cli
//!    --features talon-cli/mock-model`, or `TALON_BIN`), 100 `every` 1 s schedules;
//!    node A is SIGKILLed at 500 firings and B goes on past 1,000; then
//!    every schedule is paused and the ledger checked: each schedule's
//!    tasks number its `state.firings`, no slot fired twice, each firing
//!    has exactly one run, none is left `queued`.
//!
//! `cargo bench -p talon-gateway --bench tasks` (`-- quick` for a smoke
//! run; name `spawn`, `concurrent`, `fire` or `nodes` to run only those
//! parts). PostgreSQL is the harness's (`talon_testing::postgres`).
//! Clients, mock model and gateways share the machine's cores, so every
//! figure includes the clients' own cost.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark binary fails loudly and prints its table"
)]

#[path = "tasks/harness.rs"]
mod harness;
#[path = "tasks/nodes.rs"]
mod nodes;
#[path = "tasks/schedules.rs"]
mod schedules;
#[path = "tasks/subagents.rs"]
mod subagents;
#[path = "support/mod.rs"]
mod support;

fn main() {
    support::init_tracing();
    let args = support::Args::parse(&["spawn", "concurrent", "fire", "nodes"]);
    let quick = args.quick;
    support::runtime().block_on(async {
        println!("| measure | | | | | | |\n|---|---|---|---|---|---|---|");
        if args.wants("spawn") {
            subagents::spawn_to_started(if quick { 20 } else { 200 }).await;
        }
        if args.wants("concurrent") {
            subagents::concurrent(if quick { 2 } else { 5 }).await;
        }
        if args.wants("fire") {
            for store in ["SQLite", "PostgreSQL"] {
                schedules::lateness(store, if quick { 5 } else { 20 }, 5, 300).await;
            }
        }
        if args.wants("nodes") {
            if quick {
                nodes::nodes(20, 60, 120).await;
            } else {
                nodes::nodes(100, 500, 1_000).await;
            }
        }
    });
}
