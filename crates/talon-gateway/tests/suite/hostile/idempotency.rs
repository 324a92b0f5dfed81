//! Idempotency keys are the caller's own: on every path that takes one
//! (`runs.create`, `sessions.send`, `tools.invoke`, `environments.create`,
//! the OpenAI routes' `Idempotency-Key`), another token's key is just a
//! new key. It never hands over the other's result, never answers
//! `conflict` (which would confirm what the other sent), and registering
//! it first never fails the other's call.

use serde_json::{Value, json};
use talon_gateway::tokens;
use talon_protocol::gateway::Scope;

use super::super::env_support::{Sources, call as admin_call};
use super::super::openai::post;
use super::super::{Options, TestGateway};

/// Two tokens with the same scopes.
async fn two_tokens(g: &TestGateway) -> (String, String) {
    let scopes = vec![
        Scope::AgentRead,
        Scope::AgentRun,
        Scope::SessionRead,
        Scope::SessionWrite,
        Scope::ToolsInvoke,
        Scope::EnvironmentWrite,
    ];
    let now = g.running.store.now_ms();
    let mut minted = Vec::new();
    for name in ["a", "b"] {
        let token = tokens::create(
            &g.running.store,
            Some(name.into()),
            scopes.clone(),
            None,
            now,
        )
        .await
        .unwrap();
        minted.push(token.secret);
    }
    let b = minted.pop().unwrap();
    let a = minted.pop().unwrap();
    (a, b)
}

fn ok(answer: (u16, Value)) -> Value {
    assert_eq!(answer.0, 200, "{}", answer.1);
    answer.1
}

#[tokio::test]
async fn another_tokens_run_keys_are_new_keys_on_every_route() {
    let g = TestGateway::start_opts(Options {
        config: json!({"tools": {"approvals": "allow"}}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let (a, b) = two_tokens(&g).await;
    let create = |key: &str, input: &str| json!({"input": input, "idempotencyKey": key});
    // A's key, replayed by B with A's params: B's own run.
    let first = ok(g.call(&a, "runs.create", create("k", "one")).await);
    let replayed = ok(g.call(&a, "runs.create", create("k", "one")).await);
    assert_eq!(replayed["id"], first["id"], "A's retry is A's run");
    let bs = ok(g.call(&b, "runs.create", create("k", "one")).await);
    assert_ne!(bs["id"], first["id"]);
    // With other params: no conflict, no oracle.
    let other = ok(g.call(&b, "runs.create", create("k2", "two")).await);
    assert_ne!(other["id"], first["id"]);
    // Registered by B first, A's call still succeeds, as A's.
    let pre = ok(g.call(&b, "runs.create", create("later", "x")).await);
    let later = ok(g.call(&a, "runs.create", create("later", "y")).await);
    assert_ne!(later["id"], pre["id"]);
    // A's own key with other params is still A's conflict, naming only
    // the key A gave.
    let (status, conflict) = g.call(&a, "runs.create", create("k", "other")).await;
    assert_eq!(
        (status, conflict),
        (
            409,
            json!({"error": {"code": "conflict", "retryable": false,
                   "message": "idempotency key \"k\" was used with other parameters"}})
        )
    );
    // `sessions.send` shares `runs.create`'s keys, per token.
    let session = ok(g
        .call(
            &a,
            "sessions.create",
            json!({"agentId": "main", "key": "app:a"}),
        )
        .await);
    let sent = ok(g
        .call(
            &a,
            "sessions.send",
            json!({"sessionId": session["id"], "input": "hi", "idempotencyKey": "s"}),
        )
        .await);
    let (status, _) = g
        .call(
            &b,
            "sessions.send",
            json!({"sessionId": session["id"], "input": "hi", "idempotencyKey": "s"}),
        )
        .await;
    assert_eq!(status, 200, "B may send to a session it can write");
    let resent = ok(g
        .call(
            &a,
            "sessions.send",
            json!({"sessionId": session["id"], "input": "hi", "idempotencyKey": "s"}),
        )
        .await);
    assert_eq!(resent["run"]["id"], sent["run"]["id"]);
    // Through the OpenAI route: A's `Idempotency-Key`, spelt natively by B
    // with the prefix the route adds, is B's own key.
    let body = json!({"model": "main", "input": "hello", "stream": false});
    let response = post(&g, &a, "/v1/responses", body, &[("idempotency-key", "r1")]).await;
    assert_eq!(response.status, 200, "{}", response.text);
    let run_a = response.header("x-talon-run-id");
    for forged in ["openai:r1", &format!("openai:{}:r1", "tok_a")] {
        let forged = ok(g.call(&b, "runs.create", create(forged, "hello")).await);
        assert_ne!(forged["id"], json!(run_a));
    }
    // `tools.invoke`: B's call with A's key runs B's call (the file is
    // written again), and A's retry is still A's first result.
    let path = g.dir.path().join("workspace/once.txt");
    let invoke = json!({"tool": "write", "arguments": {"path": "once.txt", "content": "first"},
                        "sessionKey": "k", "idempotencyKey": "write-once"});
    let first = ok(g.call(&a, "tools.invoke", invoke.clone()).await);
    std::fs::write(&path, "changed since").unwrap();
    let again = ok(g.call(&a, "tools.invoke", invoke.clone()).await);
    assert_eq!(again, first);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed since");
    ok(g.call(&b, "tools.invoke", invoke).await);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
}

#[tokio::test]
async fn another_tokens_environment_key_makes_a_new_environment() {
    let sources = Sources::new();
    let g = TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let (a, b) = two_tokens(&g).await;
    let source = sources.root("source");
    std::fs::create_dir_all(&source).unwrap();
    let params = |network: &str| {
        json!({"provider": "local", "idempotencyKey": "env-1",
               "settings": {"source": {"path": source}, "network": network}})
    };
    let first = ok(g.call(&a, "environments.create", params("off")).await);
    assert_eq!(
        ok(g.call(&a, "environments.create", params("off")).await)["id"],
        first["id"]
    );
    // B, the same key and params: its own environment; other params: no
    // conflict.
    let bs = ok(g.call(&b, "environments.create", params("off")).await);
    assert_ne!(bs["id"], first["id"]);
    let (status, other) = g.call(&b, "environments.create", params("host")).await;
    assert_eq!(status, 409, "B's own key with other params: {other}");
    // And the admin's key is the admin's.
    let admins = admin_call(&g, "environments.create", params("off"))
        .await
        .unwrap();
    assert_ne!(admins["id"], first["id"]);
    assert_ne!(admins["id"], bs["id"]);
}
