//! A run's input through the public conversation API: stored messages in,
//! checked input, pending client calls answered, the error for an answer
//! to nothing.

use talon_protocol::gateway::bounded::MessageId;
use talon_protocol::gateway::bounded::{RunId, SessionId, ToolCallId};
use talon_protocol::gateway::{
    InputMessage, InputRole, Message, MessageRole, MessageToolCall, RunInput,
};
use talon_runtime::Conversation;
use talon_runtime::conversation::{self, RunInputError, UNANSWERED};

fn stored(role: MessageRole, text: Option<&str>, calls: &[&str], answers: Option<&str>) -> Message {
    Message {
        id: MessageId::new(format!("m{}", calls.len())),
        session_id: SessionId::new("s"),
        run_id: Some(RunId::new("r")),
        role,
        text: text.map(Into::into),
        tool_calls: calls
            .iter()
            .map(|id| MessageToolCall {
                id: (*id).into(),
                name: "pick_color".into(),
                arguments: serde_json::json!({}),
            })
            .collect(),
        tool_call_id: answers.map(Into::into),
        created_at: 1,
    }
}

#[test]
fn an_app_answers_the_client_calls_a_session_left_pending() {
    let session = Conversation::of_session(&[
        stored(MessageRole::User, Some("pick two"), &[], None),
        stored(MessageRole::Assistant, None, &["c1", "c2"], None),
    ]);
    assert_eq!(session.pending_calls(), ["c1", "c2"]);
    let input = RunInput::Messages(vec![InputMessage {
        role: InputRole::Tool,
        content: "blue".into(),
        tool_call_id: Some(ToolCallId::new("c2")),
    }]);
    let prepared = conversation::prepare(session, &input).unwrap();
    assert_eq!(prepared.message, None);
    let added: Vec<_> = prepared
        .added
        .to_stored(&SessionId::new("s"), &RunId::new("r2"), 5)
        .into_iter()
        .map(|m| (m.role, m.tool_call_id.map(|c| c.to_string()), m.text))
        .collect();
    assert_eq!(
        added,
        [
            (
                MessageRole::Tool,
                Some("c1".into()),
                Some(UNANSWERED.into())
            ),
            (MessageRole::Tool, Some("c2".into()), Some("blue".into())),
        ]
    );
    assert!(prepared.history.pending_calls().is_empty());
}

#[test]
fn an_answer_to_no_pending_call_is_refused_by_name() {
    let session = Conversation::of_session(&[stored(MessageRole::User, Some("hi"), &[], None)]);
    let input = RunInput::Messages(vec![InputMessage {
        role: InputRole::Tool,
        content: "x".into(),
        tool_call_id: Some(ToolCallId::new("c9")),
    }]);
    let error = conversation::prepare(session.clone(), &input).unwrap_err();
    assert_eq!(error, RunInputError::NotPending("c9".into()));
    assert_eq!(
        error.to_string(),
        "input: toolCallId \"c9\" answers no pending client tool call of this session"
    );
    let bad = RunInput::Messages(Vec::new());
    assert!(matches!(
        conversation::prepare(session, &bad),
        Err(RunInputError::Messages(_))
    ));
}
