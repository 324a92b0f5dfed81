//! The embedding table's file parser and the WordPiece tokenizer take any
//! bytes and any text without panicking: a table either parses (and then
//! embeds any text to a unit vector or nothing) or is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use talon_embed::StaticTable;

fuzz_target!(|data: &[u8]| {
    let source = [7u8; 32];
    if let Ok(table) = StaticTable::from_bytes(data, &source) {
        if let Some(v) = table.embed("create an issue") {
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-3);
        }
    }
    // The tokenizer on arbitrary text, over a small vocabulary.
    let text = String::from_utf8_lossy(data);
    let tokens: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "##b", "é"]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
    if let Ok(wp) = talon_embed::WordPiece::from_tokens(tokens) {
        let ids = wp.encode(&text, 64);
        assert!(ids.len() <= 64);
        assert!(ids.iter().all(|&i| (i as usize) < wp.len()));
    }
});
