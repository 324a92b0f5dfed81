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

/// Replaces the values of credential-like keys (`apiKey`,
/// `authorization`, `token`, `secret`, `password`, ...) with
/// `<redacted>`, at any depth (numbers, booleans and nulls stay: a
/// `prompt_tokens` count is no credential): what the debugging switches show of a
/// request or a stream event.
pub fn redact_credentials(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let k = key.to_ascii_lowercase().replace(['_', '-'], "");
                if [
                    "apikey",
                    "authorization",
                    "token",
                    "secret",
                    "password",
                    "accesstoken",
                ]
                .iter()
                .any(|s| k.contains(s))
                    // Counts (`prompt_tokens`) are not credentials.
                    && !matches!(v, Value::Number(_) | Value::Bool(_) | Value::Null)
                {
                    *v = Value::String("<redacted>".into());
                } else {
                    redact_credentials(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_credentials),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
