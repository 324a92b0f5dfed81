//! Faults only the fake injects: lost answers, rate limits, slow answers,
//! expired cursors, streams dropped mid-run. The client must retry what is
//! safe to retry, with the same idempotency key, wait as the gateway asks,
//! and never turn an expired cursor into silence.

use std::time::{Duration, Instant};
use talon_protocol::gateway::bounded::RunId;

use super::every;
use futures::StreamExt as _;
use talon_sdk::protocol::EventType;
use talon_sdk::protocol::gateway::ErrorCode;
use talon_sdk_testing::{FakeGateway, FakeRun, Fault};

async fn fake() -> (FakeGateway, talon_sdk::Talon) {
    let fake = FakeGateway::start().await.unwrap();
    let talon = talon_sdk::Talon::connect(fake.url(), fake.token())
        .await
        .unwrap();
    (fake, talon)
}

fn calls_of(fake: &FakeGateway, method: &str) -> Vec<serde_json::Value> {
    fake.calls()
        .into_iter()
        .filter(|c| c.method == method)
        .map(|c| c.params)
        .collect()
}

#[tokio::test]
async fn a_lost_create_is_retried_with_the_same_idempotency_key() {
    let (fake, talon) = fake().await;
    fake.inject(Fault::Unavailable {
        method: "runs.create".into(),
        times: 1,
    });
    let run = talon.agent("main").run("hello").await.unwrap();
    let creates = calls_of(&fake, "runs.create");
    assert_eq!(creates.len(), 2);
    let key = creates[0]["idempotencyKey"].as_str().unwrap();
    assert!(key.starts_with("sdk-"));
    assert_eq!(creates[1]["idempotencyKey"], creates[0]["idempotencyKey"]);
    assert_eq!(
        run.wait().await.unwrap().output.unwrap().text.as_deref(),
        Some("ok")
    );
}

#[tokio::test]
async fn rate_limits_are_waited_out_as_the_gateway_asks() {
    let (fake, talon) = fake().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    fake.inject(Fault::RateLimited {
        method: "runs.get".into(),
        times: 2,
        retry_after_ms: 60,
    });
    let started = Instant::now();
    let info = run.refresh().await.unwrap();
    assert_eq!(info.id, RunId::new(run.id()));
    assert!(started.elapsed() >= Duration::from_millis(120));
    assert_eq!(calls_of(&fake, "runs.get").len(), 3);
    // A client that never retries sees the error and the delay asked.
    let once = talon_sdk::Client::new(talon_sdk::ClientConfig {
        retry: talon_sdk::RetryPolicy::never(),
        ..talon_sdk::ClientConfig::new(fake.url(), fake.token())
    })
    .unwrap();
    fake.inject(Fault::RateLimited {
        method: "agents.list".into(),
        times: 1,
        retry_after_ms: 1500,
    });
    let limited = once.agents_list(every()).await.unwrap_err();
    assert_eq!(
        (limited.code(), limited.retryable(), limited.retry_after()),
        (
            Some(ErrorCode::RateLimited),
            true,
            Some(Duration::from_millis(1500))
        )
    );
}

#[tokio::test]
async fn a_gateway_that_stays_unavailable_surfaces_after_the_policy_s_tries() {
    let (fake, talon) = fake().await;
    fake.inject(Fault::Unavailable {
        method: "agents.list".into(),
        times: 10,
    });
    let error = talon.agents().await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::Unavailable));
    assert_eq!(
        calls_of(&fake, "agents.list").len(),
        talon_sdk::RetryPolicy::default().max_attempts as usize
    );
}

#[tokio::test]
async fn a_slow_answer_is_waited_for() {
    let (fake, talon) = fake().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    fake.inject(Fault::Slow {
        method: "runs.wait".into(),
        delay: Duration::from_millis(300),
    });
    let started = Instant::now();
    let result = run.wait().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(result.output.unwrap().text.as_deref(), Some("ok"));
}

#[tokio::test]
async fn an_expired_cursor_is_an_error_never_silence() {
    let (fake, talon) = fake().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    run.wait().await.unwrap();
    fake.inject(Fault::ExpireCursor);
    let mut events = run.events_after(1);
    let error = events.next().await.unwrap().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::CursorExpired));
    let details = error.api().unwrap().details.clone().unwrap();
    assert!(
        details.oldest_id.is_some(),
        "names the oldest id: {details:?}"
    );
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn a_stream_dropped_mid_run_resumes_with_no_gap_and_no_duplicate() {
    let (fake, talon) = fake().await;
    fake.script_run(
        FakeRun::reply("slowly")
            .delay(Duration::from_millis(40))
            .event(talon_sdk::protocol::EventData::AssistantDelta(
                talon_sdk::protocol::event_data::TextDelta {
                    text: "slow".into(),
                },
            ))
            .delay(Duration::from_millis(40)),
    );
    let run = talon.agent("main").run("hello").await.unwrap();
    fake.inject(Fault::DropStream { after_events: 2 });
    let mut events = run.events();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.unwrap());
    }
    let ids: Vec<u64> = seen
        .iter()
        .map(|e| e.id.as_str().parse().unwrap())
        .collect();
    let page = talon
        .client()
        .runs_events(talon_sdk::protocol::gateway::params::RunsEventsParams {
            before: None,
            last: None,
            run_id: RunId::new(run.id()),
            after: None,
            limit: None,
        })
        .await
        .unwrap();
    let stored: Vec<u64> = page
        .events
        .iter()
        .map(|e| e.id.as_str().parse().unwrap())
        .collect();
    assert_eq!(ids, stored);
    assert_eq!(seen.last().map(|e| e.kind), Some(EventType::RunCompleted));
}

#[tokio::test]
async fn a_dropped_websocket_ends_its_subscriptions_and_the_next_call_reconnects() {
    let (fake, talon) = fake().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    run.wait().await.unwrap();
    let client = talon_sdk::Client::new(talon_sdk::ClientConfig {
        transport: talon_sdk::Transport::WebSocket,
        ..talon_sdk::ClientConfig::new(fake.url(), fake.token())
    })
    .unwrap();
    fake.inject(Fault::DropStream { after_events: 1 });
    let mut subscription = client
        .subscribe(
            talon_sdk::protocol::gateway::params::EventsSubscribeParams {
                after: None,
                session_key: None,
                agent_id: None,
                types: None,
            },
        )
        .await
        .unwrap();
    let first = subscription.next().await.unwrap().unwrap();
    let cut = subscription.next().await.unwrap().unwrap_err();
    assert!(matches!(cut, talon_sdk::Error::Transport { .. }), "{cut:?}");
    assert!(subscription.next().await.is_none());
    // The next call opens a new connection; a new subscription resumes
    // after the last id seen.
    assert!(client.agents_list(every()).await.is_ok());
    let mut resumed = client
        .subscribe(
            talon_sdk::protocol::gateway::params::EventsSubscribeParams {
                after: Some(first.id.clone().into()),
                session_key: None,
                agent_id: None,
                types: None,
            },
        )
        .await
        .unwrap();
    let next = resumed.next().await.unwrap().unwrap();
    assert_eq!(
        next.id.as_str().parse::<u64>().unwrap(),
        first.id.as_str().parse::<u64>().unwrap() + 1
    );
}
