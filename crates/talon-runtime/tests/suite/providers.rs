//! `models.providers` read from the typed config into the providers'
//! runtime settings (`provider_configs`): keys and header values from the
//! environment, prices in millionths of a dollar, `maxRetries` clamped,
//! and what is malformed refused naming the key.

use serde_json::{Value, json};
use talon_config::Config;
use talon_provider::{ModelCost, ProviderConfig};
use talon_runtime::provider::provider_configs;

/// `models.providers` = `providers` read, `$BETA` set; the error as shown
/// (the config's own for a value its declaration refuses).
fn read(providers: Value) -> Result<Vec<ProviderConfig>, String> {
    let text = json!({"models": {"providers": providers}}).to_string();
    let config = Config::parse(&text, None).map_err(|e| e.to_string())?;
    let document = config.document().map_err(|e| e.to_string())?;
    let lookup =
        |name: &str| (name == "BETA").then(|| "interleaved-thinking-2025-05-14".to_owned());
    provider_configs(&document.models, &lookup).map_err(|e| e.to_string())
}

#[test]
fn keys_and_headers_are_resolved_and_limits_read() {
    let read = read(json!({
        "claude": {"baseUrl": "http://127.0.0.1:9/", "api": "anthropic-messages", "apiKey": "${BETA}",
                   "headers": {"anthropic-beta": "prompt-caching-2024-07-31", "X-Team": {"env": "BETA"}},
                   "models": [{"id": "claude", "maxTokens": 1e10}],
                   "timeoutMs": 5000, "idleTimeoutMs": 700, "maxRetries": 50},
        "openai": {"baseUrl": "https://api.example.com/v1", "apiKey": {"env": "BETA"}},
    }))
    .unwrap();
    let [claude, openai] = <[_; 2]>::try_from(read).unwrap();
    assert_eq!(
        format!("{claude:?}"),
        "ProviderConfig { id: \"claude\", base_url: \"http://127.0.0.1:9\", api_key: Some(\"<redacted>\"), api: \"anthropic-messages\", models: [ModelInfo { id: \"claude\", name: None, context_window: None, max_tokens: Some(4294967295), reasoning: false, cost: None }], headers: {\"anthropic-beta\", \"x-team\"}, .. }"
    );
    assert_eq!(
        (
            claude.api_key.as_deref(),
            claude.headers.get("x-team").map(|v| v.to_str().unwrap()),
            claude.timeout.as_millis(),
            claude.idle_timeout.as_millis(),
            claude.max_retries,
        ),
        (
            Some("interleaved-thinking-2025-05-14"),
            Some("interleaved-thinking-2025-05-14"),
            5000,
            700,
            10
        )
    );
    assert_eq!(
        (
            openai.api.as_str(),
            openai.api_key.as_deref(),
            openai.timeout.as_secs(),
            openai.idle_timeout.as_secs(),
            openai.max_retries,
        ),
        (
            "openai-completions",
            Some("interleaved-thinking-2025-05-14"),
            120,
            60,
            3
        )
    );
}

#[test]
fn owned_and_invalid_header_names_are_refused_by_key() {
    let refused = |headers: Value| {
        read(
            json!({"p": {"baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages",
                           "headers": headers}}),
        )
        .map(|_| ())
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
    let error = refused(json!(["anthropic-beta"])).unwrap_err();
    assert!(error.contains("models.providers.p.headers"), "{error}");
    assert_eq!(refused(json!({"anthropic-beta": "x"})), Ok(()));
}

#[test]
fn a_base_url_and_model_ids_are_required_and_refused_at_load_by_key() {
    let refused = |provider: Value| read(json!({"p": provider})).map(|_| ()).unwrap_err();
    assert_eq!(
        [
            refused(json!({"api": "openai-completions"})),
            refused(json!({"baseUrl": "ftp://example.com"})),
            refused(json!({"baseUrl": "http://127.0.0.1:9", "models": [{"name": "no id"}]})),
            refused(json!({"baseUrl": "http://127.0.0.1:9", "apiKey": {"env": "UNSET"}})),
        ],
        [
            "config key models.providers.p: `baseUrl` is required",
            "config key models.providers.p.baseUrl: expected an http:// or https:// URL",
            "config key models.providers.p.models[0]: `id` is required",
            "invalid_config: models.providers.p.apiKey: environment variable UNSET is not set",
        ]
    );
}

fn costs(models: Value) -> Result<Vec<Option<ModelCost>>, String> {
    read(json!({"p": {"baseUrl": "http://127.0.0.1:9/v1", "models": models}}))
        .map(|list| list[0].models.iter().map(|m| m.cost).collect())
}

#[test]
fn prices_are_read_in_millionths_of_a_dollar() {
    let read = costs(json!([
        {"id": "a", "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}},
        {"id": "b", "cost": {"input": 0.075, "output": 0.3}},
        {"id": "c"},
    ]));
    assert_eq!(
        read,
        Ok(vec![
            Some(ModelCost {
                input: 3_000_000,
                output: 15_000_000,
                cache_read: Some(300_000),
                cache_write: Some(3_750_000),
            }),
            Some(ModelCost {
                input: 75_000,
                output: 300_000,
                cache_read: None,
                cache_write: None,
            }),
            None,
        ])
    );
}

#[test]
fn malformed_prices_are_refused_naming_the_price() {
    let refused = [
        json!({"input": 3}),
        json!({"input": -1, "output": 1}),
        json!({"input": "3", "output": 1}),
        json!({"input": 1, "output": 1, "cacheRead": 1e9}),
        json!([1, 2]),
    ]
    .map(|cost| costs(json!([{"id": "m", "cost": cost}])).unwrap_err());
    let named: Vec<bool> = refused
        .iter()
        .zip(["`output`", ".input", ".input", ".cacheRead", "cost"])
        .map(|(error, field)| error.contains(field))
        .collect();
    assert_eq!(named, [true; 5], "{refused:?}");
}
