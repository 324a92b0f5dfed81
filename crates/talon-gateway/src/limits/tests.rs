//! The limiter's buckets, caps and budgets.

use super::*;

fn of(token: &str) -> Holder<'_> {
    Holder {
        token,
        subject: None,
    }
}

#[test]
fn a_subjects_tokens_share_its_places_and_others_keep_theirs() {
    let limiter = Limiter::new(Limits {
        max_streams_per_subject: 2,
        ..Limits::default()
    });
    let alice = |token| Holder {
        token,
        subject: Some("alice"),
    };
    let one = limiter.stream(alice("a1")).unwrap();
    let _two = limiter.stream(alice("a2")).unwrap();
    let refused = limiter.stream(alice("a3")).unwrap_err();
    assert_eq!(
        (refused.code, refused.details),
        (
            ErrorCode::RateLimited,
            Some(Box::new(talon_protocol::gateway::ErrorDetails::limit(
                "maxStreamsPerSubject"
            )))
        )
    );
    let _bob = limiter
        .stream(Holder {
            token: "b1",
            subject: Some("bob"),
        })
        .unwrap();
    let _unbound = limiter.stream(of("u1")).unwrap();
    drop(one);
    let _again = limiter.stream(alice("a3")).unwrap();
}

#[test]
fn a_bucket_allows_its_burst_then_says_when_to_retry() {
    let limiter = Limiter::new(Limits {
        calls_per_second: 50.0,
        burst: 3,
        ..Limits::default()
    });
    for _ in 0..3 {
        limiter.take("a").unwrap();
    }
    let refused = limiter.take("a").unwrap_err();
    assert_eq!(refused.code, ErrorCode::RateLimited);
    assert!(
        refused
            .retry_after_ms
            .is_some_and(|ms| (1..=20).contains(&ms)),
        "{refused:?}"
    );
    // Another token has its own bucket.
    limiter.take("b").unwrap();
    std::thread::sleep(Duration::from_millis(30));
    limiter.take("a").unwrap();
}

#[test]
fn streams_are_capped_and_released() {
    let limiter = Limiter::new(Limits {
        max_streams: 2,
        ..Limits::default()
    });
    let a = limiter.stream(of("a")).unwrap();
    let _b = limiter.stream(of("b")).unwrap();
    assert_eq!(
        limiter.stream(of("c")).unwrap_err().code,
        ErrorCode::Unavailable
    );
    drop(a);
    let _again = limiter.stream(of("c")).unwrap();
}

#[test]
fn one_token_takes_at_most_its_share_of_streams() {
    let limiter = Limiter::new(Limits {
        max_streams: 10,
        max_streams_per_token: 2,
        ..Limits::default()
    });
    let a = limiter.stream(of("a")).unwrap();
    let _a2 = limiter.stream(of("a")).unwrap();
    let refused = limiter.stream(of("a")).unwrap_err();
    assert_eq!(
        (refused.code, refused.details),
        (
            ErrorCode::RateLimited,
            Some(Box::new(talon_protocol::gateway::ErrorDetails::limit(
                "maxStreamsPerToken"
            )))
        )
    );
    let _b = limiter.stream(of("b")).unwrap();
    drop(a);
    let _a3 = limiter.stream(of("a")).unwrap();
}

#[test]
fn one_token_has_at_most_its_share_of_requests_in_flight() {
    let limiter = Limiter::new(Limits {
        max_requests_per_token: 2,
        ..Limits::default()
    });
    let first = limiter.request(of("a")).unwrap();
    let _second = limiter.request(of("a")).unwrap();
    let refused = limiter.request(of("a")).unwrap_err();
    assert_eq!(
        (refused.code, refused.details),
        (
            ErrorCode::RateLimited,
            Some(Box::new(talon_protocol::gateway::ErrorDetails::limit(
                "maxRequestsPerToken"
            )))
        )
    );
    let _other = limiter.request(of("b")).unwrap();
    drop(first);
    let _again = limiter.request(of("a")).unwrap();
}

#[test]
fn a_subjects_tokens_share_its_requests_in_flight() {
    let limiter = Limiter::new(Limits {
        max_requests_per_subject: 2,
        ..Limits::default()
    });
    let alice = |token| Holder {
        token,
        subject: Some("alice"),
    };
    let first = limiter.request(alice("a1")).unwrap();
    let _second = limiter.request(alice("a2")).unwrap();
    let refused = limiter.request(alice("a3")).unwrap_err();
    assert_eq!(
        refused.details,
        Some(Box::new(talon_protocol::gateway::ErrorDetails::limit(
            "maxRequestsPerSubject"
        )))
    );
    let _unbound = limiter.request(of("u")).unwrap();
    drop(first);
    let _again = limiter.request(alice("a3")).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_budget_waits_for_room_then_ends_a_slow_reader() {
    let limiter = Limiter::new(Limits {
        stream_bytes_per_token: 100 << 10,
        slow_reader_timeout: Duration::from_secs(5),
        ..Limits::default()
    });
    let one = limiter.stream(of("a")).unwrap();
    let two = limiter.stream(of("a")).unwrap();
    assert_eq!(one.budget.kib(1), 1);
    assert_eq!(
        one.budget.kib(10 << 20),
        100,
        "one event larger than the budget goes alone"
    );
    let held = one.budget.take(80).await.unwrap();
    // The sibling waits for room; the room comes when the frame is written.
    let waiting = tokio::spawn({
        let budget = two.budget.clone();
        async move { budget.take(40).await.map(drop) }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiting.is_finished());
    drop(held);
    waiting.await.unwrap().unwrap();
    // Nothing written for the timeout: the stream ends, saying why.
    let _all = one.budget.take(100).await.unwrap();
    let slow = two.budget.take(1).await.unwrap_err();
    assert_eq!(
        (slow.code, slow.details),
        (
            ErrorCode::Unavailable,
            Some(Box::new(talon_protocol::gateway::ErrorDetails::reason(
                "slow_reader"
            )))
        )
    );
    // Another token's budget is its own.
    let other = limiter.stream(of("b")).unwrap();
    let _all_of_b = other.budget.take(100).await.unwrap();
}
