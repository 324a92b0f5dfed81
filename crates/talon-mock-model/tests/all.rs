//! Integration tests of talon-mock-model: the scripted server over real
//! HTTP on 127.0.0.1, as a provider client sees it.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
