#[macro_use]
pub mod backend;
mod approvals;
mod artifacts;
mod cells;
mod crash;
mod deletes;
mod events;
mod failures;
mod layers;
mod run_list;
pub mod runs;
mod schedules;
pub mod sessions;
mod tasks;
mod upgrade;
