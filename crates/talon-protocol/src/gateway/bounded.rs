//! Strings with a length cap: every protocol string that becomes an id, a
//! key, a stored column or a header is one of these types, so its cap is
//! declared once, enforced when a request is decoded (`invalid_request`
//! naming the field and the cap) and shown in the schema (`maxLength`).
//!
//! Caps count characters (Unicode scalar values), as JSON Schema's
//! `maxLength` does. Control characters (U+0000 to U+001F and U+007F) are
//! refused in ids and keys, which end up in paths, headers and logs.
//!
//! | type | cap | what |
//! |---|---|---|
//! | the ids ([`RunId`], [`SessionId`], [`CellId`], ...) | [`ID_MAX`] (128) | resources' ids, cursors |
//! | [`SessionKey`], [`IdempotencyKey`] | [`KEY_MAX`] (256) | keys an app chooses |
//! | [`ToolRef`] | [`KEY_MAX`] (256) | a catalog id or tool name |
//! | [`Text<N>`] | `N` | free text kept in a record (names, reasons) |
//!
//! Building one in Rust (`RunId::new("run_1")`) never fails: the cap is
//! the server's rule for what it accepts, checked where bytes arrive.
//!
//! The ids do not convert into one another or into text by themselves:
//! no `Deref<Target = str>`, no `From<&str>`/`From<String>` either way, no
//! comparison with a string. Text becomes an id only through `new`, an id
//! text only through `as_str`/`into_string`, so a run id cannot silently
//! become a session id; the store, the runtime and the engine carry them
//! typed (`talon_store::RunRequest` is the typed record a run executes).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

/// The cap of every id.
pub const ID_MAX: usize = 128;
/// The cap of keys an app chooses (session keys, idempotency keys) and of
/// tool references.
pub const KEY_MAX: usize = 256;
/// The cap of a display name.
pub const NAME_MAX: usize = 256;
/// The cap of a description or a reason.
pub const TEXT_MAX: usize = 4096;
/// The cap of an agent's instructions.
pub const INSTRUCTIONS_MAX: usize = 256 * 1024;

/// Why a string was refused: over its cap, or (for ids and keys) holding a
/// control character. The text names what the string is (`a run id`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundedError {
    /// More characters than the cap.
    #[error("{what} is {count} characters long; the cap is {max}")]
    TooLong {
        /// What the string is (`a run id`, `the text`).
        what: &'static str,
        /// Its length, in characters.
        count: usize,
        /// The cap.
        max: usize,
    },
    /// A control character (U+0000 to U+001F, U+007F) in an id or key.
    #[error("{what} may not contain control characters")]
    ControlCharacter {
        /// What the string is.
        what: &'static str,
    },
}

/// Whether `value` fits: at most `max` characters, and none of them a
/// control character when `controls` are refused.
fn check(
    value: &str,
    max: usize,
    what: &'static str,
    controls: Controls,
) -> Result<(), BoundedError> {
    let mut count = 0usize;
    for c in value.chars() {
        count += 1;
        if controls == Controls::Refused && c.is_control() && (c as u32) < 0x80 {
            return Err(BoundedError::ControlCharacter { what });
        }
    }
    if count > max {
        return Err(BoundedError::TooLong { what, count, max });
    }
    Ok(())
}

/// Whether a string may hold control characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controls {
    /// Ids and keys: they end up in paths, headers and logs.
    Refused,
    /// Free text: newlines are text.
    Allowed,
}

macro_rules! bounded_ids {
    ($($(#[doc = $doc:literal])* $name:ident, $max:expr, $what:literal;)*) => {$(
        $(#[doc = $doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The cap, in characters.
            pub const MAX: usize = $max;

            /// An id from its text, unchecked: for ids the gateway mints and
            /// text already checked (a stored record, a path segment read
            /// through the table). One kind of id never becomes another
            /// except through this, by name.
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, owned.
            pub fn into_string(self) -> String {
                self.0
            }

            /// Whether `value` is within the cap (and free of control
            /// characters); why not.
            pub fn check(value: &str) -> Result<(), BoundedError> {
                check(value, $max, $what, Controls::Refused)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = String::deserialize(deserializer)?;
                Self::check(&value).map_err(serde::de::Error::custom)?;
                Ok(Self(value))
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "string",
                    "maxLength": $max,
                    "description": concat!(
                        $($doc, "\n",)*
                        "\nAt most ", stringify!($max), " characters, no control characters."
                    ).trim(),
                })
            }
        }
    )*};
}

bounded_ids! {
    /// An agent's id.
    AgentId, ID_MAX, "an agent id";
    /// A session's id.
    SessionId, ID_MAX, "a session id";
    /// A run's id.
    RunId, ID_MAX, "a run id";
    /// A background task's id.
    TaskId, ID_MAX, "a task id";
    /// A schedule's id.
    ScheduleId, ID_MAX, "a schedule id";
    /// An approval's id.
    ApprovalId, ID_MAX, "an approval id";
    /// A question's id.
    QuestionId, ID_MAX, "a question id";
    /// An artifact's id.
    ArtifactId, ID_MAX, "an artifact id";
    /// A managed environment's id.
    EnvironmentId, ID_MAX, "an environment id";
    /// A message's id.
    MessageId, ID_MAX, "a message id";
    /// A WebSocket subscription's id.
    SubscriptionId, ID_MAX, "a subscription id";
    /// A client tool call's id.
    ToolCallId, ID_MAX, "a tool call id";
    /// A replay cursor: an event id, or a page's `nextCursor`.
    Cursor, ID_MAX, "a cursor";
    /// An event's id: its place in the log, the cursor `after` takes.
    EventId, ID_MAX, "an event id";
    /// An API token's id (`tok_...`).
    TokenId, ID_MAX, "a token id";
    /// A suspended Code Mode cell's id (its `runId`), not an agent run's.
    CellId, ID_MAX, "a cell id";
    /// An environment provider's id (`local`).
    ProviderId, ID_MAX, "a provider id";
    /// A model, `provider/model`.
    ModelRef, KEY_MAX, "a model reference";
    /// The app's key of a session, unique per subject (see [`Subject`]).
    SessionKey, KEY_MAX, "a session key";
    /// Whom a bound token acts for (an app's user or tenant): such a token
    /// sees and acts only on what tokens of its subject made.
    Subject, KEY_MAX, "a subject";
    /// Makes a retried call safe: the same key with the same params returns
    /// the first call's result.
    IdempotencyKey, KEY_MAX, "an idempotency key";
    /// A tool's catalog id or name.
    ToolRef, KEY_MAX, "a tool reference";
}

/// The ids a page or a replay resumes after.
macro_rules! cursor_from {
    ($($id:ident),*) => {$(
        impl From<$id> for Cursor {
            fn from(value: $id) -> Self {
                Self(value.0)
            }
        }
    )*};
}

cursor_from!(
    EventId, MessageId, RunId, SessionId, ArtifactId, TaskId, ScheduleId
);

/// Free text with a cap of `N` characters (control characters allowed:
/// newlines are text).
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Text<const N: usize>(String);

impl<const N: usize> Text<N> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl<const N: usize> std::ops::Deref for Text<N> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<const N: usize> std::fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl<const N: usize> std::fmt::Display for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<const N: usize> From<String> for Text<N> {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl<const N: usize> From<&str> for Text<N> {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl<const N: usize> From<Text<N>> for String {
    fn from(value: Text<N>) -> Self {
        value.0
    }
}

impl<const N: usize> PartialEq<str> for Text<N> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl<'de, const N: usize> Deserialize<'de> for Text<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        check(&value, N, "the text", Controls::Allowed).map_err(serde::de::Error::custom)?;
        Ok(Self(value))
    }
}

impl<const N: usize> JsonSchema for Text<N> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Text{N}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "maxLength": N})
    }
}

/// A display name.
pub type Name = Text<NAME_MAX>;
/// A description, or the reason given for a decision.
pub type Reason = Text<TEXT_MAX>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_enforced_at_decode_and_shown_in_the_schema() {
        let ok: RunId = serde_json::from_value(serde_json::json!("run_1")).unwrap();
        assert_eq!(ok, RunId::new("run_1"));
        let long = "é".repeat(ID_MAX + 1);
        let error = serde_json::from_value::<RunId>(serde_json::json!(long)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "a run id is 129 characters long; the cap is 128"
        );
        assert_eq!(
            RunId::check(&long),
            Err(BoundedError::TooLong {
                what: "a run id",
                count: ID_MAX + 1,
                max: ID_MAX
            })
        );
        // Exactly at the cap, counted in characters.
        serde_json::from_value::<RunId>(serde_json::json!("é".repeat(ID_MAX))).unwrap();
        let error = serde_json::from_value::<SessionKey>(serde_json::json!("a\nb")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "a session key may not contain control characters"
        );
        assert_eq!(
            SessionKey::check("a\nb"),
            Err(BoundedError::ControlCharacter {
                what: "a session key"
            })
        );
        // Text allows newlines, not length.
        serde_json::from_value::<Reason>(serde_json::json!("line\nline")).unwrap();
        assert!(serde_json::from_value::<Text<3>>(serde_json::json!("four")).is_err());
        let mut generator = SchemaGenerator::default();
        assert_eq!(
            SessionKey::json_schema(&mut generator).get("maxLength"),
            Some(&serde_json::json!(KEY_MAX))
        );
        assert_eq!(
            Text::<7>::json_schema(&mut generator).to_value(),
            serde_json::json!({"type": "string", "maxLength": 7})
        );
    }
}
