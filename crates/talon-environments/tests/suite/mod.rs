//! The suites.

mod contract;
