mod fake;
mod listing;

use serde_json::{Value, json};

/// `value` with the size of every trajectory artifact in it replaced: a
/// trajectory holds its events' measured durations, whose digits vary.
fn sized(value: impl serde::Serialize) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("trajectory")
                    && map.get("sizeBytes").is_some_and(Value::is_u64)
                {
                    map.insert("sizeBytes".into(), json!("<bytes>"));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(value).unwrap();
    walk(&mut value);
    value
}
