//! `ask_user`: the tool through which the model asks the user or the host
//! app for information (a question, separate from an approval, which asks
//! for permission). A run has it when its host can ask: the caller's
//! `RunSpec::questions` executes it (the gateway as a durable question,
//! answered with `questions.respond`); a run whose host cannot ask does not
//! offer it. This module owns the tool's definition and the checks of its
//! arguments, so every host reads them alike.

use std::time::Duration;

use serde_json::{Value, json};
use talon_protocol::{ToolDefinition, ToolEffect, ToolSource};
use talon_tools::{ToolError, ToolErrorCode};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";
/// The owner its catalog id carries (`openclaw:runtime:ask_user`).
pub const OWNER: &str = "runtime";
/// Most choices a question offers.
pub const MAX_CHOICES: usize = 50;
/// Longest prompt, in bytes.
pub const MAX_PROMPT_BYTES: usize = 4096;
/// The longest choice (a choice is a short label, not a document).
pub const MAX_CHOICE_BYTES: usize = 512;
/// Longest time a question waits, and the default.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The definition of `ask_user`.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: ASK_USER.into(),
        label: Some("Ask the user".into()),
        description: "Ask the user (or the app you work for) a question and wait for the answer. \
                      Use it when you need information only they have; offer `choices` when the \
                      answer is one of a few, or an `answerSchema` (JSON Schema) for a structured \
                      answer."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The question, for a person to read"},
                "choices": {"type": "array", "items": {"type": "string"}, "description": "The answers to choose from"},
                "answerSchema": {"type": "object", "description": "JSON Schema the answer must satisfy"},
                "timeoutMs": {"type": "number", "description": "How long to wait (default and most: 24 hours)"}
            },
            "required": ["prompt"]
        }),
        source: ToolSource::Openclaw,
        owner: OWNER.into(),
        catalog_mode: Default::default(),
        execution_mode: Default::default(),
        requires_approval: false,
        effect: ToolEffect::ReadOnly,
        // A host asks again for the same call and finds its question.
        replay_safe: true,
    }
}

/// A question, as the model asked it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// What is asked.
    pub prompt: String,
    /// The answers to choose from.
    pub choices: Option<Vec<String>>,
    /// JSON Schema the answer must satisfy.
    pub answer_schema: Option<Value>,
    /// How long it waits.
    pub timeout: Duration,
}

impl Ask {
    /// Reads and checks `ask_user`'s arguments.
    pub fn from_args(args: &Value) -> Result<Self, ToolError> {
        let bad = |message: String| ToolError::new(ToolErrorCode::InvalidArgument, message);
        let prompt = match args.get("prompt") {
            Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
            _ => return Err(bad("prompt: a non-empty string is required".into())),
        };
        if prompt.len() > MAX_PROMPT_BYTES {
            return Err(bad(format!("prompt: at most {MAX_PROMPT_BYTES} bytes")));
        }
        let choices = match args.get("choices") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let choices: Option<Vec<String>> = items
                    .iter()
                    .map(|c| c.as_str().map(str::to_owned))
                    .collect();
                let choices = choices.ok_or_else(|| bad("choices: a list of strings".into()))?;
                if choices.is_empty() || choices.len() > MAX_CHOICES {
                    return Err(bad(format!("choices: between 1 and {MAX_CHOICES}")));
                }
                if choices.iter().any(|c| c.len() > MAX_CHOICE_BYTES) {
                    return Err(bad(format!(
                        "choices: each at most {MAX_CHOICE_BYTES} bytes"
                    )));
                }
                Some(choices)
            }
            Some(_) => return Err(bad("choices: a list of strings".into())),
        };
        let answer_schema = match args.get("answerSchema") {
            None | Some(Value::Null) => None,
            Some(schema @ Value::Object(_)) => {
                talon_tools::schema::check_schema(schema)
                    .map_err(|e| bad(format!("answerSchema: {e}")))?;
                Some(schema.clone())
            }
            Some(_) => return Err(bad("answerSchema: a JSON Schema object".into())),
        };
        let timeout = match args.get("timeoutMs") {
            None | Some(Value::Null) => MAX_TIMEOUT,
            Some(ms) => match ms.as_f64() {
                Some(ms) if ms >= 1.0 => Duration::from_millis(ms as u64).min(MAX_TIMEOUT),
                _ => return Err(bad("timeoutMs: a positive number".into())),
            },
        };
        Ok(Self {
            prompt,
            choices,
            answer_schema,
            timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        let ask = Ask::from_args(
            &json!({"prompt": "Which branch?", "choices": ["main", "dev"], "timeoutMs": 1000}),
        )
        .unwrap();
        assert_eq!(
            ask,
            Ask {
                prompt: "Which branch?".into(),
                choices: Some(vec!["main".into(), "dev".into()]),
                answer_schema: None,
                timeout: Duration::from_secs(1),
            }
        );
        let cases = [
            (json!({}), "prompt: a non-empty string is required"),
            (
                json!({"prompt": "  "}),
                "prompt: a non-empty string is required",
            ),
            (
                json!({"prompt": "x", "choices": "main"}),
                "choices: a list of strings",
            ),
            (
                json!({"prompt": "x", "choices": [1]}),
                "choices: a list of strings",
            ),
            (
                json!({"prompt": "x", "choices": []}),
                "choices: between 1 and 50",
            ),
            (
                json!({"prompt": "x", "answerSchema": "int"}),
                "answerSchema: a JSON Schema object",
            ),
            (
                json!({"prompt": "x", "answerSchema": {"type": "integr"}}),
                "answerSchema: unknown type \"integr\"",
            ),
            (
                json!({"prompt": "x", "timeoutMs": 0}),
                "timeoutMs: a positive number",
            ),
        ];
        for (args, message) in cases {
            let error = Ask::from_args(&args).unwrap_err();
            assert_eq!(
                (error.code, error.message.as_str()),
                (ToolErrorCode::InvalidArgument, message),
                "{args}"
            );
        }
        let long = Ask::from_args(&json!({"prompt": "x", "timeoutMs": 1e12})).unwrap();
        assert_eq!(long.timeout, MAX_TIMEOUT);
    }

    #[test]
    fn oversized_questions_are_refused_by_size() {
        let at_cap = "é".repeat(MAX_PROMPT_BYTES / 2);
        assert!(Ask::from_args(&json!({"prompt": at_cap})).is_ok());
        let over = format!("{at_cap}x");
        let cases = [
            (
                json!({"prompt": over}),
                format!("prompt: at most {MAX_PROMPT_BYTES} bytes"),
            ),
            (
                json!({"prompt": "x".repeat(1 << 20)}),
                format!("prompt: at most {MAX_PROMPT_BYTES} bytes"),
            ),
            (
                json!({"prompt": "x", "choices": ["a", "b".repeat(MAX_CHOICE_BYTES + 1)]}),
                format!("choices: each at most {MAX_CHOICE_BYTES} bytes"),
            ),
            (
                json!({"prompt": "x", "choices": vec!["c"; MAX_CHOICES + 1]}),
                format!("choices: between 1 and {MAX_CHOICES}"),
            ),
        ];
        for (args, message) in cases {
            let error = Ask::from_args(&args).unwrap_err();
            assert_eq!(
                (error.code, error.message),
                (ToolErrorCode::InvalidArgument, message)
            );
        }
    }
}
