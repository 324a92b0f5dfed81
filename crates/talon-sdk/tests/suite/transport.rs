//! The low-level client: the generated functions over HTTP and over the
//! WebSocket, event subscriptions, and the protocol's errors as typed
//! errors.

use futures::StreamExt as _;
use talon_sdk::protocol::EventType;
use talon_sdk::protocol::gateway::ErrorCode;
use talon_sdk::protocol::gateway::bounded::{AgentId, Cursor, IdempotencyKey, RunId};
use talon_sdk::protocol::gateway::params::{
    AgentsListParams, EnvironmentsListParams, EventsSubscribeParams, ModelsListParams, RunRef,
    RunsCreateParams, RunsWaitParams, ToolsListParams,
};
use talon_sdk::protocol::gateway::{TasksListParams, TasksListResult};
use talon_sdk::{Client, Error, Transport};

use super::{Backend, Kind, REPLY, Scenario, both, every};

both!(
    generated_calls_work_over_http_and_websocket,
    a_websocket_subscription_replays_then_follows,
    errors_carry_the_protocol_code_and_retryability,
    an_idempotency_key_returns_the_first_run,
    lists_page_with_a_cursor_and_a_bounded_limit,
);

fn create(key: Option<&str>) -> RunsCreateParams {
    RunsCreateParams {
        agent_id: None,
        input: "hello".into(),
        session_key: None,
        session_id: None,
        tools: vec![],
        multitask_strategy: None,
        timeout_ms: None,
        environment_id: None,
        idempotency_key: key.map(IdempotencyKey::new),
    }
}

async fn generated_calls_work_over_http_and_websocket(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    for transport in [Transport::Http, Transport::WebSocket] {
        let client = Client::new(talon_sdk::ClientConfig {
            transport,
            ..b.config()
        })
        .unwrap();
        let agents = client.agents_list(every()).await.unwrap();
        assert!(
            agents.agents.iter().any(|a| a.id == AgentId::new("main")),
            "{transport:?}"
        );
        let accepted = client.runs_create(create(None)).await.unwrap();
        assert_eq!(accepted.run_id, accepted.run.id);
        let result = client
            .runs_wait(RunsWaitParams {
                run_id: accepted.run_id.clone(),
                timeout_ms: Some(30_000),
            })
            .await
            .unwrap();
        assert_eq!(
            result.output.and_then(|o| o.text).as_deref(),
            Some(REPLY),
            "{transport:?}"
        );
        let models = client.models_list(every()).await.unwrap();
        assert!(!models.models.is_empty());
        // The run spawned nothing: no task.
        let tasks = client.tasks_list(TasksListParams::default()).await.unwrap();
        assert_eq!(
            tasks,
            TasksListResult {
                tasks: Vec::new(),
                next_cursor: None
            },
            "{transport:?}"
        );
    }
}

async fn a_websocket_subscription_replays_then_follows(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let client = Client::new(talon_sdk::ClientConfig {
        transport: Transport::WebSocket,
        ..b.config()
    })
    .unwrap();
    let first = client.runs_create(create(None)).await.unwrap();
    let mut subscription = client
        .subscribe(EventsSubscribeParams {
            after: None,
            session_key: None,
            agent_id: None,
            types: Some(vec![EventType::RunCompleted]),
        })
        .await
        .unwrap();
    // The replay holds the first run's end; the live tail the second's.
    let replayed = subscription.next().await.unwrap().unwrap();
    assert_eq!(
        replayed.run_id.as_ref().map(RunId::as_str),
        Some(first.run_id.as_str())
    );
    let second = client.runs_create(create(None)).await.unwrap();
    let live = subscription.next().await.unwrap().unwrap();
    assert_eq!(
        (live.kind, live.run_id.as_ref().map(RunId::as_str)),
        (EventType::RunCompleted, Some(second.run_id.as_str()))
    );
    // Over HTTP a subscription is refused by the client itself.
    let http = Client::new(b.config()).unwrap();
    assert!(matches!(
        http.subscribe(EventsSubscribeParams {
            after: None,
            session_key: None,
            agent_id: None,
            types: None,
        })
        .await,
        Err(Error::Invalid { .. })
    ));
}

async fn errors_carry_the_protocol_code_and_retryability(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let client = Client::new(b.config()).unwrap();
    let missing = client
        .runs_get(RunRef {
            run_id: RunId::new("run_missing"),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (missing.code(), missing.retryable(), missing.retry_after()),
        (Some(ErrorCode::NotFound), false, None)
    );
    let stranger = Client::new(talon_sdk::ClientConfig {
        token: "tln_not_a_token".into(),
        ..b.config()
    })
    .unwrap();
    let refused = stranger.agents_list(every()).await.unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::Unauthenticated));
    let ws = Client::new(talon_sdk::ClientConfig {
        token: "tln_not_a_token".into(),
        transport: Transport::WebSocket,
        ..b.config()
    })
    .unwrap();
    assert_eq!(
        ws.agents_list(every()).await.unwrap_err().code(),
        Some(ErrorCode::Unauthenticated)
    );
    let unknown = client
        .call_raw("runs.teleport", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some(ErrorCode::NotFound));
    let stream = client
        .stream_run_events("run_missing", None)
        .await
        .unwrap_err();
    assert_eq!(stream.code(), Some(ErrorCode::NotFound));
    // Nothing listens here.
    let nowhere = Client::new(talon_sdk::ClientConfig {
        url: "http://127.0.0.1:9".into(),
        retry: talon_sdk::RetryPolicy::never(),
        ..b.config()
    })
    .unwrap();
    let down = nowhere.agents_list(every()).await.unwrap_err();
    assert!(
        matches!(down, Error::Transport { .. }) && down.retryable(),
        "{down:?}"
    );
}

async fn an_idempotency_key_returns_the_first_run(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let client = Client::new(b.config()).unwrap();
    let first = client.runs_create(create(Some("sdk-key-1"))).await.unwrap();
    let again = client.runs_create(create(Some("sdk-key-1"))).await.unwrap();
    assert_eq!(again.run_id, first.run_id);
    let other = client.runs_create(create(None)).await.unwrap();
    assert_ne!(other.run_id, first.run_id);
}

/// Every list pages: `tools.list` two at a time gives the whole ToolSpace
/// in order, each page at most two long; the last has no cursor; a cursor
/// naming nothing is `cursor_expired`; a huge limit is capped.
async fn lists_page_with_a_cursor_and_a_bounded_limit(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    if let Some(fake) = &b.fake {
        // The gateway's core tools, as the fake is told them.
        use talon_sdk::protocol::gateway::{ApprovalPolicy, ToolOrigin, ToolReach, ToolSummary};
        let core = |name: &str| ToolSummary {
            id: format!("openclaw:core:{name}"),
            name: name.into(),
            source: ToolOrigin::Core,
            owner: "core".into(),
            description: format!("The {name} tool."),
            arguments: vec![],
            parameters: serde_json::json!({"type": "object"}),
            approval: ApprovalPolicy::Allow,
            requires_approval: false,
            reach: vec![ToolReach::Direct],
            hidden: false,
            read_only: true,
            writable: false,
            host_capable: false,
            effect: talon_sdk::protocol::ToolEffect::ReadOnly,
        };
        fake.set_tools(["edit", "exec", "grep", "list", "read"].map(core).to_vec());
    }
    let client = Client::new(b.config()).unwrap();
    let tools = |limit: Option<u32>, cursor: Option<&str>| ToolsListParams {
        agent_id: None,
        session_key: None,
        limit,
        cursor: cursor.map(Cursor::new),
    };
    let whole = client.tools_list(tools(Some(100_000), None)).await.unwrap();
    assert!(
        whole.tools.len() > 2 && whole.next_cursor.is_none(),
        "{whole:?}"
    );
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .tools_list(tools(Some(2), cursor.as_deref()))
            .await
            .unwrap();
        assert!(page.tools.len() <= 2);
        paged.extend(page.tools);
        match page.next_cursor {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(paged, whole.tools);
    let expired = client
        .tools_list(tools(Some(2), Some("openclaw:core:nothing")))
        .await
        .unwrap_err();
    let agents = client
        .agents_list(AgentsListParams {
            limit: Some(1),
            cursor: None,
        })
        .await
        .unwrap();
    let models = client
        .models_list(ModelsListParams {
            limit: Some(0),
            cursor: None,
        })
        .await
        .unwrap();
    let environments = client
        .environments_list(EnvironmentsListParams {
            limit: None,
            cursor: Some(Cursor::new("env_gone")),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (
            expired.code(),
            agents.agents.len(),
            agents.next_cursor,
            models.models.len(),
            environments.code()
        ),
        (
            Some(ErrorCode::CursorExpired),
            1,
            None,
            1,
            Some(ErrorCode::CursorExpired)
        )
    );
}
