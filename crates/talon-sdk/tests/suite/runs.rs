//! Runs through the high-level layer: events, results, approvals,
//! cancellation, artifacts, the ToolSpace, resuming after a cut.

use futures::StreamExt as _;
use talon_protocol::gateway::bounded::RunId;
use talon_sdk::protocol::gateway::{
    ApprovalDecision, ApprovalKind, ApprovalStatus, RunResultStatus,
};
use talon_sdk::protocol::{Event, EventType};
use talon_sdk::{ApprovalAction, Run};
use talon_testing::wait;

use super::{Backend, DONE, Kind, REPLY, Scenario, both};

async fn collect(run: &Run) -> Vec<Event> {
    let mut events = run.events();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        out.push(event.unwrap());
    }
    out
}

fn ids(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e.id.as_str().parse().unwrap())
        .collect()
}

both!(
    a_run_streams_typed_events_and_waits_for_its_result,
    events_resume_after_a_dropped_connection_without_gap_or_duplicate,
    a_saved_cursor_resumes_in_another_stream,
    an_approval_handler_approves_once,
    an_approval_handler_denies_and_the_run_goes_on,
    an_async_approval_handler_approves_with_a_reason,
    ask_user_leaves_the_approval_to_a_person,
    cancelling_a_waiting_run_cancels_its_approval,
    a_run_lists_and_downloads_its_artifacts,
    a_run_knows_its_session_and_tool_space,
    the_event_log_replays_then_follows_across_a_cut,
);

async fn the_event_log_replays_then_follows_across_a_cut(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let first = talon.agent("main").run("one").await.unwrap();
    first.wait().await.unwrap();
    let query = talon_sdk::StreamQuery {
        types: vec![EventType::RunCreated, EventType::RunCompleted],
        ..Default::default()
    };
    b.cut_next_stream(1);
    let mut log = talon.events(query, None);
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(log.next().await.unwrap().unwrap());
    }
    // The live tail: a run started after the replay.
    let second = talon.agent("main").run("two").await.unwrap();
    for _ in 0..2 {
        seen.push(log.next().await.unwrap().unwrap());
    }
    let got: Vec<(EventType, Option<&str>)> = seen
        .iter()
        .map(|e| (e.kind, e.run_id.as_ref().map(RunId::as_str)))
        .collect();
    assert_eq!(
        got,
        vec![
            (EventType::RunCreated, Some(first.id())),
            (EventType::RunCompleted, Some(first.id())),
            (EventType::RunCreated, Some(second.id())),
            (EventType::RunCompleted, Some(second.id())),
        ]
    );
    assert_eq!(log.cursor(), seen.last().unwrap().id.as_str().parse().ok());
    if let Some(real) = &b.real {
        assert_eq!(real.proxy.cut_count(), 1);
    }
}

async fn a_run_streams_typed_events_and_waits_for_its_result(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    let events = collect(&run).await;
    let kinds: Vec<EventType> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.first(), Some(&EventType::RunCreated), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&EventType::RunCompleted), "{kinds:?}");
    assert!(kinds.contains(&EventType::RunStarted), "{kinds:?}");
    assert!(kinds.contains(&EventType::AssistantMessage), "{kinds:?}");
    for event in &events {
        assert!(
            event.typed().is_some(),
            "{event:?} does not decode as its type"
        );
        assert_eq!(event.run_id.as_ref().map(RunId::as_str), Some(run.id()));
    }
    let ids = ids(&events);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let result = run.wait().await.unwrap();
    assert_eq!(
        (
            result.run_id.as_str(),
            result.status,
            result.output.and_then(|o| o.text).as_deref()
        ),
        (run.id(), RunResultStatus::Completed, Some(REPLY))
    );
}

async fn events_resume_after_a_dropped_connection_without_gap_or_duplicate(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    run.wait().await.unwrap();
    let whole = collect(&run).await;
    // The same run again, its stream cut after two events.
    b.cut_next_stream(2);
    let resumed = collect(&run).await;
    assert_eq!(ids(&resumed), ids(&whole));
    assert_eq!(resumed, whole);
    if let Some(real) = &b.real {
        assert_eq!(real.proxy.cut_count(), 1, "the proxy cut the stream");
    }
}

async fn a_saved_cursor_resumes_in_another_stream(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    let mut first = run.events();
    let head = first.next().await.unwrap().unwrap();
    let cursor = first.cursor().unwrap();
    assert_eq!(cursor, head.id.as_str().parse::<u64>().unwrap());
    drop(first);
    // Another process would attach by id and resume from the cursor.
    let attached = talon.run(run.id()).await.unwrap();
    let mut rest = Vec::new();
    let mut events = attached.events_after(cursor);
    while let Some(event) = events.next().await {
        rest.push(event.unwrap());
    }
    let whole = collect(&run).await;
    let mut joined = vec![head];
    joined.extend(rest);
    assert_eq!(joined, whole);
}

async fn an_approval_handler_approves_once(kind: Kind) {
    let b = Backend::start(kind, Scenario::ApprovedWrite).await;
    let talon = b.talon().await;
    let mut run = talon.agent("main").run("write the note").await.unwrap();
    // The seed's shape: the tool by the name the model calls it.
    run.on_approval(|approval| {
        if approval.kind == ApprovalKind::Tool && approval.tool_name.as_deref() == Some("write") {
            ApprovalAction::approve_once()
        } else {
            ApprovalAction::Deny {
                reason: "only writes".into(),
            }
        }
    });
    let result = run.wait().await.unwrap();
    assert_eq!(
        (result.status, result.output.and_then(|o| o.text).as_deref()),
        (RunResultStatus::Completed, Some(DONE))
    );
    let approvals = run.approvals().await.unwrap();
    let decided: Vec<_> = approvals
        .iter()
        .map(|a| {
            (
                a.tool_name.clone(),
                a.tool_id.clone(),
                a.tool_key().map(str::to_owned),
                a.status,
                a.decision,
            )
        })
        .collect();
    // Named as the model calls it, identified by its catalog id.
    assert_eq!(
        decided,
        vec![(
            Some("write".to_owned()),
            Some(super::WRITE.to_owned()),
            Some(super::WRITE.to_owned()),
            ApprovalStatus::Approved,
            Some(ApprovalDecision::ApproveOnce)
        )]
    );
    if kind == Kind::Real {
        assert_eq!(b.note().as_deref(), Some("approved text"));
    }
}

async fn an_async_approval_handler_approves_with_a_reason(kind: Kind) {
    let b = Backend::start(kind, Scenario::ApprovedWrite).await;
    let talon = b.talon().await;
    let mut run = talon.agent("main").run("write the note").await.unwrap();
    let policy = talon.clone();
    run.on_approval_async(move |approval| {
        let policy = policy.clone();
        async move {
            // An async policy may ask the gateway (or the app's own
            // service) before deciding.
            let tools = policy.agent("main").tool_space().await.unwrap_or_default();
            let known = tools
                .iter()
                .any(|t| Some(&t.id) == approval.tool_id.as_ref());
            if known || approval.tool_id.as_deref() == Some(super::WRITE) {
                ApprovalAction::approve_once_because("policy: writes in the workspace")
            } else {
                ApprovalAction::ask_user()
            }
        }
    });
    assert_eq!(run.wait().await.unwrap().status, RunResultStatus::Completed);
    let decided: Vec<_> = run
        .approvals()
        .await
        .unwrap()
        .iter()
        .map(|a| (a.status, a.reason.clone()))
        .collect();
    assert_eq!(
        decided,
        vec![(
            ApprovalStatus::Approved,
            Some("policy: writes in the workspace".to_owned())
        )]
    );
}

async fn an_approval_handler_denies_and_the_run_goes_on(kind: Kind) {
    let b = Backend::start(kind, Scenario::ApprovedWrite).await;
    let talon = b.talon().await;
    let mut run = talon.agent("main").run("write the note").await.unwrap();
    run.on_approval(|_| ApprovalAction::Deny {
        reason: "not today".into(),
    });
    let result = run.wait().await.unwrap();
    assert_eq!(result.status, RunResultStatus::Completed);
    let approvals = run.approvals().await.unwrap();
    assert_eq!(
        approvals
            .iter()
            .map(|a| (a.status, a.decision, a.reason.clone()))
            .collect::<Vec<_>>(),
        vec![(
            ApprovalStatus::Denied,
            Some(ApprovalDecision::Deny),
            Some("not today".to_owned())
        )]
    );
    assert_eq!(b.note(), None);
}

async fn ask_user_leaves_the_approval_to_a_person(kind: Kind) {
    let b = Backend::start(kind, Scenario::ApprovedWrite).await;
    let talon = b.talon().await;
    let mut run = talon.agent("main").run("write the note").await.unwrap();
    run.on_approval(|_| ApprovalAction::AskUser);
    // The person: another client, who finds the pending approval.
    let pending = wait::until_async("an approval to be pending", wait::DEADLINE, async || {
        let pending = talon.pending_approvals().await.unwrap();
        (!pending.is_empty()).then_some(pending)
    })
    .await;
    assert_eq!(
        run.wait_for(100).await.unwrap().status,
        RunResultStatus::Accepted
    );
    let resolved = pending[0].approve_once().await.unwrap();
    assert_eq!(resolved.status, ApprovalStatus::Approved);
    // A second decision loses.
    let late = pending[0].deny("too late").await.unwrap_err();
    assert_eq!(
        late.code(),
        Some(talon_sdk::protocol::gateway::ErrorCode::Conflict)
    );
    assert_eq!(run.wait().await.unwrap().status, RunResultStatus::Completed);
}

async fn cancelling_a_waiting_run_cancels_its_approval(kind: Kind) {
    let b = Backend::start(kind, Scenario::ApprovedWrite).await;
    let talon = b.talon().await;
    let run = talon.agent("main").run("write the note").await.unwrap();
    wait::until_async(
        "the run to ask for an approval",
        wait::DEADLINE,
        async || !run.approvals().await.unwrap().is_empty(),
    )
    .await;
    run.cancel().await.unwrap();
    let result = run.wait().await.unwrap();
    assert_eq!(result.status, RunResultStatus::Cancelled);
    let statuses: Vec<_> = run
        .approvals()
        .await
        .unwrap()
        .iter()
        .map(|a| a.status)
        .collect();
    assert_eq!(statuses, vec![ApprovalStatus::Cancelled]);
    let events = collect(&run).await;
    assert_eq!(events.last().map(|e| e.kind), Some(EventType::RunCancelled));
}

async fn a_run_lists_and_downloads_its_artifacts(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let run = talon.agent("main").run("hello").await.unwrap();
    let result = run.wait().await.unwrap();
    let artifacts = run.artifacts().await.unwrap();
    let trajectory = artifacts
        .iter()
        .find(|a| a.kind == talon_sdk::protocol::gateway::ArtifactType::Trajectory)
        .expect("every run leaves its trajectory");
    assert!(
        result
            .artifacts
            .unwrap_or_default()
            .iter()
            .any(|a| a.id == trajectory.id)
    );
    let mut file = tokio::fs::File::create(b_tmp(&b).join("trajectory.json"))
        .await
        .unwrap();
    let written = trajectory.download(&mut file).await.unwrap();
    let bytes = trajectory.bytes().await.unwrap();
    assert_eq!(written, bytes.len() as u64);
    assert_eq!(Some(written), trajectory.size_bytes);
    assert!(serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
    let again = talon.artifact(trajectory.id.as_str()).await.unwrap();
    assert_eq!(again.info(), trajectory.info());
    let missing = talon.artifact("art_missing").await.unwrap_err();
    assert_eq!(
        missing.code(),
        Some(talon_sdk::protocol::gateway::ErrorCode::NotFound)
    );
}

fn b_tmp(b: &Backend) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("talon-sdk-{}-{:?}", std::process::id(), b.kind));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn a_run_knows_its_session_and_tool_space(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    if let Some(fake) = &b.fake {
        use talon_sdk::protocol::gateway::{ApprovalPolicy, ToolOrigin, ToolReach, ToolSummary};
        fake.set_tools(vec![ToolSummary {
            id: "openclaw:core:read".into(),
            name: "read".into(),
            source: ToolOrigin::Core,
            owner: "core".into(),
            description: "Reads a file.".into(),
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
        }]);
    }
    let talon = b.talon().await;
    let session = talon.agent("main").session("sdk-user-1").await.unwrap();
    let run = talon
        .agent("main")
        .run_with(
            "hello",
            talon_sdk::RunOptions {
                session_key: Some("sdk-user-1".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    run.wait().await.unwrap();
    let of_run = run.session().await.unwrap();
    assert_eq!(
        (of_run.id(), of_run.key(), of_run.info().agent_id.as_str()),
        (session.id(), "sdk-user-1", "main")
    );
    let tools = run.tool_space().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "read"), "{tools:?}");
}
