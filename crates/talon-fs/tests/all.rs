//! Integration tests of talon-fs: capped, non-blocking reads of regular
//! files against symlinks, special files, and huge, growing, unreadable or
//! non-UTF-8 files.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod suite;
