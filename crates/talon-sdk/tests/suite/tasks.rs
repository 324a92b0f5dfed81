//! Background tasks through the high-level layer: a run that spawns a
//! sub-agent (the real gateway's mock model calls `sessions_spawn`; the
//! fake plays `FakeRun::spawn`) lists it in `run.tasks()` and
//! `talon.tasks().list(..)`; `task.wait()` follows the log to its end;
//! an ended task refuses `cancel` and `notify` with the table's
//! `task_ended`; a held task (fake only) is waited for live and cancelled.

use std::time::Duration;

use futures::StreamExt as _;
use talon_sdk::protocol::EventType;
use talon_sdk::protocol::gateway::refuse;
use talon_sdk::protocol::gateway::tasks::{NotifyPolicy, TaskKind, TaskStatus, TasksListParams};
use talon_sdk::{Error, Task};
use talon_sdk_testing::{FakeGateway, FakeRun, FakeTask};
use talon_testing::wait;

use super::{Backend, DONE, Kind, SPAWNED_LABEL, SPAWNED_TASK, Scenario, both};

both!(a_spawned_sub_agent_is_listed_waited_for_and_refuses_changes_once_ended);

/// The statuses of a task's `task.updated` events, each change once.
async fn statuses(task: &Task) -> Vec<TaskStatus> {
    let events: Vec<_> = task.events(None).collect().await;
    let mut out: Vec<TaskStatus> = Vec::new();
    for event in events {
        let event = event.unwrap();
        if event.kind != EventType::TaskUpdated {
            continue;
        }
        assert_eq!(event.task_id.as_ref(), Some(&task.id));
        let status =
            serde_json::from_value::<talon_sdk::protocol::gateway::tasks::Task>(event.data)
                .unwrap()
                .status;
        if out.last() != Some(&status) {
            out.push(status);
        }
    }
    out
}

fn api_error(error: Error) -> talon_sdk::protocol::gateway::ApiError {
    match error {
        Error::Api(error) => error,
        other => panic!("not an API error: {other}"),
    }
}

async fn a_spawned_sub_agent_is_listed_waited_for_and_refuses_changes_once_ended(kind: Kind) {
    let backend = Backend::start(kind, Scenario::Spawn).await;
    let talon = backend.talon().await;
    let run = talon.agent("main").run("plan it").await.unwrap();
    run.wait().await.unwrap();

    let tasks = run.tasks().await.unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let ended = tasks[0].wait().await.unwrap();
    assert_eq!(
        (
            ended.kind,
            ended.status,
            ended.label.as_deref(),
            ended.description.as_deref(),
            ended.result.as_deref(),
            ended.run_id.as_ref(),
            ended.depth,
        ),
        (
            TaskKind::Subagent,
            TaskStatus::Succeeded,
            Some(SPAWNED_LABEL),
            Some(SPAWNED_TASK),
            Some(DONE),
            Some(&run.info().id),
            1,
        ),
        "{:?}",
        ended.info()
    );
    // Waiting again for an ended task answers at once, from the replay.
    assert_eq!(ended.wait().await.unwrap().status, TaskStatus::Succeeded);

    let succeeded = talon
        .tasks()
        .list(TasksListParams {
            status: Some(vec![TaskStatus::Succeeded]),
            limit: Some(1),
            ..TasksListParams::default()
        })
        .await
        .unwrap();
    let ids: Vec<&str> = succeeded.iter().map(Task::id).collect();
    assert_eq!(ids, vec![ended.id()]);
    let running = talon
        .tasks()
        .list(TasksListParams {
            status: Some(vec![TaskStatus::Running]),
            ..TasksListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(running.len(), 0);
    assert_eq!(
        talon.tasks().get(ended.id()).await.unwrap().status,
        TaskStatus::Succeeded
    );

    assert_eq!(
        statuses(&ended).await,
        vec![
            TaskStatus::Queued,
            TaskStatus::Running,
            TaskStatus::Succeeded
        ]
    );

    let refused = api_error(ended.cancel(Some("too late".into())).await.unwrap_err());
    assert_eq!(refused, refuse::task_ended(ended.id(), "succeeded"));
    let refused = api_error(ended.notify(NotifyPolicy::Silent).await.unwrap_err());
    assert_eq!(refused, refuse::task_ended(ended.id(), "succeeded"));
    let missing = api_error(talon.tasks().get("task_nope").await.unwrap_err());
    assert_eq!(missing, refuse::not_found("task", "task_nope"));
}

async fn fake() -> (FakeGateway, talon_sdk::Talon) {
    let fake = FakeGateway::start().await.unwrap();
    let talon = talon_sdk::Talon::connect(fake.url(), fake.token())
        .await
        .unwrap();
    (fake, talon)
}

fn calls_of(fake: &FakeGateway, method: &str) -> usize {
    fake.calls().iter().filter(|c| c.method == method).count()
}

#[tokio::test]
async fn wait_follows_the_log_until_a_held_task_ends_without_polling() {
    let (fake, talon) = fake().await;
    fake.script_run(FakeRun::reply("spawned").spawn(FakeTask::new("slow work").held()));
    let run = talon.agent("main").run("go").await.unwrap();
    run.wait().await.unwrap();
    let task = run.tasks().await.unwrap().remove(0);
    assert_eq!(task.status, TaskStatus::Running);

    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.wait().await }
    });
    // The replay is read (two pages: the changes so far, then none) before
    // the log is followed.
    wait::until_async(
        "wait to have replayed the task's events",
        wait::DEADLINE,
        async || calls_of(&fake, "tasks.events") == 2,
    )
    .await;
    let finished = fake
        .finish_task(task.id(), TaskStatus::Succeeded, Some("the answer"))
        .unwrap();
    let ended = tokio::time::timeout(wait::DEADLINE, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ended.info(), &finished);
    assert_eq!(ended.result.as_deref(), Some("the answer"));
    // It learned the end from the stream, not by asking again.
    assert_eq!(
        (
            calls_of(&fake, "tasks.events"),
            calls_of(&fake, "tasks.get")
        ),
        (2, 0)
    );
}

#[tokio::test]
async fn a_running_task_is_cancelled_with_its_reason_and_its_policy_changed_before() {
    let (fake, talon) = fake().await;
    let added = fake.add_task(FakeTask::new("watch the logs").label("watcher").held());
    let task = talon.tasks().get(added.id.as_str()).await.unwrap();
    assert_eq!(task.info(), &added);
    assert_eq!(task.run_id, None);

    let quiet = task.notify(NotifyPolicy::Silent).await.unwrap();
    assert_eq!(quiet.notify_policy, NotifyPolicy::Silent);
    let cancelled = task.cancel(Some("not needed".into())).await.unwrap();
    assert_eq!(
        (
            cancelled.status,
            cancelled.progress_summary.as_deref(),
            cancelled.notify_policy
        ),
        (
            TaskStatus::Cancelled,
            Some("cancelled: not needed"),
            NotifyPolicy::Silent
        )
    );
    assert_eq!(task.wait().await.unwrap().info(), cancelled.info());
    assert_eq!(
        statuses(&task).await,
        vec![
            TaskStatus::Queued,
            TaskStatus::Running,
            TaskStatus::Cancelled
        ]
    );
    let again = api_error(task.cancel(None).await.unwrap_err());
    assert_eq!(again, refuse::task_ended(task.id(), "cancelled"));
    // A scripted end after a cancel changes nothing.
    assert_eq!(
        fake.finish_task(task.id(), TaskStatus::Succeeded, None),
        None
    );
}

#[tokio::test]
async fn a_task_that_fails_carries_its_error_and_lists_page_by_page() {
    let (fake, talon) = fake().await;
    let jobs: Vec<_> = (0..3)
        .map(|n| fake.add_task(FakeTask::new(format!("job {n}")).takes(Duration::from_millis(5))))
        .collect();
    let failing = fake.add_task(FakeTask::new("doomed").fail(
        talon_sdk::protocol::gateway::ErrorCode::Internal,
        "it broke",
    ));
    let handle = talon.tasks().get(failing.id.as_str()).await.unwrap();
    let ended = handle.wait().await.unwrap();
    assert_eq!(
        (
            ended.status,
            ended.error.as_ref().map(|e| e.message.as_str())
        ),
        (TaskStatus::Failed, Some("it broke"))
    );
    // Newest first, two per page: every task once.
    let all = talon
        .tasks()
        .list(TasksListParams {
            limit: Some(2),
            ..TasksListParams::default()
        })
        .await
        .unwrap();
    let descriptions: Vec<Option<&str>> = all.iter().map(|t| t.description.as_deref()).collect();
    assert_eq!(
        descriptions,
        vec![Some("doomed"), Some("job 2"), Some("job 1"), Some("job 0")]
    );
    assert_eq!(calls_of(&fake, "tasks.list"), 2);

    // The jobs have ended (on a loaded machine 5 ms can be long): none is
    // in the running list below.
    for job in &jobs {
        let job = talon.tasks().get(job.id.as_str()).await.unwrap();
        assert_eq!(job.wait().await.unwrap().status, TaskStatus::Succeeded);
    }
    // Paging goes on from a cursor whose task has left the filter meanwhile.
    for n in 3..6 {
        fake.add_task(FakeTask::new(format!("held {n}")).held());
    }
    let running = TasksListParams {
        status: Some(vec![TaskStatus::Running]),
        limit: Some(1),
        ..TasksListParams::default()
    };
    let mut cancelled = Vec::new();
    let mut page = talon.client().tasks_list(running.clone()).await.unwrap();
    loop {
        for info in page.tasks {
            let task = Task::from_parts(talon.client().clone(), info);
            cancelled.push(task.cancel(None).await.unwrap().description.clone());
        }
        let Some(cursor) = page.next_cursor else {
            break;
        };
        page = talon
            .client()
            .tasks_list(TasksListParams {
                cursor: Some(cursor),
                ..running.clone()
            })
            .await
            .unwrap();
    }
    assert_eq!(
        cancelled,
        vec![
            Some("held 5".to_owned()),
            Some("held 4".to_owned()),
            Some("held 3".to_owned())
        ]
    );
}
