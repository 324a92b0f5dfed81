//! A hostile or broken server: answers that are not JSON, proxies' error
//! pages, a download URL pointing elsewhere, garbage in an event stream, a
//! body cut short. The SDK returns a clear error for each, retries only
//! what is safe, and never sends its token off the gateway's origin.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use talon_protocol::gateway::bounded::{AgentId, RunId};

use super::every;
use futures::StreamExt as _;
use talon_sdk::protocol::gateway::ErrorCode;
use talon_sdk::protocol::gateway::params::AgentRef;
use talon_sdk::{Client, ClientConfig, Error, RetryPolicy, Talon};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server answering each request line with `answer(line)`, then closing.
async fn server(answer: fn(&str, &str) -> String) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let base = format!("http://{addr}");
    let me = base.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let me = me.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                let _ = socket.read_exact(&mut body).await;
                let line = head.lines().next().unwrap_or_default().to_owned();
                let response = answer(&line, &me);
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (base, hits)
}

fn response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn broken_answers_are_clear_errors_and_only_safe_calls_are_retried() {
    let (url, hits) = server(|line, _| {
        if line.contains("/healthz") {
            response("200 OK", "text/plain", "ok\n")
        } else if line.contains("agents.list") {
            response("200 OK", "application/json", "not json at all")
        } else if line.contains("agents.get") {
            response("502 Bad Gateway", "text/html", "<html>upstream down</html>")
        } else if line.contains("runs.cancel") {
            response("200 OK", "application/json", r#"{"unexpected": true}"#)
        } else {
            response("404 Not Found", "text/plain", "nothing")
        }
    })
    .await;
    let client = Client::new(ClientConfig {
        retry: RetryPolicy {
            initial_backoff: std::time::Duration::from_millis(1),
            ..RetryPolicy::default()
        },
        ..ClientConfig::new(&url, "token")
    })
    .unwrap();
    let garbage = client.agents_list(every()).await.unwrap_err();
    assert!(matches!(garbage, Error::Decode { .. }), "{garbage:?}");
    let before = hits.load(Ordering::SeqCst);
    let proxy_page = client
        .agents_get(AgentRef {
            agent_id: AgentId::new("main"),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (proxy_page.code(), proxy_page.retryable()),
        (Some(ErrorCode::Unavailable), true)
    );
    assert!(
        proxy_page.to_string().contains("upstream down"),
        "{proxy_page}"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst) - before,
        4,
        "a read is tried four times"
    );
    let wrong_shape = client
        .runs_cancel(talon_sdk::protocol::gateway::params::RunsCancelParams {
            run_id: RunId::new("run_1"),
            reason: None,
            idempotency_key: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(wrong_shape, Error::Decode { .. }),
        "{wrong_shape:?}"
    );
    // A plain 404 page maps to not_found.
    let missing = client
        .call_raw("nope", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::NotFound));
}

#[tokio::test]
async fn a_download_url_off_the_gateway_is_refused_and_gets_no_token() {
    let (elsewhere, stolen) = server(|_, _| response("200 OK", "text/plain", "thanks")).await;
    static ELSEWHERE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ELSEWHERE.set(elsewhere).unwrap();
    let (url, _) = server(|line, _| {
        if line.contains("artifacts.download") {
            let body = serde_json::json!({
                "artifact": {"id": "art_1", "type": "file", "createdAt": 1_796_083_200_000_u64},
                "url": format!("{}/steal", ELSEWHERE.get().unwrap()),
            });
            response("200 OK", "application/json", &body.to_string())
        } else {
            response("404 Not Found", "text/plain", "")
        }
    })
    .await;
    let client = Client::new(ClientConfig::new(&url, "secret-token")).unwrap();
    let mut sink = Vec::new();
    let refused = client
        .download_artifact("art_1", &mut sink)
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Invalid { .. }), "{refused:?}");
    assert_eq!(
        stolen.load(Ordering::SeqCst),
        0,
        "nothing went off the origin"
    );
}

#[tokio::test]
async fn garbage_in_an_event_stream_ends_it_with_a_decode_error() {
    let (url, _) = server(|line, _| {
        if line.contains("/healthz") {
            response("200 OK", "text/plain", "ok\n")
        } else if line.contains("runs.get") {
            response(
                "200 OK",
                "application/json",
                r#"{"id":"run_1","agentId":"main","status":"running","createdAt":1}"#,
            )
        } else if line.contains("/events") {
            response(
                "200 OK",
                "text/event-stream",
                "id: 1\nevent: run.created\ndata: {\"version\":1,\"id\":\"1\",\"ts\":1,\"type\":\"run.created\",\"data\":{}}\n\ndata: {not json\n\n",
            )
        } else {
            response("404 Not Found", "text/plain", "")
        }
    })
    .await;
    let talon = Talon::connect(&url, "token").await.unwrap();
    let run = talon.run("run_1").await.unwrap();
    let items: Vec<_> = run.events().collect().await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].is_ok());
    assert!(
        matches!(items[1], Err(Error::Decode { .. })),
        "{:?}",
        items[1]
    );
}

#[tokio::test]
async fn an_artifact_cut_short_is_a_transport_error() {
    let (url, _) = server(|line, base| {
        if line.contains("artifacts.download") {
            let body = serde_json::json!({
                "artifact": {"id": "art_1", "type": "file", "createdAt": 1_796_083_200_000_u64},
                "url": format!("{base}/v1/artifacts/art_1/content"),
            });
            response("200 OK", "application/json", &body.to_string())
        } else if line.contains("/content") {
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nonly ten b".into()
        } else {
            response("404 Not Found", "text/plain", "")
        }
    })
    .await;
    let client = Client::new(ClientConfig::new(&url, "token")).unwrap();
    let mut sink = Vec::new();
    let cut = client
        .download_artifact("art_1", &mut sink)
        .await
        .unwrap_err();
    assert!(matches!(cut, Error::Transport { .. }), "{cut:?}");
}
