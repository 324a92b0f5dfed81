//! A run on an `anthropic-messages` provider (pointed at the mock, as
//! `--mock-script` does): the client picked by `api`, reasoning shown only
//! where `reasoningDefault` allows, the thinking blocks replayed within a
//! run and, lost through a stored checkpoint, thinking left out of the
//! resumed request; and the model settings read from OpenClaw's keys.

use std::sync::Arc;

use serde_json::{Value, json};
use talon_agent::Reasoning;
use talon_config::Config;
use talon_mock_model::{MockModel, Script};
use talon_provider::{CacheRetention, ProviderConfig, Thinking};
use talon_runtime::Start;
use talon_runtime::provider::{ModelSettings, provider_configs, settings};

use super::{Recorder, host, spec};

const CONFIG: &str = r#"{
  models: { providers: { claude: { baseUrl: "https://api.anthropic.com", api: "anthropic-messages",
                                   models: [{ id: "sonnet", maxTokens: 3000, reasoning: true }] } } },
  agents: { defaults: { model: "claude/sonnet", reasoningDefault: "REASONING" } },
}"#;

async fn mock() -> MockModel {
    let script = json!({"turns": [
        {"thinking": "Look at the notes.", "signature": "sig-1",
         "toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"thinking": "They say 42.", "text": "The notes say 42."},
        {"text": "Resumed: 42."},
    ]});
    MockModel::start(Script::from_json(&script).unwrap())
        .await
        .unwrap()
}

/// A run of agent `main` asking about the notes: its events' kinds
/// (deltas kept) and the requests the mock received.
async fn run(reasoning: &str) -> (Vec<String>, Vec<Value>, Arc<Recorder>, MockModel) {
    let mock = mock().await;
    let host = host(&CONFIG.replace("REASONING", reasoning), mock.base_url());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "42").unwrap();
    let recorder = Arc::new(Recorder::default());
    let result = host
        .start(spec(
            "run_a",
            dir.path(),
            &recorder,
            "What do my notes say?",
        ))
        .await
        .unwrap()
        .finish()
        .await;
    assert_eq!(result.text, "The notes say 42.");
    let mut kinds: Vec<String> = recorder
        .events()
        .iter()
        .map(|e| e.kind.as_str().to_owned())
        .collect();
    kinds.dedup();
    host.shutdown().await;
    (kinds, mock.requests(), recorder, mock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_shown_only_where_the_policy_allows_and_always_replayed() {
    let (kinds, requests, recorder, _mock) = run("stream").await;
    assert_eq!(
        kinds,
        [
            "run.started",
            "thinking.delta",
            "assistant.message",
            "tool.call.started",
            "tool.call.completed",
            "thinking.delta",
            "assistant.delta",
            "assistant.message",
            "run.completed"
        ]
    );
    let thought: String = recorder
        .events()
        .iter()
        .filter(|e| e.kind.as_str() == "thinking.delta")
        .map(|e| e.data["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(thought, "Look at the notes.They say 42.");
    // Anthropic's wire: max_tokens from the model row, thinking at medium
    // (the row reasons), the cache on (api.anthropic.com), and the signed
    // thinking block sent back with the tool result.
    let second = &requests[1];
    assert_eq!(
        (&second["max_tokens"], &second["thinking"]),
        (
            &json!(3000),
            &json!({"type": "enabled", "budget_tokens": 2999})
        )
    );
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Look at the notes.", "signature": "sig-1"})
    );
    assert_eq!(second["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(
        second["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    // Off: the same run without thinking.delta, the same replay.
    let (kinds, off_requests, _, _mock) = run("off").await;
    assert!(!kinds.iter().any(|k| k == "thinking.delta"), "{kinds:?}");
    assert_eq!(off_requests[1]["messages"], second["messages"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_from_a_stored_checkpoint_leaves_thinking_out() {
    let (_, _, first, mock) = run("off").await;
    // The stored checkpoint keeps no thinking blocks: the resumed request
    // continues the tool cycle without them, so it asks for no thinking
    // (Anthropic would refuse the cycle otherwise).
    let [turn] = first.turns().try_into().unwrap();
    let stored = serde_json::to_value(&turn).unwrap();
    let host = host(&CONFIG.replace("REASONING", "off"), mock.base_url());
    let dir = tempfile::tempdir().unwrap();
    let again = Arc::new(Recorder::default());
    let mut resumed = spec("run_a", dir.path(), &again, "unused");
    resumed.start = Start::Resume(serde_json::from_value(stored).unwrap());
    let result = host.start(resumed).await.unwrap().finish().await;
    assert_eq!(result.text, "Resumed: 42.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["thinking"], Value::Null);
    assert_eq!(
        requests[2]["messages"][1]["content"][0]["type"],
        json!("tool_use")
    );
    host.shutdown().await;
}

fn provider(api: &str, base_url: &str) -> ProviderConfig {
    let text = json!({"models": {"providers": {"p": {"baseUrl": base_url, "api": api,
                              "models": [{"id": "r", "reasoning": true}, {"id": "plain"}]}}}});
    let config = Config::parse(&text.to_string(), None).unwrap();
    let models = &config.document().unwrap().models;
    provider_configs(models, &|_| None).unwrap().remove(0)
}

#[test]
fn model_settings_follow_openclaws_order() {
    let read = |text: &str, agent: &str, p: &ProviderConfig, model: &str| {
        let config = Config::parse(text, None).unwrap();
        settings(&config, agent, p, model).map_err(|e| e.to_string())
    };
    let anthropic = provider("anthropic-messages", "https://api.anthropic.com");
    let elsewhere = provider("anthropic-messages", "https://api.minimax.io/anthropic");
    let setting = |reasoning, thinking, cache| {
        Ok(ModelSettings {
            reasoning,
            thinking,
            cache,
        })
    };
    // Defaults: off; a reasoning row thinks at medium; the cache is short
    // at api.anthropic.com only.
    assert_eq!(
        [
            read("{}", "main", &anthropic, "r"),
            read("{}", "main", &anthropic, "plain"),
            read("{}", "main", &elsewhere, "plain"),
        ],
        [
            setting(
                Reasoning::Off,
                Thinking::Budget(4096),
                CacheRetention::Short
            ),
            setting(Reasoning::Off, Thinking::Off, CacheRetention::Short),
            setting(Reasoning::Off, Thinking::Off, CacheRetention::None),
        ]
    );
    // The agent's, then the model entry's, then the defaults'.
    let config = r#"{
      agents: {
        defaults: { reasoningDefault: "on", thinkingDefault: "low", params: { cacheRetention: "long" },
                    models: { "p/plain": { params: { thinking: "adaptive", cacheRetention: "none" } } } },
        list: [{ id: "main", reasoningDefault: "stream", thinkingDefault: "high", params: { cacheRetention: "short" } },
               { id: "other" }],
      },
    }"#;
    assert_eq!(
        [
            read(config, "main", &elsewhere, "plain"),
            read(config, "other", &elsewhere, "plain"),
            read(config, "other", &elsewhere, "r"),
        ],
        [
            setting(
                Reasoning::Stream,
                Thinking::Budget(16_384),
                CacheRetention::Short
            ),
            setting(Reasoning::On, Thinking::Adaptive, CacheRetention::None),
            setting(Reasoning::On, Thinking::Budget(1024), CacheRetention::Long),
        ]
    );
    assert_eq!(
        read("{agents: {defaults: {thinkingDefault: 'huge'}}}", "main", &anthropic, "r"),
        Err("config key agents.defaults.thinkingDefault: `huge` is not one of `off`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`, `adaptive`".into())
    );
}
