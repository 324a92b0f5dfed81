//! Redacting known secret values (bound environment secrets, provider
//! keys) from text and JSON before anyone else sees it: tool results on
//! their way to the model and to events, stored events, artifacts.

use serde_json::Value;

/// What stands in for a secret.
pub const REDACTED: &str = "[redacted]";

/// `text` with every secret replaced, as it is and as JSON escapes it.
pub fn redact_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), REDACTED);
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        if escaped != secret {
            out = out.replace(escaped, REDACTED);
        }
    }
    out
}

/// `value` with every secret redacted from it (a value whose redaction is
/// not JSON any more becomes the marker itself).
pub fn redact_value(value: &Value, secrets: &[String]) -> Value {
    if secrets.is_empty() {
        return value.clone();
    }
    let text = value.to_string();
    let redacted = redact_text(&text, secrets);
    if redacted == text {
        return value.clone();
    }
    serde_json::from_str(&redacted).unwrap_or_else(|_| Value::String(REDACTED.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_plain_and_escaped() {
        let secrets = vec!["sk-abc\"def12".to_owned(), "plain-secret-1".to_owned()];
        let text = json!({"a": "key sk-abc\"def12 here", "b": "plain-secret-1"}).to_string();
        assert_eq!(
            redact_text(&text, &secrets),
            r#"{"a":"key [redacted] here","b":"[redacted]"}"#
        );
        let value = json!({"stdout": "token=plain-secret-1\n", "n": 1});
        assert_eq!(
            redact_value(&value, &secrets),
            json!({"stdout": "token=[redacted]\n", "n": 1})
        );
        assert_eq!(redact_value(&value, &[]), value);
    }
}
