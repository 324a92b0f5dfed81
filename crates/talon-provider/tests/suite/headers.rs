//! A provider's `headers`: sent on every request of both wires (values
//! literal or from the environment), names the client owns and invalid
//! names refused with the key named, values never shown.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use talon_provider::{ProviderError, build, parse_providers};

use super::anthropic::{complete, mock, request};

/// The providers of `models.providers` = `providers`, `$BETA` set.
fn parse(providers: Value) -> Result<Vec<talon_provider::ProviderConfig>, ProviderError> {
    let lookup =
        |name: &str| (name == "BETA").then(|| "interleaved-thinking-2025-05-14".to_owned());
    parse_providers(Some(&providers), &lookup)
}

/// The headers of interest in one recorded request.
fn shown(headers: &BTreeMap<String, String>) -> BTreeMap<&str, &str> {
    const SHOWN: &[&str] = &[
        "anthropic-beta",
        "anthropic-version",
        "authorization",
        "x-api-key",
        "x-team",
    ];
    headers
        .iter()
        .filter(|(name, _)| SHOWN.contains(&name.as_str()))
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect()
}

#[tokio::test]
async fn configured_headers_go_with_every_request_of_both_wires() {
    let mock = mock(json!({"turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})).await;
    let headers = json!({"anthropic-beta": "prompt-caching-2024-07-31", "X-Team": {"env": "BETA"}});
    let providers = parse(json!({
        "claude": {"baseUrl": mock.base_url(), "api": "anthropic-messages", "apiKey": "sk-ant",
                   "headers": headers, "models": [{"id": "claude"}]},
        "openai": {"baseUrl": mock.base_url(), "api": "openai-completions", "apiKey": "sk-oa",
                   "headers": {"anthropic-beta": "${BETA}"}},
    }))
    .unwrap();
    let [claude, openai] = <[_; 2]>::try_from(providers).unwrap();
    assert_eq!(
        format!("{claude:?}"),
        format!(
            "ProviderConfig {{ id: \"claude\", base_url: {:?}, api_key: Some(\"<redacted>\"), api: \"anthropic-messages\", models: [ModelInfo {{ id: \"claude\", name: None, context_window: None, max_tokens: None, reasoning: false, cost: None }}], headers: {{\"anthropic-beta\", \"x-team\"}}, .. }}",
            mock.base_url()
        )
    );
    let claude = build(claude).unwrap();
    let openai = build(openai).unwrap();
    let (reply, _) = complete(&*claude, &request(true)).await;
    assert_eq!(reply.unwrap().text, "a");
    let (reply, _) = complete(&*claude, &request(false)).await;
    assert_eq!(reply.unwrap().text, "b");
    let (reply, _) = complete(&*openai, &request(true)).await;
    assert_eq!(reply.unwrap().text, "c");
    let anthropic_headers = BTreeMap::from([
        ("anthropic-beta", "prompt-caching-2024-07-31"),
        ("anthropic-version", "2023-06-01"),
        ("x-api-key", "sk-ant"),
        ("x-team", "interleaved-thinking-2025-05-14"),
    ]);
    let recorded = mock.headers();
    assert_eq!(
        recorded.iter().map(shown).collect::<Vec<_>>(),
        vec![
            anthropic_headers.clone(),
            anthropic_headers,
            BTreeMap::from([
                ("anthropic-beta", "interleaved-thinking-2025-05-14"),
                ("authorization", "Bearer sk-oa"),
            ]),
        ]
    );
}

#[test]
fn owned_and_invalid_header_names_are_refused_by_key() {
    let refused = |headers: Value| {
        parse(
            json!({"p": {"baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages",
                           "headers": headers}}),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(
        refused(json!({"X-Api-Key": "sk-other"})),
        Err("invalid_config: models.providers.p.headers.X-Api-Key: Talon sets \"X-Api-Key\" itself; it cannot be configured".into())
    );
    for owned in [
        "authorization",
        "anthropic-version",
        "content-type",
        "content-length",
        "host",
    ] {
        assert_eq!(
            refused(json!({owned: "x"})),
            Err(format!(
                "invalid_config: models.providers.p.headers.{owned}: Talon sets \"{owned}\" itself; it cannot be configured"
            ))
        );
    }
    assert_eq!(
        refused(json!({"bad name": "x"})),
        Err("invalid_config: models.providers.p.headers.bad name: \"bad name\" is not a valid header name".into())
    );
    assert_eq!(
        refused(json!({"x-secret": "line\nbreak"})),
        Err("invalid_config: models.providers.p.headers.x-secret: the value is not a valid header value".into())
    );
    assert_eq!(
        refused(json!({"x-secret": "${UNSET}"})),
        Err("invalid_config: models.providers.p.headers.x-secret: environment variable UNSET is not set".into())
    );
    assert_eq!(
        refused(json!(["anthropic-beta"])),
        Err("invalid_config: models.providers.p.headers: expected an object of header values by name".into())
    );
    assert_eq!(refused(json!({"anthropic-beta": "x"})), Ok(()));
}
