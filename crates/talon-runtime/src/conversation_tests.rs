//! The conversation's conversions: stored and back, compaction, input
//! rules, pending client calls.

use super::*;
use talon_protocol::gateway::bounded::{AgentId, CellId, RunId, SessionId};

fn conv(messages: Vec<ModelMessage>) -> Conversation {
    Conversation(messages)
}

#[test]
fn a_run_round_trips_through_the_store() {
    let messages = conv(vec![
        ModelMessage::User("hi".into()),
        ModelMessage::Assistant {
            text: None,
            tool_calls: vec![ToolCallRequest {
                id: "c1".into(),
                name: "exec".into(),
                arguments: r#"{"code":"1"}"#.into(),
            }],
            reasoning: Vec::new(),
        },
        ModelMessage::Tool {
            call_id: "c1".into(),
            content: "1".into(),
        },
        ModelMessage::Assistant {
            text: Some("one".into()),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
    ]);
    let stored = messages.to_stored(&SessionId::new("s"), &RunId::new("r"), 7);
    assert_eq!(
        stored[1].tool_calls[0].arguments,
        serde_json::json!({"code": "1"})
    );
    assert_eq!(stored[3].id, MessageId::new("msg_r_0003"));
    assert_eq!(Conversation::of_session(&stored), messages);
}

#[test]
fn history_starts_at_the_last_compaction() {
    let mut stored = conv(vec![ModelMessage::User("old".into())]).to_stored(
        &SessionId::new("s"),
        &RunId::new("r"),
        1,
    );
    stored.push(Message {
        role: MessageRole::Compaction,
        text: Some("we said hello".into()),
        ..stored[0].clone()
    });
    stored.extend(conv(vec![ModelMessage::User("new".into())]).to_stored(
        &SessionId::new("s"),
        &RunId::new("r2"),
        2,
    ));
    assert_eq!(
        Conversation::of_session(&stored),
        conv(vec![
            ModelMessage::System("Summary of the earlier conversation:\nwe said hello".into()),
            ModelMessage::User("new".into()),
        ])
    );
}

fn input(role: InputRole, content: &str, call: Option<&str>) -> InputMessage {
    InputMessage {
        role,
        content: content.into(),
        tool_call_id: call.map(ToolCallId::new),
    }
}

#[test]
fn the_last_user_message_is_the_turn() {
    let input = vec![
        input(InputRole::System, "be brief", None),
        input(InputRole::User, "first", None),
        input(InputRole::Assistant, "ok", None),
        input(InputRole::User, "second", None),
    ];
    let split = split_input(&input).unwrap();
    assert_eq!(split.message.as_deref(), Some("second"));
    assert_eq!(split.before.len(), 3);
    assert!(split.answers.is_empty());
    assert!(split_input(&input[..1]).is_err());
    assert!(split_input(&input[..3]).is_err());
    assert!(split_input(&[]).is_err());
}

#[test]
fn tool_answers_come_first_and_may_stand_alone() {
    let answers = vec![
        input(InputRole::Tool, "blue", Some("c1")),
        input(InputRole::Tool, "42", Some("c2")),
    ];
    assert_eq!(
        split_input(&answers).unwrap(),
        Input {
            answers: vec![("c1".into(), "blue".into()), ("c2".into(), "42".into())],
            before: Conversation::default(),
            message: None,
        }
    );
    let mut then_user = answers.clone();
    then_user.push(input(InputRole::User, "thanks", None));
    assert_eq!(
        split_input(&then_user).unwrap().message.as_deref(),
        Some("thanks")
    );
    let bad = [
        (
            vec![input(InputRole::Tool, "x", None)],
            "needs its toolCallId",
        ),
        (
            vec![input(InputRole::Tool, "x", Some(""))],
            "needs its toolCallId",
        ),
        (
            vec![
                input(InputRole::Tool, "x", Some("c")),
                input(InputRole::Tool, "y", Some("c")),
            ],
            "answered twice",
        ),
        (
            vec![
                input(InputRole::User, "x", None),
                input(InputRole::Tool, "y", Some("c")),
            ],
            "come first",
        ),
        (
            vec![input(InputRole::User, "x", Some("c"))],
            "only a tool message",
        ),
        (
            vec![
                input(InputRole::Tool, "x", Some("c")),
                input(InputRole::Assistant, "y", None),
            ],
            "the last message must be the user's",
        ),
    ];
    for (messages, why) in bad {
        let error = split_input(&messages).unwrap_err().to_string();
        assert!(error.contains(why), "{error:?} should say {why:?}");
    }
}

fn assistant_calling(ids: &[&str]) -> ModelMessage {
    ModelMessage::Assistant {
        text: None,
        tool_calls: ids
            .iter()
            .map(|id| ToolCallRequest {
                id: (*id).into(),
                name: "pick_color".into(),
                arguments: "{}".into(),
            })
            .collect(),
        reasoning: Vec::new(),
    }
}

#[test]
fn pending_calls_are_answered_by_the_app_or_marked_unanswered() {
    let history = conv(vec![
        ModelMessage::User("pick".into()),
        assistant_calling(&["c1", "c2", "c3"]),
        ModelMessage::Tool {
            call_id: "c3".into(),
            content: "server-side".into(),
        },
    ]);
    assert_eq!(history.pending_calls(), ["c1", "c2"]);
    assert_eq!(
        history
            .answer_pending(&[("c2".into(), "blue".into())])
            .unwrap(),
        conv(vec![
            ModelMessage::Tool {
                call_id: "c1".into(),
                content: UNANSWERED.into()
            },
            ModelMessage::Tool {
                call_id: "c2".into(),
                content: "blue".into()
            },
        ])
    );
    assert_eq!(
        history.answer_pending(&[("c3".into(), "again".into())]),
        Err(RunInputError::NotPending("c3".into()))
    );
    // Nothing is pending once a later message follows, and the history
    // then answers the open calls itself.
    let mut later = history.clone();
    later.0.push(ModelMessage::User("never mind".into()));
    assert!(later.pending_calls().is_empty());
    assert_eq!(later.answer_pending(&[]).unwrap(), Conversation::default());
    let stored = later.to_stored(&SessionId::new("s"), &RunId::new("r"), 1);
    let unanswered = |id: &str| ModelMessage::Tool {
        call_id: id.into(),
        content: UNANSWERED.into(),
    };
    assert_eq!(
        Conversation::of_session(&stored),
        conv(vec![
            later.0[0].clone(),
            later.0[1].clone(),
            later.0[2].clone(),
            unanswered("c1"),
            unanswered("c2"),
            later.0[3].clone(),
        ])
    );
    // The tail's open calls stay open for the next run.
    assert_eq!(Conversation::of_session(&stored[..3]), history);
}

#[test]
fn an_input_is_prepared_after_the_session() {
    let history = conv(vec![
        ModelMessage::User("pick".into()),
        assistant_calling(&["c1"]),
    ]);
    let input = RunInput::Messages(vec![
        input(InputRole::Tool, "blue", Some("c1")),
        input(InputRole::User, "thanks", None),
    ]);
    let prepared = prepare(history.clone(), &input).unwrap();
    let answer = ModelMessage::Tool {
        call_id: "c1".into(),
        content: "blue".into(),
    };
    assert_eq!(
        prepared,
        Prepared {
            history: conv(vec![
                history.0[0].clone(),
                history.0[1].clone(),
                answer.clone()
            ]),
            added: conv(vec![answer]),
            message: Some("thanks".into()),
            settled: vec![SettledCall {
                call_id: "c1".into(),
                parent_id: None,
                name: "pick_color".into(),
                answer: Some("blue".into()),
            }],
            ..Prepared::default()
        }
    );
    assert_eq!(
        prepare(Conversation::default(), &RunInput::Text("hi".into())).unwrap(),
        Prepared {
            history: Conversation::default(),
            added: Conversation::default(),
            message: Some("hi".into()),
            ..Prepared::default()
        }
    );
}

#[test]
fn unanswered_reads_as_the_shared_message() {
    let value: serde_json::Value = serde_json::from_str(UNANSWERED).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"status": "unanswered", "error": talon_tools::UNANSWERED})
    );
}

#[test]
fn settled_calls_end_children_first_and_a_resumed_cells_last() {
    use talon_codemode::{AwaitingCell, CellCall};
    // The model called three tools; `e1` and `e2` are `exec` calls whose
    // cells wait for the app, `c3` the app's own tool.
    let history = conv(vec![
        ModelMessage::User("go".into()),
        assistant_calling(&["e1", "e2", "c3"]),
    ]);
    let cell = |parent: &str, calls: &[&str]| AwaitingCell {
        cell_id: CellId::new(format!("cell_{parent}")),
        scope: talon_codemode::CellScope {
            agent_id: AgentId::new("main"),
            session_id: SessionId::new("s"),
            run_id: RunId::new("r1"),
        },
        parent: parent.into(),
        calls: calls
            .iter()
            .enumerate()
            .map(|(n, id)| CellCall {
                host_call_id: n as u64,
                call_id: (*id).into(),
                name: "pick_color".into(),
            })
            .collect(),
    };
    let awaiting = [cell("e1", &["e1/1", "e1/2"]), cell("e2", &["e2/1"])];
    // Answers to e1's first call and to c3: e1 resumes with its second
    // call unanswered; e2 is abandoned, its exec and its call unanswered.
    let input = RunInput::Messages(vec![
        input(InputRole::Tool, "\"red\"", Some("e1/1")),
        input(InputRole::Tool, "done", Some("c3")),
    ]);
    let prepared = prepare_with(history, &input, &awaiting).unwrap();
    let settled = |id: &str, parent: Option<&str>, answer: Option<&str>| SettledCall {
        call_id: id.into(),
        parent_id: parent.map(Into::into),
        name: "pick_color".into(),
        answer: answer.map(Into::into),
    };
    assert_eq!(
        prepared.settled,
        vec![
            settled("e2/1", Some("e2"), None),
            settled("e2", None, None),
            settled("c3", None, Some("done")),
            settled("e1/1", Some("e1"), Some("\"red\"")),
            settled("e1/2", Some("e1"), None),
        ]
    );
}
