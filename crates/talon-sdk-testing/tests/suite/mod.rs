mod fake;
mod listing;

use serde_json::Value;

/// `value` as JSON, every trajectory's varying size as `<bytes>`.
fn sized(value: impl serde::Serialize) -> Value {
    talon_testing::redact::trajectory_sizes(serde_json::to_value(value).unwrap())
}
