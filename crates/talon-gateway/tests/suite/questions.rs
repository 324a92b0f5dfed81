//! Questions: the model asks through `ask_user`; the question waits as a
//! stored resource until `questions.respond` gives an answer that fits its
//! choices or schema; the answer is the call's result.

use serde_json::{Value, json};
use talon_mock_model::Script;
use talon_testing::redact::{Redactor, redacted};
use talon_testing::wait;

use super::ws::Transport;
use super::{Options, TestGateway, call_then_say, stored_events};

fn script(arguments: Value) -> Script {
    call_then_say("ask_user", arguments, "Thanks.")
}

async fn gateway(arguments: Value) -> TestGateway {
    let g = TestGateway::start_opts(Options {
        script: script(arguments),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

async fn start(g: &TestGateway, t: &Transport) -> (Value, Value) {
    let run = t
        .call(
            g,
            "runs.create",
            json!({"input": "deploy it", "sessionKey": "ask"}),
        )
        .await
        .unwrap();
    let run_id = run["runId"].clone();
    let question = wait::until_async("a question to be asked", wait::DEADLINE, async || {
        let list = t
            .call(
                g,
                "questions.list",
                json!({"runId": run_id, "status": "pending"}),
            )
            .await
            .unwrap();
        list["questions"].get(0).cloned()
    })
    .await;
    (run_id, question)
}

async fn finish(g: &TestGateway, t: &Transport, run_id: &Value) -> Vec<Value> {
    let result = t
        .call(
            g,
            "runs.wait",
            json!({"runId": run_id, "timeoutMs": 20_000}),
        )
        .await
        .unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    stored_events(g, t, run_id).await
}

/// The tool message the model got for its question, as JSON.
fn told(g: &TestGateway) -> Value {
    serde_json::from_str(&super::told(g)).unwrap()
}

#[tokio::test]
async fn an_answer_that_misses_the_schema_is_refused_and_a_fitting_one_answers() {
    let schema = json!({
        "type": "object",
        "properties": {"branch": {"enum": ["main", "dev"]}, "force": {"type": "boolean"}},
        "required": ["branch"],
        "additionalProperties": false
    });
    let g = gateway(json!({"prompt": "Which branch?", "answerSchema": schema})).await;
    let t = Transport::Http;
    let (run_id, question) = start(&g, &t).await;
    let id = question["id"].clone();
    let mut r = Redactor::new();
    insta::assert_json_snapshot!("schema_question", r.value(&question));
    let wrong = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": {"branch": "prod", "force": "yes"}}),
        )
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("schema_refused", r.value(&wrong));
    // Still open.
    let list = t
        .call(&g, "questions.list", json!({"runId": run_id}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("schema_still_open", r.value(&list));
    let answered = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": {"branch": "main"}}),
        )
        .await
        .unwrap();
    insta::assert_json_snapshot!("schema_answered", r.value(&answered));
    let events = finish(&g, &t, &run_id).await;
    // One question.requested, one question.answered with the answer.
    insta::assert_json_snapshot!("schema_events", r.transcript(&events));
    pretty_assertions::assert_eq!(
        told(&g),
        json!({"questionId": id, "answer": {"branch": "main"}})
    );
    // Answered once.
    let again = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": {"branch": "dev"}}),
        )
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("schema_answered_once", r.value(&again));
}

#[tokio::test]
async fn a_choice_must_be_one_of_the_choices() {
    let g = gateway(json!({"prompt": "Ship?", "choices": ["yes", "no"]})).await;
    let t = Transport::Http;
    let (run_id, question) = start(&g, &t).await;
    let id = question["id"].clone();
    let wrong = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": "maybe"}),
        )
        .await
        .unwrap_err();
    insta::assert_json_snapshot!("choice_refused", redacted(&wrong));
    t.call(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "yes"}),
    )
    .await
    .unwrap();
    finish(&g, &t, &run_id).await;
    pretty_assertions::assert_eq!(told(&g), json!({"questionId": id, "answer": "yes"}));
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_model_reads_so() {
    let g = gateway(json!({"prompt": "Anyone?", "timeoutMs": 300})).await;
    let t = Transport::Http;
    let (run_id, question) = start(&g, &t).await;
    finish(&g, &t, &run_id).await;
    let mut r = Redactor::new();
    // The question's id is `<q..._1>` in what follows.
    r.value(&question);
    // The model reads that nobody answered the question before it expired.
    insta::assert_json_snapshot!("expired_told", r.value(&told(&g)));
    let list = t
        .call(&g, "questions.list", json!({"runId": run_id}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("expired_list", r.value(&list));
}

#[tokio::test]
async fn bad_questions_fail_the_call_not_the_run() {
    let g = gateway(json!({"prompt": "x", "answerSchema": {"$ref": "#/defs/a"}})).await;
    let t = Transport::Http;
    let run = t
        .call(&g, "runs.create", json!({"input": "ask badly"}))
        .await
        .unwrap();
    finish(&g, &t, &run["runId"]).await;
    insta::assert_json_snapshot!("bad_told", redacted(&told(&g)));
    let list = t.call(&g, "questions.list", json!({})).await.unwrap();
    pretty_assertions::assert_eq!(list, json!({"questions": []}));
}

/// A provider may give every turn's call the same id (the mock model says
/// `call_1` each turn): the same question asked again in a later turn is
/// asked anew, never answered by the earlier answer.
#[tokio::test]
async fn a_question_asked_again_with_the_same_call_id_is_asked_anew() {
    use talon_mock_model::{Replay, Turn};
    let ask = || super::tool_turn("ask_user", json!({"prompt": "Which branch?"}));
    let g = TestGateway::start_opts(Options {
        script: Script {
            turns: vec![
                ask(),
                ask(),
                Turn {
                    text: Some("Done.".into()),
                    ..Turn::default()
                },
            ],
            replay: Replay::PerRun,
            ..Script::default()
        },
        ..Options::default()
    })
    .await;
    let t = Transport::Http;
    let run = t
        .call(&g, "runs.create", json!({"input": "deploy"}))
        .await
        .unwrap();
    let run_id = run["runId"].clone();
    for answer in ["main", "dev"] {
        let pending = super::next_pending(&g, &t, "questions", &run_id).await;
        t.call(
            &g,
            "questions.respond",
            json!({"questionId": pending["id"], "answer": answer}),
        )
        .await
        .unwrap();
    }
    let events = finish(&g, &t, &run_id).await;
    let answered: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "question.answered")
        .map(|e| e["data"]["answer"].clone())
        .collect();
    assert_eq!(answered, vec![json!("main"), json!("dev")]);
}
