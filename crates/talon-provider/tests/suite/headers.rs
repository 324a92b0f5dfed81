//! A provider's headers: sent on every request of both wires, values
//! never shown. Reading `headers` from the config (variables, names the
//! client owns, invalid names and values, refused by key) is
//! talon-runtime's (its `providers` tests).

use std::collections::BTreeMap;

use serde_json::json;
use talon_provider::config::{ANTHROPIC_MESSAGES, OPENAI_COMPLETIONS};
use talon_provider::{ModelInfo, ProviderConfig, build};

use super::anthropic::{complete, mock, request};

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
    let beta = "interleaved-thinking-2025-05-14";
    let mut claude = ProviderConfig::new("claude", ANTHROPIC_MESSAGES, &mock.base_url());
    claude.api_key = Some("sk-ant".into());
    claude.models = vec![ModelInfo {
        id: "claude".into(),
        name: None,
        context_window: None,
        max_tokens: None,
        reasoning: false,
        cost: None,
    }];
    let at = "models.providers.claude.headers";
    claude
        .add_header("anthropic-beta", "prompt-caching-2024-07-31", at)
        .unwrap();
    claude.add_header("X-Team", beta, at).unwrap();
    let mut openai = ProviderConfig::new("openai", OPENAI_COMPLETIONS, &mock.base_url());
    openai.api_key = Some("sk-oa".into());
    openai
        .add_header("anthropic-beta", beta, "models.providers.openai.headers")
        .unwrap();
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
