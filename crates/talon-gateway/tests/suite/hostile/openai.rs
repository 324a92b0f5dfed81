//! Hostile requests to the OpenAI-compatible surface: each is refused in
//! OpenAI's envelope with a stable `code`, a `x-should-retry: false`
//! header, no run started and no panic; the surface is off when the
//! config says so (and on a non-loopback address unless it says so); a
//! flood of concurrent calls each gets its own answer.

use serde_json::{Value, json};
use talon_gateway::Limits;

use super::super::openai::{Answer, get, post};
use super::super::{Options, TestGateway};

/// Each bad request's status and error code, and that no run started.
#[tokio::test]
async fn bad_requests_are_refused_with_stable_codes_and_start_nothing() {
    let g = TestGateway::start_opts(Options {
        limits: Limits {
            max_body_bytes: 64 * 1024,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let chat = |extra: Value| {
        let mut body = json!({"model": "talon/main", "messages": user});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases: Vec<(&str, &str, Value, u16, &str)> = vec![
        (
            "huge body",
            "/v1/chat/completions",
            chat(json!({"user": "x".repeat(70 * 1024)})),
            400,
            "body_too_large",
        ),
        (
            "messages not a list",
            "/v1/chat/completions",
            chat(json!({"messages": "hi"})),
            400,
            "invalid_request",
        ),
        (
            "no messages",
            "/v1/chat/completions",
            chat(json!({"messages": []})),
            400,
            "invalid_messages",
        ),
        (
            "ends with the assistant",
            "/v1/chat/completions",
            chat(
                json!({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}),
            ),
            400,
            "invalid_messages",
        ),
        (
            "unknown role",
            "/v1/chat/completions",
            chat(json!({"messages": [{"role": "root", "content": "a"}]})),
            400,
            "invalid_messages",
        ),
        (
            "an image part",
            "/v1/chat/completions",
            chat(
                json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}]}]}),
            ),
            400,
            "unsupported_content",
        ),
        (
            "a tool answer without its call",
            "/v1/chat/completions",
            chat(json!({"messages": [{"role": "tool", "content": "x"}]})),
            400,
            "invalid_messages",
        ),
        (
            "n > 1",
            "/v1/chat/completions",
            chat(json!({"n": 2})),
            400,
            "unsupported_parameter",
        ),
        (
            "a forced tool",
            "/v1/chat/completions",
            chat(json!({"tool_choice": "required"})),
            400,
            "unsupported_parameter",
        ),
        (
            "an unknown model",
            "/v1/chat/completions",
            chat(json!({"model": "talon/../../etc"})),
            404,
            "model_not_found",
        ),
        (
            "a huge model name",
            "/v1/chat/completions",
            chat(json!({"model": "m".repeat(10_000)})),
            404,
            "model_not_found",
        ),
        (
            "a bad client tool name",
            "/v1/chat/completions",
            chat(
                json!({"tools": [{"type": "function", "function": {"name": "a b/c", "parameters": {"type": "object"}}}]}),
            ),
            400,
            "invalid_request",
        ),
        (
            "input not text or items",
            "/v1/responses",
            json!({"model": "talon/main", "input": 7}),
            400,
            "invalid_input",
        ),
        (
            "an unknown item",
            "/v1/responses",
            json!({"model": "talon/main", "input": [{"type": "computer_call"}]}),
            400,
            "invalid_input",
        ),
        (
            "conversation",
            "/v1/responses",
            json!({"model": "talon/main", "input": "x", "conversation": "conv_1"}),
            400,
            "unsupported_parameter",
        ),
        (
            "store false, which would not be honoured",
            "/v1/responses",
            json!({"model": "talon/main", "input": "x", "store": false}),
            400,
            "unsupported_parameter",
        ),
        (
            "a hosted tool",
            "/v1/responses",
            json!({"model": "talon/main", "input": "x", "tools": [{"type": "web_search"}]}),
            400,
            "unsupported_parameter",
        ),
        (
            "an approval answer in input",
            "/v1/responses",
            json!({"model": "talon/main", "input": [{"type": "mcp_approval_response", "approval_request_id": "mcpr_x", "approve": true}]}),
            400,
            "invalid_input",
        ),
    ];
    let mut seen = Vec::new();
    for (what, path, body, status, code) in cases {
        let answer = post(&g, &g.admin, path, body, &[]).await;
        check(what, &answer, status, code);
        seen.push(what);
    }
    // A session key past the protocol's cap.
    let long = "k".repeat(5000);
    let answer = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!({})),
        &[("x-talon-session-key", &long)],
    )
    .await;
    check("a huge session key", &answer, 400, "invalid_request");
    let answer = post(
        &g,
        &g.admin,
        "/v1/chat/completions",
        chat(json!({})),
        &[("x-talon-session-key", "")],
    )
    .await;
    check("an empty session key", &answer, 400, "invalid_request");
    // Not JSON, and JSON nested past any parser's depth (built as text:
    // a value that deep would overflow this test's own stack).
    let open = "[".repeat(10_000);
    let close = "]".repeat(10_000);
    let deep_chat = format!(
        r#"{{"model": "talon/main", "messages": [{{"role": "user", "content": {open}"x"{close}}}]}}"#
    );
    let deep_input = format!(r#"{{"model": "talon/main", "input": {open}"x"{close}}}"#);
    for (what, path, body) in [
        ("not JSON", "/v1/chat/completions", "{not json".to_owned()),
        ("not JSON", "/v1/responses", "{not json".to_owned()),
        ("deep nesting", "/v1/chat/completions", deep_chat),
        ("deep nesting", "/v1/responses", deep_input),
    ] {
        let request = g
            .client
            .post(g.url(path))
            .bearer_auth(&g.admin)
            .header("content-type", "application/json")
            .body(body);
        let response = request.send().await.unwrap();
        let answer = Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            text: response.text().await.unwrap(),
        };
        check(what, &answer, 400, "invalid_request");
    }
    // Wrong methods and queries.
    let wrong = get(&g, &g.admin, "/v1/chat/completions").await;
    check("GET on a POST route", &wrong, 405, "method_not_allowed");
    let garbage = get(
        &g,
        &g.admin,
        "/v1/responses/resp_x?stream=true&starting_after=minus",
    )
    .await;
    check("a bad starting_after", &garbage, 400, "invalid_request");
    let unknown = get(
        &g,
        &g.admin,
        "/v1/responses/resp_run_000000000000000000000000",
    )
    .await;
    check("an unknown response", &unknown, 404, "response_not_found");
    let (_, runs) = g.call(&g.admin, "runs.list", json!({})).await;
    assert_eq!(runs["runs"], json!([]), "no case started a run");
}

fn check(what: &str, answer: &Answer, status: u16, code: &str) {
    let body: Value = serde_json::from_str(&answer.text)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", answer.text));
    assert_eq!(
        (
            answer.status,
            body["error"]["code"].as_str().unwrap_or_default(),
            answer.header("x-should-retry").as_str()
        ),
        (status, code, "false"),
        "{what}: {body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty() && m.len() < 2000),
        "{what}: {body}"
    );
}

#[tokio::test]
async fn tokens_travel_only_in_the_header_and_scopes_hold() {
    let g = TestGateway::start().await;
    let (_, ticket) = g.call(&g.admin, "tokens.ticket", json!({})).await;
    let ticket = ticket["ticket"].as_str().unwrap_or("tkt");
    let by_url = g
        .client
        .get(g.url(&format!("/v1/models?ticket={ticket}")))
        .send()
        .await
        .unwrap();
    assert_eq!(by_url.status(), 401, "a ticket is no key here");
    let (_, made) = g
        .call(
            &g.admin,
            "tokens.create",
            json!({"name": "reader", "scopes": ["agent.read"], "expiresInMs": 60_000}),
        )
        .await;
    let reader = made["token"].as_str().unwrap();
    let refused = post(
        &g,
        reader,
        "/v1/chat/completions",
        json!({"model": "talon/main", "messages": [{"role": "user", "content": "hi"}]}),
        &[],
    )
    .await;
    check("a reader creating", &refused, 403, "insufficient_scope");
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent.run")
    );
}

#[tokio::test]
async fn the_surface_is_off_when_the_config_says_so() {
    let g = TestGateway::start_opts(Options {
        openai: talon_gateway::OpenAiPolicy {
            enabled: Some(false),
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    for (path, post_it) in [
        ("/v1/models", false),
        ("/v1/chat/completions", true),
        ("/v1/responses", true),
        ("/v1/responses/resp_x", false),
    ] {
        let answer = if post_it {
            post(
                &g,
                &g.admin,
                path,
                json!({"model": "talon/main", "input": "x"}),
                &[],
            )
            .await
        } else {
            get(&g, &g.admin, path).await
        };
        check(path, &answer, 404, "endpoint_disabled");
    }
    // The method table is unaffected.
    assert_eq!(g.call(&g.admin, "agents.list", json!({})).await.0, 200);
}

#[tokio::test]
async fn a_flood_of_concurrent_completions_each_get_their_own_answer() {
    let g = TestGateway::with_script(talon_mock_model::Script {
        replay: talon_mock_model::Replay::PerRun,
        ..talon_mock_model::Script::texts(&["Pong."])
    })
    .await;
    let calls = (0..24).map(|i| {
        let g = &g;
        async move {
            let body = json!({"model": "talon/main", "stream": i % 2 == 0,
                              "messages": [{"role": "user", "content": format!("ping {i}")}]});
            post(
                g,
                &g.admin,
                "/v1/chat/completions",
                body,
                &[("x-talon-session-key", &format!("flood-{}", i % 3))],
            )
            .await
        }
    });
    let answers = futures::future::join_all(calls).await;
    let mut runs: Vec<String> = answers.iter().map(|a| a.header("x-talon-run-id")).collect();
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer.status, 200, "{i}: {}", answer.text);
        let text = if i % 2 == 0 {
            answer
                .data()
                .iter()
                .filter_map(|c| {
                    c["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect::<String>()
        } else {
            answer.json()["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(text, "Pong.", "{i}");
    }
    runs.sort();
    runs.dedup();
    assert_eq!(runs.len(), 24);
}
