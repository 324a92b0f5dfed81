//! Questions: the model asks through `ask_user`; the question waits as a
//! stored resource until `questions.respond` gives an answer that fits its
//! choices or schema; the answer is the call's result.

use serde_json::{Value, json};
use talon_mock_model::Script;
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
    let mut shown = question.clone();
    for volatile in [
        "id",
        "runId",
        "sessionId",
        "toolCallId",
        "createdAt",
        "expiresAt",
    ] {
        assert!(!shown[volatile].is_null(), "{volatile}: {question}");
        shown.as_object_mut().unwrap().remove(volatile);
    }
    assert_eq!(
        shown,
        json!({"prompt": "Which branch?", "answerSchema": schema, "status": "pending"})
    );
    let wrong = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": {"branch": "prod", "force": "yes"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(wrong["code"], "invalid_request", "{wrong}");
    assert_eq!(
        wrong["details"]["errors"],
        json!([
            "the answer at /branch: must be one of [\"main\",\"dev\"]",
            "the answer at /force: expected boolean, got string"
        ])
    );
    // Still open.
    let list = t
        .call(&g, "questions.list", json!({"runId": run_id}))
        .await
        .unwrap();
    assert_eq!(list["questions"][0]["status"], "pending");
    let answered = t
        .call(
            &g,
            "questions.respond",
            json!({"questionId": id, "answer": {"branch": "main"}}),
        )
        .await
        .unwrap();
    assert_eq!(answered["status"], "answered");
    assert_eq!(answered["answer"], json!({"branch": "main"}));
    let events = finish(&g, &t, &run_id).await;
    let requested: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "question.requested")
        .collect();
    assert_eq!(requested.len(), 1);
    assert_eq!(requested[0]["data"]["id"], id);
    let answered: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "question.answered")
        .collect();
    assert_eq!(
        answered[0]["data"],
        json!({"questionId": id, "answer": {"branch": "main"}})
    );
    assert_eq!(
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
    assert_eq!(again["code"], "conflict");
    assert_eq!(
        again["details"]["question"]["answer"],
        json!({"branch": "main"})
    );
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
    assert_eq!(
        wrong["details"]["errors"],
        json!(["the answer must be one of [\"yes\", \"no\"]"])
    );
    t.call(
        &g,
        "questions.respond",
        json!({"questionId": id, "answer": "yes"}),
    )
    .await
    .unwrap();
    finish(&g, &t, &run_id).await;
    assert_eq!(told(&g)["answer"], "yes");
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_model_reads_so() {
    let g = gateway(json!({"prompt": "Anyone?", "timeoutMs": 300})).await;
    let t = Transport::Http;
    let (run_id, question) = start(&g, &t).await;
    finish(&g, &t, &run_id).await;
    let told = told(&g);
    assert_eq!(told["status"], "failed", "{told}");
    assert!(
        told.to_string().contains(&format!(
            "nobody answered question {} before it expired",
            question["id"].as_str().unwrap()
        )),
        "{told}"
    );
    let list = t
        .call(&g, "questions.list", json!({"runId": run_id}))
        .await
        .unwrap();
    assert_eq!(list["questions"][0]["status"], "expired");
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
    let told = told(&g);
    assert!(
        told.to_string()
            .contains("answerSchema: $ref is not supported"),
        "{told}"
    );
    let list = t.call(&g, "questions.list", json!({})).await.unwrap();
    assert_eq!(list["questions"], json!([]));
}
