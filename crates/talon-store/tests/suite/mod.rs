#[macro_use]
pub mod backend;
mod approvals;
mod artifacts;
mod cells;
mod crash;
mod events;
mod failures;
mod runs;
pub mod sessions;
