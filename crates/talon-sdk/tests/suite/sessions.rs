//! Sessions through the high-level layer.

use talon_sdk::protocol::gateway::bounded::{RunId, SessionId};
use talon_sdk::protocol::gateway::{MessageRole, RunResultStatus};

use super::{Backend, Kind, REPLY, Scenario, both};

both!(
    a_session_sends_keeps_messages_forks_compacts_and_aborts,
    a_session_key_names_one_session
);

async fn a_session_sends_keeps_messages_forks_compacts_and_aborts(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let session = talon.agent("main").create_session().await.unwrap();
    let run = session.send("first question").await.unwrap();
    let result = run.wait().await.unwrap();
    assert_eq!(result.status, RunResultStatus::Completed);
    assert_eq!(
        result.session_id.as_ref().map(SessionId::as_str),
        Some(session.id())
    );
    let messages = session.messages().await.unwrap();
    let said: Vec<(MessageRole, String)> = messages
        .iter()
        .map(|m| (m.role, m.text.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        said,
        vec![
            (MessageRole::User, "first question".to_owned()),
            (MessageRole::Assistant, REPLY.to_owned())
        ]
    );
    let fork = session.fork(Some(messages[0].id.as_str())).await.unwrap();
    assert_ne!(fork.id(), session.id());
    assert_eq!(
        fork.info().parent_id.as_ref().map(SessionId::as_str),
        Some(session.id())
    );
    let kept: Vec<String> = fork
        .messages()
        .await
        .unwrap()
        .iter()
        .map(|m| m.text.clone().unwrap_or_default())
        .collect();
    assert_eq!(kept, vec!["first question".to_owned()]);
    let compacted = session.compact().await.unwrap();
    assert_eq!(compacted.id(), session.id());
    assert_eq!(session.abort().await.unwrap(), Vec::<RunId>::new());
    let artifacts = session.artifacts().await.unwrap();
    assert!(!artifacts.is_empty());
}

async fn a_session_key_names_one_session(kind: Kind) {
    let b = Backend::start(kind, Scenario::Reply).await;
    let talon = b.talon().await;
    let a = talon.session("user-42").await.unwrap();
    let again = talon.agent("main").session("user-42").await.unwrap();
    assert_eq!(a.info(), again.info());
    assert_eq!(a.key(), "user-42");
    let other = talon.session("user-43").await.unwrap();
    assert_ne!(other.id(), a.id());
}
