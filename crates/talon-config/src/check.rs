//! The whole-file config check: `talon config check`, and the same at the
//! start of the gateway and of every CLI command that reads a config.
//!
//! It walks the document against the schema derived from
//! [`crate::model::Document`], reads it into those types, and then
//! cross-references the sections (an agent's model names a provider that
//! exists, agent ids are unique, ...). Each finding is a [`Diagnostic`]
//! with a stable code, the dotted key, and the line and column of the key
//! in the file. Unknown keys are warnings with a did-you-mean (OpenClaw's
//! configs carry keys for features Talon lacks, and they must load);
//! wrong types and broken references are errors, and the commands refuse
//! to start on them (exit 2).

use std::fmt;

use serde_json::{Map, Value};

use crate::Config;
use crate::json5::pointer_token;
use crate::model::{self, Document, OPENCLAW_MARK, STRICT_MARK};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// OpenClaw's key that Talon does not read.
    Note,
    /// A key nobody reads (a typo, most often).
    Warning,
    /// A value Talon cannot use: the commands refuse to start.
    Error,
}

impl Severity {
    /// Its word in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What a finding is about (stable: tests and scripts match on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A key no schema object has.
    UnknownKey,
    /// OpenClaw's key that Talon does not read.
    NotUsed,
    /// A value of the wrong JSON type.
    WrongType,
    /// A string not among the accepted words, or a number out of range.
    BadValue,
    /// A name that refers to nothing (a provider, a model, an agent).
    UnknownReference,
    /// The same id twice.
    Duplicate,
}

impl Code {
    /// The code's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::UnknownKey => "unknown_key",
            Code::NotUsed => "not_used",
            Code::WrongType => "wrong_type",
            Code::BadValue => "bad_value",
            Code::UnknownReference => "unknown_reference",
            Code::Duplicate => "duplicate",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How bad.
    pub severity: Severity,
    /// What kind.
    pub code: Code,
    /// The dotted key (`agents.list[0].model`).
    pub key: String,
    /// Line and column of the key in the file (1-based), when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, column)) = self.position {
            write!(f, "{line}:{column}: ")?;
        }
        write!(
            f,
            "{}[{}]: {}: {}",
            self.severity.as_str(),
            self.code.as_str(),
            self.key,
            self.message
        )
    }
}

/// Checks the whole document; findings in file order (by position), the
/// ones without a position last.
pub fn check(config: &Config) -> Vec<Diagnostic> {
    let mut out = config.structural.to_vec();
    let mut report = |severity, code, path: &Path, message| {
        out.push(Diagnostic {
            severity,
            code,
            key: path.shown().to_owned(),
            position: config.spans.position(&path.pointer),
            message,
        });
    };
    crate::references::cross_reference(&config.document, &mut report);
    out.sort_by_key(|d| d.position.unwrap_or((usize::MAX, usize::MAX)));
    out
}

/// What the declaration says of a document ([`crate::model::json_schema`]
/// walked over it: unknown keys, OpenClaw's keys, wrong types, values
/// out of bounds), and the document read into its types: whole when
/// nothing is wrong, else `None` and what is left of it once the values
/// refused are taken out (so the cross-references still see the rest).
pub(crate) fn structural(
    raw: &Value,
    spans: &crate::Spans,
) -> (Vec<Diagnostic>, Option<Document>, Document) {
    let mut walk = Walk {
        spans,
        out: Vec::new(),
        refused: Vec::new(),
    };
    walk.node(&model::SCHEMA, raw, &Path::default());
    if walk.refused.is_empty() {
        match model::read(raw) {
            Ok(document) => return (walk.out, Some(document.clone()), document),
            Err((path, message)) => walk.push(Severity::Error, Code::BadValue, &path, message),
        }
    }
    (walk.out, None, model::read_rest(raw, walk.refused))
}

/// A path being walked, as a JSON Pointer (for positions) and dotted (for
/// people).
#[derive(Debug, Default, Clone)]
pub(crate) struct Path {
    pub(crate) pointer: String,
    pub(crate) dotted: String,
}

impl Path {
    pub(crate) fn key(&self, key: &str) -> Path {
        let dotted = if self.dotted.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.dotted)
        };
        Path {
            pointer: format!("{}/{}", self.pointer, pointer_token(key)),
            dotted,
        }
    }

    pub(crate) fn index(&self, index: usize) -> Path {
        Path {
            pointer: format!("{}/{index}", self.pointer),
            dotted: format!("{}[{index}]", self.dotted),
        }
    }

    pub(crate) fn shown(&self) -> &str {
        if self.dotted.is_empty() {
            "(top level)"
        } else {
            &self.dotted
        }
    }
}

struct Walk<'a> {
    spans: &'a crate::Spans,
    out: Vec<Diagnostic>,
    /// The JSON Pointers of the values refused (errors).
    refused: Vec<String>,
}

impl Walk<'_> {
    fn push(&mut self, severity: Severity, code: Code, path: &Path, message: String) {
        if severity == Severity::Error {
            self.refused.push(path.pointer.clone());
        }
        self.out.push(Diagnostic {
            severity,
            code,
            key: path.shown().to_owned(),
            position: self.spans.position(&path.pointer),
            message,
        });
    }

    fn node(&mut self, schema: &Value, value: &Value, path: &Path) {
        // `null` means "not set" everywhere Talon reads the config.
        if value.is_null() {
            return;
        }
        let Some(schema) = schema.as_object() else {
            return; // `true`: anything.
        };
        if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
            match options.iter().find(|o| type_matches(o, value)) {
                Some(option) => self.node(option, value, path),
                None => self.wrong_type(options, value, path),
            }
            return;
        }
        match schema.get("type").and_then(Value::as_str) {
            None => {}
            Some("boolean") if !value.is_boolean() => self.not_a(schema, value, path),
            Some("boolean") => {}
            Some("integer") => {
                let min = schema.get("minimum").and_then(Value::as_i64);
                let max = schema.get("maximum").and_then(Value::as_i64);
                if let Some(n) = value.as_i64().or_else(|| integral(value)) {
                    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                        self.out_of_range(value, path, min, max);
                    }
                } else if value.as_u64().is_some() {
                    // Larger than i64: only a maximum can refuse it.
                    if max.is_some() {
                        self.out_of_range(value, path, min, max);
                    }
                } else {
                    self.not_a(schema, value, path);
                }
            }
            Some("number") => match value.as_f64() {
                None => self.not_a(schema, value, path),
                Some(n) => {
                    let above = schema.get("exclusiveMinimum").and_then(Value::as_f64);
                    let min = schema.get("minimum").and_then(Value::as_f64);
                    let max = schema.get("maximum").and_then(Value::as_f64);
                    if above.is_some_and(|a| n <= a)
                        || min.is_some_and(|m| n < m)
                        || max.is_some_and(|m| n > m)
                    {
                        let low = match (above, min) {
                            (Some(a), _) => Some(format!("above {a}")),
                            (None, Some(m)) => Some(format!("from {m}")),
                            (None, None) => None,
                        };
                        let range = match (low, max) {
                            (Some(low), Some(m)) if min.is_some() => format!("{low} to {m}"),
                            (Some(low), Some(m)) => format!("{low} and at most {m}"),
                            (Some(low), None) => low,
                            (None, Some(m)) => format!("at most {m}"),
                            (None, None) => String::new(),
                        };
                        let message = format!("{value} is out of range: expected a number {range}");
                        self.push(Severity::Error, Code::BadValue, path, message);
                    }
                }
            },
            Some("string") => self.string(schema, value, path),
            Some("array") => match value.as_array() {
                None => self.not_a(schema, value, path),
                Some(items) => {
                    let count = items.len() as u64;
                    if let Some(most) = schema.get("maxItems").and_then(Value::as_u64)
                        && count > most
                    {
                        let message = format!("expected at most {most} items, found {count}");
                        self.push(Severity::Error, Code::BadValue, path, message);
                    }
                    if let Some(least) = schema.get("minItems").and_then(Value::as_u64)
                        && count < least
                    {
                        let message = format!("expected at least {least} item(s), found none");
                        self.push(Severity::Error, Code::BadValue, path, message);
                    }
                    let item = schema.get("items").unwrap_or(&Value::Bool(true));
                    for (i, v) in items.iter().enumerate() {
                        self.node(item, v, &path.index(i));
                    }
                }
            },
            Some(_) => self.object(schema, value, path),
        }
    }

    fn string(&mut self, schema: &Map<String, Value>, value: &Value, path: &Path) {
        let choices: Vec<&str> = schema
            .get("enum")
            .and_then(Value::as_array)
            .map(|words| words.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let non_empty = schema.get("minLength").and_then(Value::as_u64) >= Some(1);
        match value.as_str() {
            None => self.not_a(schema, value, path),
            Some(s) if !choices.is_empty() && !choices.contains(&s) => {
                let hint = suggestion(s, choices.iter().copied())
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                let message = match choices.as_slice() {
                    [only] => format!("expected `{only}`, found `{s}`"),
                    _ => {
                        let list = choices
                            .iter()
                            .map(|c| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        format!("`{s}` is not one of {list}{hint}")
                    }
                };
                self.push(Severity::Error, Code::BadValue, path, message);
            }
            Some(s) if non_empty && s.trim().is_empty() => {
                let message = "expected a non-empty string".to_owned();
                self.push(Severity::Error, Code::BadValue, path, message);
            }
            Some(_) => {}
        }
    }

    fn object(&mut self, schema: &Map<String, Value>, value: &Value, path: &Path) {
        let Some(map) = value.as_object() else {
            self.not_a(schema, value, path);
            return;
        };
        let empty = Map::new();
        let fields = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let rest = schema
            .get("additionalProperties")
            .unwrap_or(&Value::Bool(true));
        let required = schema.get("required").and_then(Value::as_array);
        for key in required.into_iter().flatten().filter_map(Value::as_str) {
            if map.get(key).is_none_or(Value::is_null) {
                let message = format!("`{key}` is required");
                self.push(Severity::Error, Code::BadValue, path, message);
            }
        }
        for (key, v) in map {
            let child = path.key(key);
            if let Some(field) = fields.get(key) {
                if field.get(OPENCLAW_MARK) == Some(&Value::Bool(true)) {
                    let message = "OpenClaw's key; Talon does not read it (ignored)".to_owned();
                    self.push(Severity::Note, Code::NotUsed, &child, message);
                }
                self.node(field, v, &child);
                continue;
            }
            if rest == &Value::Bool(false) {
                let hint = suggestion(key, fields.keys().map(String::as_str))
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                if schema.get(STRICT_MARK) == Some(&Value::Bool(true)) {
                    let message =
                        format!("unknown key: this section refuses keys it does not know{hint}");
                    self.push(Severity::Error, Code::UnknownKey, &child, message);
                } else {
                    let message = format!("unknown key, ignored{hint}");
                    self.push(Severity::Warning, Code::UnknownKey, &child, message);
                }
            } else {
                self.node(rest, v, &child);
            }
        }
    }

    fn not_a(&mut self, schema: &Map<String, Value>, value: &Value, path: &Path) {
        self.wrong_type(&[Value::Object(schema.clone())], value, path);
    }

    fn wrong_type(&mut self, options: &[Value], value: &Value, path: &Path) {
        let message = format!("expected {}, found {}", expected(options), found(value));
        self.push(Severity::Error, Code::WrongType, path, message);
    }

    fn out_of_range(&mut self, value: &Value, path: &Path, min: Option<i64>, max: Option<i64>) {
        let range = match (min, max) {
            (Some(a), Some(b)) => format!("from {a} to {b}"),
            (Some(a), None) => format!("of at least {a}"),
            (None, Some(b)) => format!("of at most {b}"),
            (None, None) => String::new(),
        };
        let message = format!("{value} is out of range: expected a whole number {range}");
        self.push(Severity::Error, Code::BadValue, path, message);
    }
}

/// A float that is a whole number (`3.0`) counts as one.
fn integral(value: &Value) -> Option<i64> {
    let f = value.as_f64()?;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "checked to be whole and in range first"
    )]
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

/// The JSON types these schemas accept, for messages ("a string or an
/// object").
fn expected(options: &[Value]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for option in options {
        type_names(option, &mut names);
    }
    names.dedup();
    match names.as_slice() {
        [] => "anything".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn type_names(schema: &Value, out: &mut Vec<&'static str>) {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        options.iter().for_each(|o| type_names(o, out));
        return;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => out.push("true or false"),
        Some("integer") => out.push("a whole number"),
        Some("number") => out.push("a number"),
        Some("string") => out.push("a string"),
        Some("array") => out.push("an array"),
        Some("object") => out.push("an object"),
        _ => {}
    }
}

fn type_matches(schema: &Value, value: &Value) -> bool {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        return options.iter().any(|o| type_matches(o, value));
    }
    match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("boolean") => value.is_boolean(),
        Some("integer") => {
            value.as_i64().is_some() || value.as_u64().is_some() || integral(value).is_some()
        }
        Some("number") => value.is_number(),
        Some("string") => value.is_string(),
        Some("array") => value.is_array(),
        Some(_) => value.is_object(),
    }
}

/// What a value is, for messages: its type and, when short, itself.
pub(crate) fn found(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match value {
        Value::Bool(_) | Value::Number(_) => format!("{kind} ({value})"),
        Value::String(s) if s.chars().count() <= 40 => format!("{kind} ({value})"),
        _ => kind.to_owned(),
    }
}

/// The closest of `candidates` to `word`, if close enough to be a typo:
/// an edit distance (with transpositions, ignoring case) of at most a
/// third of the word's length, and at least 1.
pub fn suggestion<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = (lower.chars().count() / 3).max(1);
    candidates
        .map(|c| (distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance (Damerau–Levenshtein without
/// repeated edits of one substring), over characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 3 {
        return a.len().abs_diff(b.len());
    }
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}
