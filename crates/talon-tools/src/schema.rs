//! Checking values against JSON Schema, for answers a person or an app
//! gives (an `ask_user` question's `answerSchema`). The subset every
//! answer schema needs, with a clear error for the rest:
//!
//! - `type` (a name or a list), `enum`, `const`;
//! - objects: `properties`, `required`, `additionalProperties` (a boolean
//!   or a schema), `minProperties`, `maxProperties`;
//! - arrays: `items` (one schema), `minItems`, `maxItems`, `uniqueItems`;
//! - strings: `minLength`, `maxLength` (in characters), `pattern` (the
//!   `regex` crate's syntax, which runs in linear time);
//! - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//!   `multipleOf`;
//! - `allOf`, `anyOf`, `oneOf`, `not`.
//!
//! Annotations (`title`, `description`, `default`, `examples`, `format`,
//! `$schema`, `$id`, `$comment`) are ignored; any other keyword (`$ref`
//! first of all) makes [`check_schema`] fail, naming it, so a schema is
//! never half-enforced. Schemas nest at most [`MAX_DEPTH`] deep.

use serde_json::Value;

/// How deep schemas may nest.
pub const MAX_DEPTH: usize = 32;
/// Most errors [`validate`] reports.
pub const MAX_ERRORS: usize = 20;
/// Largest compiled `pattern`.
const MAX_PATTERN_BYTES: usize = 1 << 20;

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "examples",
    "format",
    "$schema",
    "$id",
    "$comment",
];

/// A schema this module would not enforce whole: what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnsupportedSchema {
    /// A keyword it does not enforce, or a value of the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// A `pattern` the `regex` crate refuses (or that compiles too large);
    /// its error is the source.
    #[error("pattern {pattern:?}: {source}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why.
        source: regex::Error,
    },
}

/// A value that does not fit its schema: each error names where (a JSON
/// Pointer) and why, at most [`MAX_ERRORS`] of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct Mismatches(pub Vec<String>);

/// Whether `schema` is a schema this module enforces whole.
pub fn check_schema(schema: &Value) -> Result<(), UnsupportedSchema> {
    check(schema, 0).map_err(|refusal| match refusal {
        Refusal::Shape(message) => UnsupportedSchema::Shape(message),
        Refusal::Pattern(error) => error,
    })
}

/// Why [`check`] refused: a message, or a pattern's error.
enum Refusal {
    Shape(String),
    Pattern(UnsupportedSchema),
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Self::Shape(message)
    }
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Self {
        Self::Shape(message.to_owned())
    }
}

fn check(schema: &Value, depth: usize) -> Result<(), Refusal> {
    if depth > MAX_DEPTH {
        return Err(Refusal::from(format!("nests deeper than {MAX_DEPTH}")));
    }
    let object = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(object) => object,
        _ => return Err("a schema is an object or a boolean".into()),
    };
    for (key, value) in object {
        let sub = |v: &Value| check(v, depth + 1);
        let number = |v: &Value| {
            v.as_f64()
                .map(|_| ())
                .ok_or_else(|| Refusal::from(format!("{key}: a number")))
        };
        let count = |v: &Value| {
            v.as_u64()
                .map(|_| ())
                .ok_or_else(|| Refusal::from(format!("{key}: a non-negative integer")))
        };
        match key.as_str() {
            "type" => {
                let names: Vec<&Value> = match value {
                    Value::Array(names) => names.iter().collect(),
                    one => vec![one],
                };
                for name in names {
                    match name.as_str() {
                        Some(n) if TYPES.contains(&n) => {}
                        Some(n) => return Err(Refusal::from(format!("unknown type {n:?}"))),
                        None => return Err("type: a name or a list of names".into()),
                    }
                }
            }
            "enum" => {
                if !value.is_array() {
                    return Err("enum: a list".into());
                }
            }
            "const" => {}
            "properties" => match value {
                Value::Object(props) => props.values().try_for_each(sub)?,
                _ => return Err("properties: an object of schemas".into()),
            },
            "required" => {
                let ok = value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string));
                if !ok {
                    return Err("required: a list of names".into());
                }
            }
            "additionalProperties" | "items" | "not" => sub(value)?,
            "allOf" | "anyOf" | "oneOf" => match value {
                Value::Array(all) if !all.is_empty() => all.iter().try_for_each(sub)?,
                _ => return Err(Refusal::from(format!("{key}: a non-empty list of schemas"))),
            },
            "minProperties" | "maxProperties" | "minItems" | "maxItems" | "minLength"
            | "maxLength" => count(value)?,
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => number(value)?,
            "multipleOf" => {
                if !value.as_f64().is_some_and(|m| m > 0.0) {
                    return Err("multipleOf: a number above 0".into());
                }
            }
            "uniqueItems" => {
                if !value.is_boolean() {
                    return Err("uniqueItems: a boolean".into());
                }
            }
            "pattern" => {
                let pattern = value.as_str().ok_or("pattern: a string")?;
                compile(pattern).map_err(Refusal::Pattern)?;
            }
            other if ANNOTATIONS.contains(&other) => {}
            other => return Err(Refusal::from(format!("{other} is not supported"))),
        }
    }
    Ok(())
}

fn compile(pattern: &str) -> Result<regex::Regex, UnsupportedSchema> {
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_PATTERN_BYTES)
        .build()
        .map_err(|source| UnsupportedSchema::Pattern {
            pattern: pattern.to_owned(),
            source,
        })
}

/// Checks `value` against `schema` (which passed [`check_schema`]);
/// the errors, each naming where (a JSON Pointer) and why.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Mismatches> {
    let mut errors = Vec::new();
    walk(schema, value, "", &mut errors);
    errors.truncate(MAX_ERRORS);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Mismatches(errors))
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

fn is_type(value: &Value, name: &str) -> bool {
    let actual = type_of(value);
    actual == name || (name == "number" && actual == "integer")
}

fn passes(schema: &Value, value: &Value) -> bool {
    let mut errors = Vec::new();
    walk(schema, value, "", &mut errors);
    errors.is_empty()
}

fn walk(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if errors.len() >= MAX_ERRORS {
        return;
    }
    let object = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            errors.push(format!("{}: no value is allowed here", path(at)));
            return;
        }
        Value::Object(object) => object,
        _ => return,
    };
    let mut fail = |message: String| errors.push(format!("{}: {message}", path(at)));
    if let Some(names) = object.get("type") {
        let names: Vec<&str> = match names {
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            one => one.as_str().into_iter().collect(),
        };
        if !names.iter().any(|n| is_type(value, n)) {
            fail(format!(
                "expected {}, got {}",
                names.join(" or "),
                type_of(value)
            ));
            return;
        }
    }
    if let Some(Value::Array(options)) = object.get("enum")
        && !options.contains(value)
    {
        fail(format!("must be one of {}", Value::Array(options.clone())));
    }
    if let Some(expected) = object.get("const")
        && expected != value
    {
        fail(format!("must be {expected}"));
    }
    match value {
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if let Some(min) = object.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                fail(format!("shorter than {min} characters"));
            }
            if let Some(max) = object.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                fail(format!("longer than {max} characters"));
            }
            if let Some(pattern) = object.get("pattern").and_then(Value::as_str)
                && let Ok(re) = compile(pattern)
                && !re.is_match(s)
            {
                fail(format!("does not match {pattern:?}"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let bound = |key: &str| object.get(key).and_then(Value::as_f64);
            if let Some(min) = bound("minimum")
                && x < min
            {
                fail(format!("below the minimum {min}"));
            }
            if let Some(max) = bound("maximum")
                && x > max
            {
                fail(format!("above the maximum {max}"));
            }
            if let Some(min) = bound("exclusiveMinimum")
                && x <= min
            {
                fail(format!("not above {min}"));
            }
            if let Some(max) = bound("exclusiveMaximum")
                && x >= max
            {
                fail(format!("not below {max}"));
            }
            if let Some(m) = bound("multipleOf")
                && ((x / m) - (x / m).round()).abs() > 1e-9
            {
                fail(format!("not a multiple of {m}"));
            }
        }
        Value::Array(items) => {
            let len = items.len() as u64;
            if let Some(min) = object.get("minItems").and_then(Value::as_u64)
                && len < min
            {
                fail(format!("fewer than {min} items"));
            }
            if let Some(max) = object.get("maxItems").and_then(Value::as_u64)
                && len > max
            {
                fail(format!("more than {max} items"));
            }
            if object.get("uniqueItems") == Some(&Value::Bool(true))
                && items
                    .iter()
                    .enumerate()
                    .any(|(i, a)| items[..i].contains(a))
            {
                fail("items are not unique".into());
            }
            if let Some(each) = object.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(each, item, &format!("{at}/{i}"), errors);
                }
            }
        }
        Value::Object(fields) => {
            let len = fields.len() as u64;
            if let Some(min) = object.get("minProperties").and_then(Value::as_u64)
                && len < min
            {
                fail(format!("fewer than {min} properties"));
            }
            if let Some(max) = object.get("maxProperties").and_then(Value::as_u64)
                && len > max
            {
                fail(format!("more than {max} properties"));
            }
            if let Some(Value::Array(required)) = object.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !fields.contains_key(name) {
                        fail(format!("{name:?} is required"));
                    }
                }
            }
            let props = object.get("properties").and_then(Value::as_object);
            for (name, field) in fields {
                let inner = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                match props.and_then(|p| p.get(name)) {
                    Some(sub) => walk(sub, field, &inner, errors),
                    None => {
                        if let Some(extra) = object.get("additionalProperties") {
                            walk(extra, field, &inner, errors);
                        }
                    }
                }
            }
        }
        _ => {}
    }
    if let Some(Value::Array(all)) = object.get("allOf") {
        for sub in all {
            walk(sub, value, at, errors);
        }
    }
    if let Some(Value::Array(any)) = object.get("anyOf")
        && !any.iter().any(|s| passes(s, value))
    {
        errors.push(format!("{}: matches none of anyOf", path(at)));
    }
    if let Some(Value::Array(one)) = object.get("oneOf") {
        let matched = one.iter().filter(|s| passes(s, value)).count();
        if matched != 1 {
            errors.push(format!(
                "{}: matches {matched} of oneOf, not exactly one",
                path(at)
            ));
        }
    }
    if let Some(not) = object.get("not")
        && passes(not, value)
    {
        errors.push(format!("{}: matches what `not` excludes", path(at)));
    }
}

fn path(at: &str) -> String {
    if at.is_empty() {
        "the answer".into()
    } else {
        format!("the answer at {at}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_outside_the_subset_are_refused_by_name() {
        let cases = [
            (json!({"$ref": "#/x"}), "$ref is not supported"),
            (json!({"type": "integr"}), "unknown type \"integr\""),
            (
                json!({"properties": {"a": {"if": {}}}}),
                "if is not supported",
            ),
            (json!({"pattern": "("}), "pattern \"(\""),
            (json!({"anyOf": []}), "anyOf: a non-empty list of schemas"),
            (json!("string"), "a schema is an object or a boolean"),
        ];
        for (schema, message) in cases {
            let error = check_schema(&schema).unwrap_err().to_string();
            assert!(error.starts_with(message), "{schema}: {error}");
        }
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"items": deep});
        }
        assert_eq!(
            check_schema(&deep),
            Err(UnsupportedSchema::Shape("nests deeper than 32".into()))
        );
        let pattern = check_schema(&json!({"properties": {"a": {"pattern": "("}}})).unwrap_err();
        assert!(
            matches!(&pattern, UnsupportedSchema::Pattern { pattern, .. } if pattern == "("),
            "{pattern:?}"
        );
        assert!(std::error::Error::source(&pattern).is_some());
        check_schema(&json!({"title": "t", "type": ["string", "null"], "format": "email"}))
            .unwrap();
    }

    #[test]
    fn values_are_checked_with_where_and_why() {
        let schema = json!({
            "type": "object",
            "properties": {
                "branch": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "count": {"type": "integer", "minimum": 1, "maximum": 3},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true}
            },
            "required": ["branch"],
            "additionalProperties": false
        });
        check_schema(&schema).unwrap();
        assert_eq!(
            validate(
                &schema,
                &json!({"branch": "main", "count": 2, "tags": ["a"]})
            ),
            Ok(())
        );
        assert_eq!(
            validate(
                &schema,
                &json!({"branch": "Main-Line!", "count": 2.5, "tags": ["a", "c", "a"], "x/y": 1})
            ),
            Err(Mismatches(vec![
                "the answer at /branch: longer than 8 characters".to_owned(),
                "the answer at /branch: does not match \"^[a-z]+$\"".to_owned(),
                "the answer at /count: expected integer, got number".to_owned(),
                "the answer at /tags: items are not unique".to_owned(),
                "the answer at /tags/1: must be one of [\"a\",\"b\"]".to_owned(),
                "the answer at /x~1y: no value is allowed here".to_owned(),
            ]))
        );
        assert_eq!(
            validate(&schema, &json!([])),
            Err(Mismatches(vec![
                "the answer: expected object, got array".to_owned()
            ]))
        );
        assert_eq!(
            validate(&schema, &json!({})),
            Err(Mismatches(vec![
                "the answer: \"branch\" is required".to_owned()
            ]))
        );
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert_eq!(
            validate(&one, &json!(3)),
            Err(Mismatches(vec![
                "the answer: matches 2 of oneOf, not exactly one".to_owned()
            ]))
        );
        assert_eq!(validate(&one, &json!(3.5)), Ok(()));
    }
}
