//! The seed's debugging switches, each spelled once: an environment
//! variable `TALON_DEBUG_<NAME>`, or OpenClaw's `OPENCLAW_DEBUG_<NAME>`
//! (Talon's wins when both are set), and the log target each turns on.
//! They are a user-facing contract (seed 000's "Debugging"), so they live
//! beside the other wire names; what each logs is its reader's
//! ([`DebugSwitch`]'s docs name them).

use serde_json::Value;

/// One debugging switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugSwitch {
    /// `DEBUG_CODE_MODE=1`: the model-visible tool names and bridge
    /// activity (talon-codemode).
    CodeMode,
    /// `DEBUG_MODEL_TRANSPORT=1`: each model request's endpoint, status,
    /// attempt and time (talon-provider).
    ModelTransport,
    /// `DEBUG_MODEL_PAYLOAD=tools|full-redacted`: the model-visible tools,
    /// or the bounded request body with credentials redacted
    /// (talon-agent).
    ModelPayload,
    /// `DEBUG_SSE=events|peek`: each event of a model's stream by type,
    /// or the first [`SSE_PEEK_EVENTS`] events' data, redacted
    /// (talon-provider).
    Sse,
}

/// How many stream events `DEBUG_SSE=peek` shows per stream.
pub const SSE_PEEK_EVENTS: usize = 5;

impl DebugSwitch {
    /// Every switch.
    pub const ALL: [Self; 4] = [
        Self::CodeMode,
        Self::ModelTransport,
        Self::ModelPayload,
        Self::Sse,
    ];

    /// The name after the prefix (`MODEL_TRANSPORT`).
    pub fn name(self) -> &'static str {
        match self {
            Self::CodeMode => "CODE_MODE",
            Self::ModelTransport => "MODEL_TRANSPORT",
            Self::ModelPayload => "MODEL_PAYLOAD",
            Self::Sse => "SSE",
        }
    }

    /// The `tracing` target its lines are logged under.
    pub fn target(self) -> &'static str {
        match self {
            Self::CodeMode => "talon::code_mode",
            Self::ModelTransport => "talon::model_transport",
            Self::ModelPayload => "talon::model_payload",
            Self::Sse => "talon::model_sse",
        }
    }

    /// Its value: `TALON_DEBUG_<NAME>`, else `OPENCLAW_DEBUG_<NAME>`.
    pub fn value(self) -> Option<String> {
        self.value_in(|name| std::env::var(name).ok())
    }

    /// Its value as `lookup` finds variables.
    pub fn value_in(self, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
        ["TALON_DEBUG_", "OPENCLAW_DEBUG_"]
            .iter()
            .find_map(|prefix| lookup(&format!("{prefix}{}", self.name())))
    }

    /// Whether it is set to `1`.
    pub fn is_on(self) -> bool {
        self.value().is_some_and(|v| v == "1")
    }
}

/// What a key holds a credential by, once lowercased and without `_` and
/// `-` (`api_key`, `X-Api-Key`, `accessToken`, ...).
const CREDENTIAL_WORDS: [&str; 5] = ["apikey", "authorization", "token", "secret", "password"];

/// `text` lowercased, without `_` and `-`, into `out` (cleared first).
fn normalized(text: &str, out: &mut Vec<u8>) {
    out.clear();
    out.extend(
        text.bytes()
            .filter(|b| !matches!(b, b'_' | b'-'))
            .map(|b| b.to_ascii_lowercase()),
    );
}

/// Whether a normalized text holds one of [`CREDENTIAL_WORDS`] (one pass,
/// whatever its length).
fn holds_a_word(normal: &[u8]) -> bool {
    static WORDS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| aho_corasick::AhoCorasick::new(CREDENTIAL_WORDS).ok());
    match WORDS.as_ref() {
        Some(words) => words.is_match(normal),
        // Never reached (the words are fixed); slower, same answer.
        None => CREDENTIAL_WORDS
            .iter()
            .any(|word| normal.windows(word.len()).any(|w| w == word.as_bytes())),
    }
}

/// Whether `json` (a payload's text) may have a credential-like key: when
/// not, [`redact_credentials`] would change nothing in it and need not
/// walk it.
pub fn may_hold_credentials(json: &str) -> bool {
    let mut normal = Vec::with_capacity(json.len());
    normalized(json, &mut normal);
    holds_a_word(&normal)
}

/// Replaces the values of credential-like keys (`apiKey`,
/// `authorization`, `token`, `secret`, `password`, ...) with
/// `<redacted>`, at any depth (numbers, booleans and nulls stay: a
/// `prompt_tokens` count is no credential): what the debugging switches show of a
/// request or a stream event.
pub fn redact_credentials(value: &mut Value) {
    redact_with(value, &mut Vec::new());
}

/// [`redact_credentials`], normalizing every key into one buffer.
fn redact_with(value: &mut Value, key: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            for (name, v) in map.iter_mut() {
                normalized(name, key);
                if holds_a_word(key)
                    // Counts (`prompt_tokens`) are not credentials.
                    && !matches!(v, Value::Number(_) | Value::Bool(_) | Value::Null)
                {
                    *v = Value::String("<redacted>".into());
                } else {
                    redact_with(v, key);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_with(v, key)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_like_keys_are_redacted_at_any_depth_and_counts_kept() {
        let mut value = serde_json::json!({
            "api_key": "a", "X-Api-Key": "b", "accessToken": "c", "pass_word": "d",
            "Authorization": "e", "nested": [{"client_secret": "f", "prompt_tokens": 12}],
            "content": "the token is here", "keyboard": "stays",
        });
        redact_credentials(&mut value);
        let r = "<redacted>";
        assert_eq!(
            value,
            serde_json::json!({
                "api_key": r, "X-Api-Key": r, "accessToken": r, "pass_word": r,
                "Authorization": r, "nested": [{"client_secret": r, "prompt_tokens": 12}],
                "content": "the token is here", "keyboard": "stays",
            })
        );
        // The text check finds every key the walk would redact, however
        // spelled, and passes text with none.
        for text in [
            r#"{"Pass-Word":1}"#,
            r#"{"APIKEY":1}"#,
            r#"{"x":{"auth_orization":1}}"#,
        ] {
            assert!(may_hold_credentials(text), "{text}");
        }
        assert!(!may_hold_credentials(
            r#"{"choices":[{"delta":{"content":"hi"}}]}"#
        ));
    }

    #[test]
    fn talons_spelling_wins_and_openclaws_is_accepted() {
        let env = |set: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                set.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            DebugSwitch::Sse.value_in(env(&[("OPENCLAW_DEBUG_SSE", "peek")])),
            Some("peek".into())
        );
        assert_eq!(
            DebugSwitch::Sse.value_in(env(&[
                ("OPENCLAW_DEBUG_SSE", "peek"),
                ("TALON_DEBUG_SSE", "events")
            ])),
            Some("events".into())
        );
        assert_eq!(
            DebugSwitch::ModelTransport.value_in(env(&[("OPENCLAW_DEBUG_SSE", "peek")])),
            None
        );
        let mut body = serde_json::json!({"headers": {"Authorization": "Bearer x"},
            "items": [{"api_key": "k", "text": "kept"}]});
        redact_credentials(&mut body);
        assert_eq!(
            body,
            serde_json::json!({"headers": {"Authorization": "<redacted>"},
                "items": [{"api_key": "<redacted>", "text": "kept"}]})
        );
    }
}
