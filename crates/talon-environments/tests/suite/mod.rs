//! The suites.

mod contract;
mod forge;
mod ssh;
