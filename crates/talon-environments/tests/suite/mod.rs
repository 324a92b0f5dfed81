//! The suites.

mod contract;
mod forge;
