//! Waiting in tests for something that happens asynchronously, without
//! guessing how long it takes: the one place tests poll.
//!
//! A test that needs a condition to hold (a run to reach a status, a file
//! to appear, a process group to exit) waits for it here instead of
//! sleeping a fixed time or looping over `sleep` by hand:
//!
//! - [`until`] polls a synchronous probe (from a plain `#[test]` or a
//!   thread; never from async code, which it would block);
//! - [`until_async`] polls an async probe (an async closure, or a closure
//!   returning a future);
//! - [`within`] awaits a real signal (a channel's next message, a
//!   `Notify`, an event stream's next item, a child's exit) with a
//!   deadline. Prefer it whenever the code under test offers such a
//!   signal: nothing is polled at all.
//!
//! A probe returns a [`Condition`]: `bool` (holds or not), `Option<T>`
//! (the wait returns the `T`), or `Result<T, E>` (the wait returns the
//! `T`; on the deadline the panic shows the last `E`, what was seen
//! instead, e.g. the status a run was still in).
//!
//! Each returns as soon as the condition holds, so deadlines are generous
//! ([`DEADLINE`] suits nearly every wait on a loaded 2-core CI machine).
//! Polls back off from 1 ms to 50 ms, and the last one is at the deadline.
//! On the deadline each panics, at the caller's file and line, naming what
//! it waited for: a wait never passes silently.
//!
//! Sleeps that are not waits stay in tests as sleeps, each with a comment
//! saying why: a mock peer that is slow on purpose, time that must pass
//! for a timestamp or an expiry. "Nothing happens within 200 ms" is
//! `tokio::time::timeout` on the thing that must not happen.

use std::fmt::Debug;
use std::future::Future;
use std::panic::Location;
use std::time::{Duration, Instant};

/// A deadline for waits on things that normally take milliseconds to a
/// few seconds: long enough never to flake on a loaded CI machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The first pause between polls; each pause doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause between polls.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// What a probe returns: whether the condition holds, with the value the
/// wait then returns.
pub trait Condition {
    /// What the wait returns once the condition holds.
    type Value;
    /// The value when the condition holds; otherwise what was seen
    /// instead, if the probe said (shown when the wait gives up).
    fn check(self) -> Result<Self::Value, Option<String>>;
}

/// Holds when `true`; the wait returns `()`.
impl Condition for bool {
    type Value = ();

    fn check(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

/// Holds when `Some`; the wait returns the value.
impl<T> Condition for Option<T> {
    type Value = T;

    fn check(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

/// Holds when `Ok`; the wait returns the value, and a wait that gives up
/// shows the last `Err` (what was seen instead).
impl<T, E: Debug> Condition for Result<T, E> {
    type Value = T;

    fn check(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(format!("{seen:?}")))
    }
}

/// Polls `probe` until its [`Condition`] holds, and returns the
/// condition's value; panics naming `what` when it still does not hold
/// after `deadline`. Synchronous: do not call it from async code (it
/// blocks the thread), use [`until_async`] there.
///
/// ```ignore
/// wait::until("the gateway to exit", wait::DEADLINE, || child.try_wait().unwrap().is_some());
/// let port = wait::until("the port file", wait::DEADLINE, || std::fs::read_to_string(&path).ok());
/// ```
#[track_caller]
pub fn until<C: Condition>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> C,
) -> C::Value {
    let at = Location::caller();
    let mut polls = Polls::new(deadline);
    loop {
        match probe().check() {
            Ok(value) => return value,
            Err(seen) => match polls.next_pause() {
                Some(pause) => std::thread::sleep(pause),
                None => polls.give_up(at, what, seen),
            },
        }
    }
}

/// Polls the async `probe` until its [`Condition`] holds, and returns the
/// condition's value; panics naming `what` when it still does not hold
/// after `deadline`. `probe` is an async closure (`async || ...`, which
/// may borrow what it uses) or a closure returning a future; the wait is
/// `Send` (it can run in `tokio::spawn`) when they are.
///
/// ```ignore
/// wait::until_async("the run to complete", wait::DEADLINE, async || {
///     let run = client.run(&id).await;
///     if run.status == RunStatus::Completed { Ok(run) } else { Err(run.status) }
/// })
/// .await;
/// ```
#[track_caller]
pub fn until_async<'a, F, Fut>(
    what: &'a str,
    deadline: Duration,
    mut probe: F,
) -> impl Future<Output = <Fut::Output as Condition>::Value> + 'a
where
    F: FnMut() -> Fut + 'a,
    Fut: Future<Output: Condition> + 'a,
{
    let at = Location::caller();
    async move {
        let mut polls = Polls::new(deadline);
        loop {
            match probe().await.check() {
                Ok(value) => return value,
                Err(seen) => match polls.next_pause() {
                    Some(pause) => tokio::time::sleep(pause).await,
                    None => polls.give_up(at, what, seen),
                },
            }
        }
    }
}

/// Awaits `signal` (a channel's `recv()`, a `Notify`'s `notified()`, a
/// stream's `next()`, a child's `wait()`) and returns its output; panics
/// naming `what` when it has not resolved after `deadline`.
#[track_caller]
pub fn within<'a, F>(
    what: &'a str,
    deadline: Duration,
    signal: F,
) -> impl Future<Output = F::Output> + 'a
where
    F: Future + 'a,
{
    let at = Location::caller();
    async move {
        match tokio::time::timeout(deadline, signal).await {
            Ok(output) => output,
            Err(_) => panic!("{at}: gave up after {deadline:?} waiting for {what}"),
        }
    }
}

/// The pauses of one wait.
struct Polls {
    started: Instant,
    deadline: Duration,
    pause: Duration,
    count: u32,
}

impl Polls {
    fn new(deadline: Duration) -> Self {
        Self {
            started: Instant::now(),
            deadline,
            pause: FIRST_PAUSE,
            count: 1,
        }
    }

    /// How long to pause before the next poll; `None` once the deadline
    /// has passed (the poll just made was the last). The last pause ends
    /// at the deadline, so the condition is checked there once more.
    fn next_pause(&mut self) -> Option<Duration> {
        let left = self.deadline.checked_sub(self.started.elapsed())?;
        if left.is_zero() {
            return None;
        }
        let pause = self.pause.min(left);
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        self.count += 1;
        Some(pause)
    }

    fn give_up(&self, at: &Location<'_>, what: &str, seen: Option<String>) -> ! {
        let seen = seen.map_or_else(String::new, |seen| format!("; last saw {seen}"));
        panic!(
            "{at}: gave up after {:?} waiting for {what} (checked {} times{seen})",
            self.deadline, self.count
        )
    }
}
