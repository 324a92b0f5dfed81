//! The Rust App SDK for the Talon gateway.
//!
//! Two layers over one protocol:
//!
//! - **Low level**, [`Client`]: one typed async function per method of the
//!   protocol's table (`client.runs_create(params)`, ...), generated from
//!   the table and committed (`src/generated.rs`); calls over HTTP or one
//!   WebSocket ([`Transport`]); event streams as Server-Sent Events; the
//!   protocol's error as [`Error::Api`] with its `retryable` and
//!   `retry_after`; reads, and writes that carry an idempotency key (the
//!   client adds one when the caller gave none), retried with backoff
//!   ([`RetryPolicy`]).
//! - **High level**, [`Talon`]: `Talon::connect(url, token)`,
//!   `talon.agent("main").run(input)` gives a [`Run`] whose
//!   [`events`](Run::events) resume by themselves after a dropped
//!   connection, [`wait`](Run::wait), [`cancel`](Run::cancel),
//!   [`on_approval`](Run::on_approval) and the rest; [`Session`],
//!   [`Approval`], [`Question`], [`Artifact`] and [`Environment`] handles.
//!
//! ```no_run
//! # async fn demo() -> talon_sdk::Result<()> {
//! use futures::StreamExt as _;
//! let talon = talon_sdk::Talon::connect("http://127.0.0.1:7777", "tln_...").await?;
//! let run = talon.agent("main").run("Summarise the README").await?;
//! let mut events = run.events();
//! while let Some(event) = events.next().await {
//!     println!("{}", event?.kind.as_str());
//! }
//! let result = run.wait().await?;
//! println!("{:?}", result.output.and_then(|o| o.text));
//! # Ok(()) }
//! ```

pub mod client;
pub mod error;
mod events;
// Generated and committed verbatim: the drift test compares the text.
#[rustfmt::skip]
mod generated;
mod handles;
mod run;
mod session;
mod talon;

pub use client::{
    Client, ClientConfig, EventStream, RetryPolicy, StreamQuery, Subscription, Transport,
};
pub use error::{Error, Result};
pub use events::Events;
pub use handles::{Approval, Artifact, Environment, Question};
pub use run::{ApprovalAction, Run, RunOptions};
pub use session::Session;
pub use talon::{Agent, Talon};
/// The protocol's types, as the SDK's functions take and return them.
pub use talon_protocol as protocol;
