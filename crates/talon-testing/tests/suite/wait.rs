//! `wait`: returns as soon as the condition holds (with the probe's
//! value), and on the deadline panics naming what it waited for (and what
//! it last saw), at the caller's line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use talon_testing::wait;

/// The message of a panic payload.
fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// The message of a spawned task's panic.
async fn panic_of(task: impl Future<Output = ()> + Send + 'static) -> String {
    message(tokio::spawn(task).await.unwrap_err().into_panic())
}

#[test]
fn until_returns_once_the_condition_holds() {
    let started = Instant::now();
    let mut polls = 0;
    wait::until("the third poll", wait::DEADLINE, || {
        polls += 1;
        polls == 3
    });
    assert_eq!(polls, 3);
    let mut polls = 0;
    let value = wait::until("a value", wait::DEADLINE, || {
        polls += 1;
        (polls == 2).then_some("ready")
    });
    assert_eq!(value, "ready");
    let mut polls = 0;
    let value = wait::until("an Ok", wait::DEADLINE, || {
        polls += 1;
        if polls == 2 { Ok(polls) } else { Err(polls) }
    });
    assert_eq!(value, 2);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn until_panics_naming_what_it_waited_for() {
    let started = Instant::now();
    let payload = std::panic::catch_unwind(|| {
        wait::until("the impossible", Duration::from_millis(100), || false)
    })
    .unwrap_err();
    let took = started.elapsed();
    let message = message(payload);
    assert!(
        message.contains("gave up after 100ms waiting for the impossible")
            && message.contains("tests/suite/wait.rs:"),
        "{message}"
    );
    // It checked up to the deadline, and not much past it.
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A `Result` probe's last `Err` is in the message.
    let payload = std::panic::catch_unwind(|| {
        wait::until("running", Duration::from_millis(20), || {
            Err::<(), _>("queued")
        })
    })
    .unwrap_err();
    let message = self::message(payload);
    assert!(message.contains("last saw \"queued\""), "{message}");
}

#[tokio::test]
async fn until_async_polls_an_async_probe() {
    let polls = Arc::new(AtomicU32::new(0));
    // An async closure that borrows across its await.
    wait::until_async("the third poll", wait::DEADLINE, async || {
        tokio::task::yield_now().await;
        polls.fetch_add(1, Ordering::SeqCst) == 2
    })
    .await;
    assert_eq!(polls.load(Ordering::SeqCst), 3);
    // A closure returning a future.
    let value = wait::until_async("a value", wait::DEADLINE, || {
        let polls = polls.clone();
        async move { (polls.fetch_add(1, Ordering::SeqCst) == 4).then_some(7) }
    })
    .await;
    assert_eq!(value, 7);
    // In a spawned task (the wait is `Send`), borrowing what it reads.
    let shared = polls.clone();
    tokio::spawn(async move {
        let shared = &shared;
        wait::until_async("a spawned wait", wait::DEADLINE, async || {
            shared.load(Ordering::SeqCst) >= 5
        })
        .await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn until_async_panics_naming_what_it_waited_for() {
    let message = panic_of(async {
        wait::until_async("the impossible", Duration::from_millis(100), async || false).await;
    })
    .await;
    assert!(
        message.contains("gave up after 100ms waiting for the impossible")
            && message.contains("tests/suite/wait.rs:"),
        "{message}"
    );
    let message = panic_of(async {
        wait::until_async("completed", Duration::from_millis(20), async || {
            Err::<(), _>("running")
        })
        .await;
    })
    .await;
    assert!(
        message.contains("waiting for completed") && message.contains("last saw \"running\""),
        "{message}"
    );
}

#[tokio::test]
async fn within_awaits_a_signal_or_panics() {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move { tx.send(5).await });
    assert_eq!(
        wait::within("the message", wait::DEADLINE, rx.recv()).await,
        Some(5)
    );
    let message = panic_of(async {
        wait::within(
            "a signal that never comes",
            Duration::from_millis(50),
            std::future::pending::<()>(),
        )
        .await;
    })
    .await;
    assert!(
        message.contains("gave up after 50ms waiting for a signal that never comes")
            && message.contains("tests/suite/wait.rs:"),
        "{message}"
    );
}
