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
//! [`workspace`] reads the crate graph from `cargo metadata`, for the tests
//! that hold the layering to ARCHITECTURE.md's diagram.
//!
//! [`postgres`] starts a real PostgreSQL server for tests (one per test
//! process, from a cached template) and hands out fresh databases.
//!
//! The scripted mock model (`talon-mock-model`) and the fake gateway apps
//! test against (`talon-sdk-testing`) are crates of their own: the binary's
//! `mock-model` feature needs the one, apps the other, and neither needs
//! these harnesses.
//!
//! [`proxy`]'s `StreamCutter` is a TCP proxy on 127.0.0.1 in front of a real gateway that cuts the
//! next event stream after n SSE frames, for testing and benchmarking clients' resume against the
//! real server.
//!
//! [`sshd`] starts a real OpenSSH server on 127.0.0.1 with its own host
//! key and a client key pair, for tests of what the gateway does over SSH.
//!
//! [`forge`] is a scripted forge: a real HTTP server speaking the pull
//! request subset of GitHub's REST API, with a real bare git repository
//! behind it (pushes go through `git http-backend`).
//!
//! [`redact`] makes whole values to assert on: JSON responses and event
//! transcripts with their generated ids, clock readings and durations
//! replaced by stable placeholders.
//!
//! [`stats`] gives benchmarks their printed figures: percentiles, the
//! median, one JSON summary line.
//!
//! [`wait`] waits for a condition or a signal with a deadline, failing
//! loudly with what it waited for: the one place tests poll, instead of
//! sleeping a guessed time.
//!
//! More on each:
//!
//! - `synthetic::corpus_tools(json)` reads a judged corpus's tools as plugin tools (the search and
//!   catalog benchmarks share it); `synthetic::distractor_tools(count, seed)` makes seeded
//!   synthetic tools (xorshift64*; the same seed gives the same tools everywhere) that pad the
//!   judged corpus to a catalog size in `talon-search`'s quality test and benchmark and size
//!   catalogs in other crates' tests.
//! - `postgres::TestPostgres`: `initdb` runs once into a cached template; each test process copies
//!   it and starts its own server on a free loopback port, as an unprivileged user when run as root
//!   (`setpriv`), tied to the process by a parent-death signal (`SIGQUIT`, PostgreSQL's immediate
//!   shutdown) so a killed test leaves no server behind; `fresh_database()` gives each test its own
//!   database. `TALON_TEST_POSTGRES_URL` points the tests at an existing server. Binaries come from
//!   `$TALON_PG_BIN`, `/usr/lib/postgresql/<N>/bin` or `PATH`; `scripts/setup.sh` installs the
//!   Debian package, and a missing PostgreSQL fails the tests with that instruction.
//! - `sshd::Sshd::start()` runs Debian's `/usr/sbin/sshd -D -e` on a free port of 127.0.0.1 from a
//!   temporary directory (host key, client key pair, `authorized_keys`, config, pinned
//!   `known_hosts`), letting in only the current user with the client key; `run(command)` checks it
//!   through the real `ssh` client with the host key pinned. Spawned through `setpriv --pdeathsig`,
//!   so it dies with a killed test process; `stop()` and `Drop` end it and its sessions.
//! - `forge::Forge::start(owner, repo)` serves, on a thread and runtime of its own, git smart HTTP
//!   (`git http-backend` as a CGI; pushes need the token as the basic-auth password) and GitHub's
//!   pulls API under `/api/v3` (bearer token) over a bare repository seeded with one commit on
//!   `main`; it records every request (credentials redacted) and fails the next API calls on demand
//!   (`fail_next`) for tests of retries.
//!
//! Every crate takes it as a dev-dependency only. Its own integration tests (`tests/suite/`) check
//! the PostgreSQL, sshd and forge harnesses and that the repository's ARCHITECTURE.md draws the
//! workspace's crate graph as `cargo metadata` reports it.

pub mod forge;
pub mod postgres;
pub mod prelude_js;
pub mod proxy;
pub mod redact;
pub mod relevance;
pub mod requests;
pub mod sshd;
pub mod stats;
pub mod synthetic;
pub mod unread;
pub mod wait;
pub mod workspace;
