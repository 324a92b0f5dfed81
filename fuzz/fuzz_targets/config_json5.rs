//! Any bytes as a config file or mock script: the JSON5 reader either
//! returns a document or a clear error; it never overflows the stack (its
//! depth limit is checked at each opening bracket) and never panics. Text
//! it accepts nests no deeper than the limit, the spanned parse gives the
//! same value, and every value of it has a position; the config check
//! runs on whatever parses.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Run on a thread with the 2 MiB stack a runtime worker has.
    let text = text.to_owned();
    let outcome = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let parsed = talon_config::parse_json5(&text);
            if let Ok(value) = &parsed {
                assert!(depth(value) <= talon_config::MAX_NESTING);
                let (again, spans) =
                    talon_config::json5::parse_spanned(&text, talon_config::MAX_NESTING)
                        .expect("the spanned parse agrees");
                assert_eq!(&again, value);
                assert!(spans.position("").is_some());
            }
            if let Ok(config) = talon_config::Config::parse(&text, None) {
                let _ = talon_config::check::check(&config);
            }
        })
        .expect("thread");
    outcome.join().expect("no panic");
});

fn depth(value: &serde_json::Value) -> usize {
    // Iterative, so the assertion itself cannot overflow.
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            serde_json::Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}
