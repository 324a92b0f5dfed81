//! A model's prices ([`ModelCost`], millionths of a dollar per million
//! tokens): a reply's usage priced with them, never guessed. Reading
//! `models[].cost` from the config is talon-runtime's (its `providers`
//! tests).

use talon_provider::{ModelCost, Usage};

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
