//! The config document, declared once: serde types per section whose
//! doc comments, bounds (`#[schemars(range(..))]`, `length(..)`) and
//! OpenClaw keys (accepted, not read) give the committed JSON Schema
//! ([`json_schema`]), and the same schema drives the whole-file check
//! ([`crate::check`]) and the bounds enforced when a config is loaded
//! ([`crate::Config::document`]).
//!
//! Every key is optional and "as given" (`null` means not set); the
//! defaults are those its reader applies, stated in each doc comment.

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::check::Path;

mod agents;
mod infra;
mod sandbox;
mod tools;

pub use agents::*;
pub use infra::*;
pub use sandbox::*;
pub use tools::*;

/// Talon's config (talon.json5): OpenClaw's shape and syntax (JSON5).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(transform = root_openclaw)]
pub struct Document {
    /// Model providers.
    pub models: ModelsSection,
    /// Agents: defaults and the list.
    pub agents: AgentsSection,
    /// Tools: Code Mode, Tool Search, policy and approvals.
    pub tools: ToolsSection,
    /// MCP servers whose tools agents may call.
    pub mcp: McpSection,
    /// Where the gateway keeps its state.
    pub store: StoreSection,
    /// The gateway.
    pub gateway: GatewaySection,
    /// Diagnostics: OpenTelemetry traces.
    pub diagnostics: DiagnosticsSection,
    /// Schedules (OpenClaw's cron): whether this node fires them.
    pub cron: CronSection,
}

/// `Deserialize` for a setting that is a scalar or an object (`true` or
/// `{...}`, `"ask"` or `{...}`), told apart by JSON type so that serde's
/// error is the object's own ("unknown field `rulez`"), not "data did
/// not match any variant".
macro_rules! scalar_or_object {
    ($ty:ident, $scalar:ident, $object:ident) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                let value = serde_json::Value::deserialize(d)?;
                if value.is_object() {
                    serde_json::from_value(value).map(Self::$object)
                } else {
                    serde_json::from_value(value).map(Self::$scalar)
                }
                .map_err(D::Error::custom)
            }
        }
    };
}
pub(crate) use scalar_or_object;

/// OpenClaw's top-level keys Talon does not read.
const OPENCLAW_ROOT: &[&str] = &[
    "meta",
    "env",
    "wizard",
    "logging",
    "update",
    "browser",
    "ui",
    "auth",
    "skills",
    "plugins",
    "messages",
    "commands",
    "session",
    "channels",
    "talk",
    "audio",
    "hooks",
    "web",
    "discovery",
    "canvasHost",
    "bindings",
    "broadcast",
    "approvals",
    "memory",
    "media",
    "nodeHost",
    "secrets",
    "acp",
];

/// The marker of a key OpenClaw reads and Talon accepts without reading:
/// the check notes it.
pub(crate) const OPENCLAW_MARK: &str = "x-openclaw";

/// The marker of an object whose reader refuses keys it does not know
/// (serde's `deny_unknown_fields`): the check makes them errors.
pub(crate) const STRICT_MARK: &str = "x-strict";

/// The description of most of OpenClaw's unread keys.
pub(crate) const NOT_READ: &str = "OpenClaw's; Talon does not read it.";

fn root_openclaw(schema: &mut Schema) {
    openclaw(schema, OPENCLAW_ROOT, NOT_READ);
}

/// Declares OpenClaw's `keys` (accepted, not read) on an object schema.
pub(crate) fn openclaw(schema: &mut Schema, keys: &[&str], description: &str) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(properties) = properties.as_object_mut() {
        for key in keys {
            properties.insert(
                (*key).to_owned(),
                json!({ "description": description, OPENCLAW_MARK: true }),
            );
        }
    }
}

/// What the derive leaves that the published schema does not need:
/// `null` as a second type of every optional key (`null` means unset
/// everywhere), integer formats, serde defaults; and objects with fixed
/// keys are closed (`additionalProperties: false`) unless they say
/// otherwise, so editors flag typos as the check does.
fn tidy(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("format");
    object.remove("default");
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(options)) = object.get_mut("anyOf") {
        options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
        if let [only] = options.as_slice() {
            let mut only = only.clone();
            object.remove("anyOf");
            if let (Some(inner), Some(description)) =
                (only.as_object_mut(), object.get("description").cloned())
            {
                inner.insert("description".into(), description);
            }
            if let Some(inner) = only.as_object() {
                for (k, v) in inner {
                    object.insert(k.clone(), v.clone());
                }
            }
        }
    }
    // A unit enum with documented variants: one list of words.
    let words: Option<Vec<Value>> = match object.get("oneOf") {
        Some(Value::Array(options)) => options
            .iter()
            .map(
                |o| match (o.get("const"), o.get("enum").and_then(Value::as_array)) {
                    (Some(word), _) => Some(word.clone()),
                    (None, Some(words)) if words.len() == 1 => words.first().cloned(),
                    _ => None,
                },
            )
            .collect(),
        _ => None,
    };
    if let Some(words) = words {
        object.remove("oneOf");
        object.insert("type".into(), "string".into());
        object.insert("enum".into(), Value::Array(words));
    }
    if let Some(word) = object.remove("const") {
        object.insert("enum".into(), Value::Array(vec![word]));
    }
    if object.contains_key("properties") && !object.contains_key("additionalProperties") {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// The config's JSON Schema (draft 2020-12), derived from [`Document`]
/// and committed at `crates/talon-config/schema/talon.config.schema.json`
/// for editors (and printed by `talon config schema`).
pub fn json_schema() -> Value {
    SCHEMA.clone()
}

/// The committed schema, embedded at build. A test holds it equal to
/// [`derive_json_schema`], so it is the declaration's, not a second one;
/// reading it costs a start or a `config check` ~2 MiB less than deriving
/// it again in every process.
const COMMITTED: &str = include_str!("../../schema/talon.config.schema.json");

/// The schema, read once per process (the check walks it). Should the
/// committed copy not parse (a broken checkout), it is derived instead.
pub(crate) static SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    serde_json::from_str(COMMITTED).unwrap_or_else(|_| derive_json_schema())
});

/// Derives the schema from [`Document`] afresh: what the committed copy
/// must equal (regenerate with `UPDATE_SCHEMA=1 cargo nextest run -p
/// talon-config`).
pub fn derive_json_schema() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = settings.into_generator().into_root_schema_for::<Document>();
    RecursiveTransform(tidy).transform(&mut schema);
    let mut value = schema.to_value();
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        let mut head = Map::new();
        head.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        head.insert(
            "$id".into(),
            "https://talon.dev/schemas/talon.config.schema.json".into(),
        );
        head.insert("title".into(), "Talon config".into());
        head.extend(std::mem::take(map));
        *map = head;
    }
    value
}

/// The document without its `null`s (`null` means "not set" everywhere),
/// whole numbers as integers, as serde reads it.
pub(crate) fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        // A whole number written as one (`1e9`, `3.0`) is one, as the
        // check counts it.
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "checked to be whole and within 2^53 first"
            )]
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        other => other.clone(),
    }
}

/// Reads the (already schema-checked) document into its types; on
/// failure, where serde refused a value and why.
pub(crate) fn read(value: &Value) -> Result<Document, (Path, String)> {
    let value = without_nulls(value);
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let mut path = Path::default();
        for segment in e.path().iter() {
            path = match segment {
                serde_path_to_error::Segment::Seq { index } => path.index(*index),
                serde_path_to_error::Segment::Map { key }
                | serde_path_to_error::Segment::Enum { variant: key } => path.key(key),
                serde_path_to_error::Segment::Unknown => path,
            };
        }
        (path, e.into_inner().to_string())
    })
}

/// What can be read of a document the check refused values of: the
/// values at `refused` (JSON Pointers) taken out, then each value serde
/// still refuses (or, when that is already out, the value holding it),
/// a bounded number of times; else the empty document.
pub(crate) fn read_rest(value: &Value, refused: Vec<String>) -> Document {
    let mut value = value.clone();
    for pointer in refused {
        if let Some(bad) = value.pointer_mut(&pointer) {
            *bad = Value::Null;
        }
    }
    for _ in 0..64 {
        let (path, _) = match read(&value) {
            Ok(document) => return document,
            Err(refused) => refused,
        };
        let mut pointer = path.pointer;
        loop {
            match value.pointer_mut(&pointer) {
                Some(bad) if !bad.is_null() => {
                    *bad = Value::Null;
                    break;
                }
                _ => match pointer.rfind('/') {
                    Some(cut) => pointer.truncate(cut),
                    None => return Document::default(),
                },
            }
        }
    }
    Document::default()
}

impl Document {
    /// An agent's own entry: `agents.list[]` with this `id`.
    pub fn agent(&self, id: &str) -> Option<&AgentEntry> {
        self.agents
            .list
            .iter()
            .find(|a| a.id.as_deref() == Some(id))
    }

    /// One `tools.*` setting for an agent: the global value and the
    /// agent's override (`agents.list[id].tools.<key>`, else
    /// `agents.defaults.tools.<key>`), `pick` choosing the key.
    pub fn tool<'a, T>(
        &'a self,
        agent: &str,
        pick: impl Fn(&'a ToolSettings) -> Option<&'a T>,
    ) -> (Option<&'a T>, Option<&'a T>) {
        let global = pick(&self.tools.settings);
        let own = self
            .agent(agent)
            .and_then(|a| pick(&a.common.tools))
            .or_else(|| pick(&self.agents.defaults.common.tools));
        (global, own)
    }
}
