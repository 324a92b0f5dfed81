//! A model's prices (`models[].cost`, US dollars per million tokens):
//! read from the config, refused when malformed, and a reply's usage
//! priced with them, never guessed.

use serde_json::json;
use talon_provider::{ModelCost, Usage, parse_providers};

fn costs(models: serde_json::Value) -> Result<Vec<Option<ModelCost>>, String> {
    let providers = json!({"p": {"baseUrl": "http://127.0.0.1:9/v1", "models": models}});
    parse_providers(Some(&providers), &|_| None)
        .map(|list| list[0].models.iter().map(|m| m.cost).collect())
        .map_err(|e| e.to_string())
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
        .zip([".output", ".input", ".input", ".cacheRead", "cost"])
        .map(|(error, field)| error.contains(field))
        .collect();
    assert_eq!(named, [true; 5], "{refused:?}");
}

#[test]
fn usage_is_priced_by_kind_and_unknown_without_a_price() {
    let full = ModelCost {
        input: 3_000_000,
        output: 15_000_000,
        cache_read: Some(300_000),
        cache_write: Some(3_750_000),
    };
    let plain = ModelCost {
        cache_read: None,
        cache_write: None,
        ..full
    };
    // 1,000 prompt tokens of which 200 read from the cache and 100
    // written to it, 500 completion tokens: 700 × $3 + 200 × $0.30 +
    // 100 × $3.75 + 500 × $15 per million.
    let cached = Usage {
        input_tokens: 1_000,
        output_tokens: 500,
        cache_read_tokens: 200,
        cache_write_tokens: 100,
    };
    let uncached = Usage {
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        ..cached
    };
    let priced = [
        full.usd(&cached),
        plain.usd(&cached),
        plain.usd(&uncached),
        full.usd(&Usage::default()),
    ]
    .map(|usd| usd.map(|d| (d * 1e9).round() as u64));
    assert_eq!(priced, [Some(10_035_000), None, Some(10_500_000), Some(0)]);
}
