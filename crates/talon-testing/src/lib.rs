//! Test harnesses shared by Talon's crates' tests and benchmarks (none of
//! it ships in the binary):
//!
//! [`prelude_js`] reads a guest prelude's JavaScript for the contract
//! tests that check it against the Rust side.
//!
//! [`synthetic`] generates seeded, plausible tools of other domains, to pad
//! catalogs in search benchmarks and tests.
//!
//! [`relevance`] reads judged search corpora and computes the figures the
//! search quality gate holds them to.
//!
//! [`postgres`] starts a real PostgreSQL server for tests (one per test
//! process, from a cached template) and hands out fresh databases.
//!
//! The scripted mock model (`talon-mock-model`) and the fake gateway apps
//! test against (`talon-sdk-testing`) are crates of their own: the binary's
//! `mock-model` feature needs the one, apps the other, and neither needs
//! these harnesses.

pub mod postgres;
pub mod prelude_js;
pub mod proxy;
pub mod relevance;
pub mod synthetic;
