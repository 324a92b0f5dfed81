//! The TypeScript SDK's generated layer, `@talon/sdk`'s `src/generated/`,
//! rendered from the same document the gateway serves and commits
//! ([`crate::schema::gateway_schema`]), so the Rust and TypeScript sides
//! cannot disagree about a type, a method or an event:
//!
//! - `types.ts`: every params, result, resource and event-data type, the
//!   event union (`TalonEvent`: the envelope with `data` typed per
//!   `type`), `ApiError` and the error codes;
//! - `methods.ts`: the method table (scope, effect, stability, errors,
//!   whether it takes an idempotency key) and each method's params and
//!   result types;
//! - `schemas.ts`: the schemas the SDK's runtime validator checks what
//!   arrives from outside against (descriptions left out);
//! - `client.ts`: the low-level client, one namespace per resource
//!   (`client.runs.events(runId, { after })`), each method's doc from
//!   the table;
//! - `refusals.ts`: one function per refusal of
//!   [`crate::gateway::REFUSALS`], the `ApiError` the gateway answers, which
//!   the TypeScript fake throws; `caps.ts`: the caps of
//!   [`crate::gateway::caps::CAPS`]; `rules.ts`: how a run's events fold
//!   into its status and its result.
//!
//! [`typescript_files`] renders them; a test in this crate fails when the
//! committed files drift. Nothing in them is written by hand.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::ts_client;

/// One generated file: its path under the package's `src/generated/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// The file's name, e.g. `types.ts`.
    pub name: &'static str,
    /// Its whole text.
    pub source: String,
}

/// Where the files go, from the repository's root.
pub const GENERATED_DIR: &str = "sdk/typescript/packages/sdk/src/generated";

/// The first lines of every generated file.
pub(super) const HEADER: &str = "// Generated from the gateway's method table by \
`talon_protocol::codegen::typescript`:\n// do not edit. Regenerate with \
`UPDATE_GENERATED=1 cargo nextest run -p talon-protocol generated`.\n";

/// Schema names that clash with a global of the browser or Node, and the
/// name the TypeScript side gives them.
const RENAMED: &[(&str, &str)] = &[("Event", "EventEnvelope")];

/// The TypeScript name of a `$defs` entry.
pub(super) fn ts_name(name: &str) -> &str {
    RENAMED
        .iter()
        .find(|(from, _)| *from == name)
        .map_or(name, |(_, to)| to)
}

/// Every generated file, in a fixed order.
pub fn typescript_files() -> Vec<GeneratedFile> {
    let doc = crate::schema::gateway_schema();
    vec![
        GeneratedFile {
            name: "types.ts",
            source: types(&doc),
        },
        GeneratedFile {
            name: "methods.ts",
            source: methods(&doc),
        },
        GeneratedFile {
            name: "schemas.ts",
            source: schemas(&doc),
        },
        GeneratedFile {
            name: "client.ts",
            source: ts_client::client(&doc),
        },
        GeneratedFile {
            name: "refusals.ts",
            source: super::ts_refusals::refusals(),
        },
        GeneratedFile {
            name: "caps.ts",
            source: super::ts_refusals::caps(),
        },
        GeneratedFile {
            name: "rules.ts",
            source: super::ts_refusals::rules(),
        },
    ]
}

pub(super) fn defs(doc: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    doc.get("$defs")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

pub(super) fn methods_of(doc: &Value) -> &[Value] {
    doc.get("methods")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `$defs` name a `{"$ref": "#/$defs/X"}` points at.
pub(super) fn ref_name(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
}

/// A doc comment at `indent`, or nothing for no text.
pub(super) fn doc_comment(out: &mut String, text: Option<&str>, indent: &str) {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return;
    };
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0].trim_end());
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        let line = line.trim_end();
        if line.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {line}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

fn description(schema: &Value) -> Option<&str> {
    schema.get("description").and_then(Value::as_str)
}

/// A property name as TypeScript accepts it in an object type.
fn property_name(name: &str) -> String {
    let ident = name.chars().enumerate().all(|(i, c)| {
        c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
    });
    if ident && !name.is_empty() {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// The TypeScript type of `schema`, its nested objects indented from
/// `indent`.
pub(super) fn ts_type(schema: &Value, indent: &str) -> String {
    if let Some(name) = ref_name(schema) {
        return ts_name(name).to_owned();
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return union(values.iter().map(Value::to_string).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            return union(branches.iter().map(|b| ts_type(b, indent)).collect());
        }
    }
    if let Some(Value::Array(parts)) = schema.get("allOf") {
        let parts: Vec<String> = parts.iter().map(|p| wrap(ts_type(p, indent))).collect();
        return parts.join(" & ");
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return "unknown".to_owned(),
    };
    union(types.iter().map(|t| one_type(t, schema, indent)).collect())
}

fn one_type(kind: &str, schema: &Value, indent: &str) -> String {
    match kind {
        "string" => "string".to_owned(),
        "integer" | "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match schema.get("items") {
            Some(items) => array_of(ts_type(items, indent)),
            None => "unknown[]".to_owned(),
        },
        "object" => object_type(schema, indent),
        _ => "unknown".to_owned(),
    }
}

fn object_type(schema: &Value, indent: &str) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    // Extra properties are typed only where the schema says what they
    // are: a type that merely tolerates unknown fields (a newer server's)
    // gets no index signature, so a misspelt field does not type-check.
    let extra = match schema.get("additionalProperties") {
        Some(Value::Object(inner)) if !inner.is_empty() => {
            Some(ts_type(&Value::Object(inner.clone()), indent))
        }
        Some(Value::Bool(true) | Value::Object(_)) => Some("unknown".to_owned()),
        Some(_) => None,
        None if properties.is_some_and(|p| !p.is_empty()) => None,
        None => Some("unknown".to_owned()),
    };
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return match extra {
            Some(value) => format!("Record<string, {value}>"),
            None => "Record<string, never>".to_owned(),
        };
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, property) in properties {
        doc_comment(&mut out, description(property), &inner);
        let optional = if required.contains(name.as_str()) {
            ""
        } else {
            "?"
        };
        let _ = writeln!(
            out,
            "{inner}{}{optional}: {};",
            property_name(name),
            ts_type(property, &inner)
        );
    }
    if let Some(value) = extra {
        let _ = writeln!(out, "{inner}[key: string]: {value};");
    }
    let _ = write!(out, "{indent}}}");
    out
}

/// Whether `t` is one object literal (`{ ... }`, nothing around it).
fn is_one_object(t: &str) -> bool {
    if !t.starts_with('{') {
        return false;
    }
    let mut depth = 0usize;
    for (i, c) in t.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1 == t.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// `T[]`, parenthesised where `T` is a union or intersection.
fn array_of(t: String) -> String {
    if t.contains(" | ") || t.contains(" & ") {
        format!("({t})[]")
    } else {
        format!("{t}[]")
    }
}

fn union(mut parts: Vec<String>) -> String {
    parts.dedup();
    match parts.len() {
        0 => "never".to_owned(),
        1 => parts.remove(0),
        _ => parts.into_iter().map(wrap).collect::<Vec<_>>().join(" | "),
    }
}

/// Parenthesises a union or intersection inside another.
fn wrap(t: String) -> String {
    if !t.starts_with('{') && (t.contains(" | ") || t.contains(" & ")) {
        format!("({t})")
    } else {
        t
    }
}

fn string_list(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(Value::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn types(doc: &Value) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// Every type of the gateway protocol. Times are epoch milliseconds in fields\n\
         // named `…At`, durations milliseconds in fields named `…Ms`.\n\n",
    );
    let version = doc.get("version").cloned().unwrap_or(Value::Null);
    let _ = writeln!(
        out,
        "/** The protocol version this client speaks. */\nexport const PROTOCOL_VERSION = {version};\n"
    );
    for (name, schema) in defs(doc) {
        doc_comment(&mut out, description(schema), "");
        let rendered = ts_type(schema, "");
        // An object type is an interface (typescript-eslint's
        // consistent-type-definitions); unions and aliases stay types.
        if is_one_object(&rendered) {
            let _ = writeln!(out, "export interface {} {rendered}\n", ts_name(name));
        } else {
            let _ = writeln!(out, "export type {} = {rendered};\n", ts_name(name));
        }
    }
    let event = doc
        .get("event")
        .map_or("unknown".to_owned(), |e| ts_type(e, ""));
    out.push_str(
        "/**\n * An event as the gateway sends it: the versioned envelope, its `data` typed\n\
         * by its `type` (narrow on `event.type`).\n */\n",
    );
    let _ = writeln!(out, "export type TalonEvent = {event};\n");
    for (constant, def, what) in [
        (
            "ERROR_CODES",
            "ErrorCode",
            "Every error code, in the protocol's order.",
        ),
        ("EVENT_TYPES", "EventType", "Every event type."),
        ("SCOPES", "Scope", "Every token scope."),
    ] {
        let values = defs(doc)
            .get(def)
            .and_then(|d| d.get("enum"))
            .and_then(Value::as_array)
            // An event type or a scope `unknown` is a decoder's catch-all
            // (`#[serde(other)]`), not one a server sends (an error's
            // `unknown` stays: a client reports it).
            .map(|v| {
                v.iter()
                    .filter(|v| !(matches!(def, "EventType" | "Scope") && *v == "unknown"))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .map_or_else(String::new, |v| string_list(&v));
        let _ = writeln!(
            out,
            "/** {what} */\nexport const {constant}: readonly {def}[] = {values};\n"
        );
    }
    let statuses: Vec<String> = crate::gateway::ErrorCode::ALL
        .iter()
        .chain([&crate::gateway::ErrorCode::Unknown])
        .map(|code| format!("  {}: {},", code.as_str(), code.http_status()))
        .collect();
    let _ = writeln!(
        out,
        "/** The HTTP status each error code is sent with. */\n\
         export const ERROR_HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {{\n{}\n}};\n",
        statuses.join("\n")
    );
    let retryable: Vec<Value> = crate::gateway::ErrorCode::ALL
        .iter()
        .filter(|code| code.retryable())
        .map(|code| Value::String(code.as_str().to_owned()))
        .collect();
    let _ = writeln!(
        out,
        "/** The codes whose requests may succeed when sent again. */\n\
         export const RETRYABLE_CODES: readonly ErrorCode[] = {};",
        string_list(&retryable)
    );
    out
}

fn methods(doc: &Value) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// The method table: what each method needs, does and returns.\n\n\
         import type * as T from \"./types.js\";\n\n\
         /** What a method does: `read` is safe to retry; `write` acts. */\n\
         export type Effect = \"read\" | \"write\";\n\n\
         /** Whether a method is served: `unsupported` ones answer `unsupported`. */\n\
         export type Stability = \"stable\" | \"experimental\" | \"unsupported\";\n\n\
         /** One method's row of the table. */\n\
         export interface MethodInfo {\n\
         \x20 /** The scope a token needs. */\n  readonly scope: T.Scope;\n\
         \x20 /** Whether it reads or writes. */\n  readonly effect: Effect;\n\
         \x20 /** Whether it is served. */\n  readonly stability: Stability;\n\
         \x20 /** Whether its params take an `idempotencyKey`. */\n  readonly idempotencyKey: boolean;\n\
         \x20 /** Its params' schema name. */\n  readonly params: string;\n\
         \x20 /** Its result's schema name. */\n  readonly result: string;\n\
         \x20 /** Every error code it may return. */\n  readonly errors: readonly T.ErrorCode[];\n\
         }\n\n\
         /** The method table. */\n\
         export const METHODS = {\n",
    );
    for method in methods_of(doc) {
        let name = method["name"].to_string();
        let params = ref_name(&method["params"]).unwrap_or("Empty");
        let result = ref_name(&method["result"]).unwrap_or("Empty");
        let keyed = takes_key(doc, params);
        let errors = method["errors"]
            .as_array()
            .map_or_else(String::new, |e| string_list(e));
        let _ = writeln!(
            out,
            "  {name}: {{\n    scope: {},\n    effect: {},\n    stability: {},\n    \
             idempotencyKey: {keyed},\n    params: \"{}\",\n    result: \"{}\",\n    \
             errors: {errors},\n  }},",
            method["scope"],
            method["effect"],
            method["stability"],
            ts_name(params),
            ts_name(result),
        );
    }
    out.push_str(
        "} as const satisfies Record<string, MethodInfo>;\n\n\
         /** A method's name. */\n\
         export type MethodName = keyof typeof METHODS;\n\n\
         /** Each method's params and result types. */\n\
         export interface MethodTypes {\n",
    );
    for method in methods_of(doc) {
        let params = ts_name(ref_name(&method["params"]).unwrap_or("Empty"));
        let result = ts_name(ref_name(&method["result"]).unwrap_or("Empty"));
        let _ = writeln!(
            out,
            "  {}: {{ params: T.{params}; result: T.{result} }};",
            method["name"]
        );
    }
    out.push_str("}\n");
    out
}

/// Whether the params type `name` has an `idempotencyKey` property.
pub(super) fn takes_key(doc: &Value, name: &str) -> bool {
    defs(doc)
        .get(name)
        .and_then(|d| d.get("properties"))
        .is_some_and(|p| p.get("idempotencyKey").is_some())
}

/// `schema` without what a validator does not read (descriptions, the
/// Rust formats), `$ref`s pointing at the TypeScript names.
fn stripped(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "description" | "format" | "default"))
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => {
                            let name = r.strip_prefix("#/$defs/").unwrap_or(r);
                            Value::String(ts_name(name).to_owned())
                        }
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(p, s)| (p.clone(), stripped(s)))
                                .collect(),
                        ),
                        _ => stripped(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stripped).collect()),
        other => other.clone(),
    }
}

fn schemas(doc: &Value) -> String {
    let mut out = String::from(HEADER);
    out.push_str(
        "//\n// The schemas the runtime validator checks what arrives from outside against:\n\
         // JSON Schema (draft 2020-12) without descriptions, `$ref` naming an entry of\n\
         // this table.\n\n\
         /** Every type's schema, by its TypeScript name. */\n\
         export const SCHEMAS: Readonly<Record<string, unknown>> = {\n",
    );
    for (name, schema) in defs(doc) {
        let _ = writeln!(out, "  {}: {},", ts_name(name), stripped(schema));
    }
    let event = doc.get("event").map(stripped).unwrap_or(Value::Null);
    let _ = writeln!(out, "  TalonEvent: {event},");
    out.push_str("};\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_follow_the_schema() {
        let object = json!({
            "type": "object",
            "properties": {
                "runId": {"$ref": "#/$defs/RunId", "description": "The run."},
                "after": {"anyOf": [{"$ref": "#/$defs/EventId"}, {"type": "null"}]},
                "x-y": {"type": ["array", "null"], "items": {"type": "integer"}},
                "meta": {"type": "object", "additionalProperties": true},
            },
            "required": ["runId"],
            "additionalProperties": false,
        });
        assert_eq!(
            ts_type(&object, ""),
            "{\n  after?: EventId | null;\n  meta?: Record<string, unknown>;\n  \
             /** The run. */\n  runId: RunId;\n  \"x-y\"?: number[] | null;\n}"
        );
        assert_eq!(
            ts_type(
                &json!({"allOf": [{"$ref": "#/$defs/Event"}, {"oneOf": [{"const": "a"}, {"const": "b"}]}]}),
                ""
            ),
            "EventEnvelope & (\"a\" | \"b\")"
        );
        assert_eq!(ts_type(&json!({"enum": ["x", "y"]}), ""), "\"x\" | \"y\"");
        assert_eq!(ts_type(&json!({}), ""), "unknown");
    }
}
