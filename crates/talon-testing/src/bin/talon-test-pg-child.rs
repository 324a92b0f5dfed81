//! The child process of talon-testing's `postgres_server_dies_with_a_killed_process`
//! test: starts the shared PostgreSQL server of tests, prints
//! `talon-pg-child: <port> <pid> <data dir>` on stdout, and idles until its
//! parent SIGKILLs it (the test then checks that the server died with it).
//! A program of its own, so that no test in the suite does nothing in a
//! normal run.

#![allow(
    clippy::print_stdout,
    clippy::expect_used,
    reason = "a test's helper process: it reports on stdout and fails loudly"
)]

use std::io::Write as _;
use std::time::Duration;

use talon_testing::postgres::TestPostgres;

fn main() {
    let pg = TestPostgres::shared().expect("PostgreSQL for tests");
    println!(
        "talon-pg-child: {} {} {}",
        pg.port(),
        pg.pid().expect("the server's pid"),
        pg.data_dir()
            .expect("the server's data directory")
            .display()
    );
    std::io::stdout().flush().expect("stdout");
    // Not a wait: the child idles until the parent SIGKILLs it.
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}
