//! The whole-file config check: `talon config check`, and the same at the
//! start of the gateway and of every CLI command that reads a config.
//!
//! It walks the document against [`crate::keys::schema`] and then
//! cross-references the sections (an agent's model names a provider that
//! exists, agent ids are unique, ...). Each finding is a [`Diagnostic`]
//! with a stable code, the dotted key, and the line and column of the key
//! in the file. Unknown keys are warnings with a did-you-mean (OpenClaw's
//! configs carry keys for features Talon lacks, and they must load);
//! wrong types and broken references are errors, and the commands refuse
//! to start on them (exit 2).

use std::fmt;

use serde_json::Value;

use crate::Config;
use crate::json5::pointer_token;
use crate::keys;
use crate::schema::{Kind, Node, Rest, Use};

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
    let mut walk = Walk {
        config,
        out: Vec::new(),
    };
    walk.node(&keys::schema(), &config.raw, &Path::default());
    keys::cross_reference(config, &mut |severity, code, path, message| {
        walk.push(severity, code, path, message);
    });
    let mut out = walk.out;
    out.sort_by_key(|d| d.position.unwrap_or((usize::MAX, usize::MAX)));
    out
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

    fn shown(&self) -> &str {
        if self.dotted.is_empty() {
            "(top level)"
        } else {
            &self.dotted
        }
    }
}

struct Walk<'a> {
    config: &'a Config,
    out: Vec<Diagnostic>,
}

impl Walk<'_> {
    fn push(&mut self, severity: Severity, code: Code, path: &Path, message: String) {
        self.out.push(Diagnostic {
            severity,
            code,
            key: path.shown().to_owned(),
            position: self.config.spans.position(&path.pointer),
            message,
        });
    }

    fn node(&mut self, node: &Node, value: &Value, path: &Path) {
        // `null` means "not set" everywhere Talon reads the config.
        if value.is_null() {
            return;
        }
        match &node.kind {
            Kind::Any => {}
            Kind::Bool => {
                if !value.is_boolean() {
                    self.wrong_type(node, value, path);
                }
            }
            Kind::Integer { min, max } => {
                if let Some(n) = value.as_i64().or_else(|| integral(value)) {
                    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                        self.out_of_range(value, path, *min, *max);
                    }
                } else if value.as_u64().is_some() {
                    // Larger than i64: only a maximum can refuse it.
                    if max.is_some() {
                        self.out_of_range(value, path, *min, *max);
                    }
                } else {
                    self.wrong_type(node, value, path);
                }
            }
            Kind::Number { above, max } => match value.as_f64() {
                None => self.wrong_type(node, value, path),
                Some(n) => {
                    if above.is_some_and(|a| n <= a) || max.is_some_and(|m| n > m) {
                        let range = match (above, max) {
                            (Some(a), Some(m)) => format!("above {a} and at most {m}"),
                            (Some(a), None) => format!("above {a}"),
                            (None, Some(m)) => format!("at most {m}"),
                            (None, None) => String::new(),
                        };
                        let message = format!("{value} is out of range: expected a number {range}");
                        self.push(Severity::Error, Code::BadValue, path, message);
                    }
                }
            },
            Kind::String { choices, non_empty } => match value.as_str() {
                None => self.wrong_type(node, value, path),
                Some(s) if !choices.is_empty() && !choices.contains(&s) => {
                    let hint = suggestion(s, choices.iter().copied())
                        .map(|m| format!("; did you mean `{m}`?"))
                        .unwrap_or_default();
                    let message = match choices {
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
                Some(s) if *non_empty && s.trim().is_empty() => {
                    let message = "expected a non-empty string".to_owned();
                    self.push(Severity::Error, Code::BadValue, path, message);
                }
                Some(_) => {}
            },
            Kind::Array(item) => match value.as_array() {
                None => self.wrong_type(node, value, path),
                Some(items) => {
                    for (i, v) in items.iter().enumerate() {
                        self.node(item, v, &path.index(i));
                    }
                }
            },
            Kind::Object { fields, rest } => {
                let Some(map) = value.as_object() else {
                    self.wrong_type(node, value, path);
                    return;
                };
                for (key, v) in map {
                    let child = path.key(key);
                    if let Some(f) = fields.iter().find(|f| f.name == key) {
                        if f.use_ == Use::OpenClawOnly {
                            let message =
                                "OpenClaw's key; Talon does not read it (ignored)".to_owned();
                            self.push(Severity::Note, Code::NotUsed, &child, message);
                        }
                        self.node(&f.node, v, &child);
                        continue;
                    }
                    match rest {
                        Rest::Open => {}
                        Rest::Map(value_node) => self.node(value_node, v, &child),
                        Rest::Unknown => {
                            let hint = suggestion(key, fields.iter().map(|f| f.name))
                                .map(|m| format!("; did you mean `{m}`?"))
                                .unwrap_or_default();
                            let message = format!("unknown key, ignored{hint}");
                            self.push(Severity::Warning, Code::UnknownKey, &child, message);
                        }
                    }
                }
            }
            Kind::OneOf(options) => match options.iter().find(|o| type_matches(o, value)) {
                Some(option) => self.node(option, value, path),
                None => self.wrong_type(node, value, path),
            },
        }
    }

    fn wrong_type(&mut self, node: &Node, value: &Value, path: &Path) {
        let message = format!("expected {}, found {}", node.expected(), found(value));
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

fn type_matches(node: &Node, value: &Value) -> bool {
    match &node.kind {
        Kind::Any => true,
        Kind::Bool => value.is_boolean(),
        Kind::Integer { .. } => {
            value.as_i64().is_some() || value.as_u64().is_some() || integral(value).is_some()
        }
        Kind::Number { .. } => value.is_number(),
        Kind::String { .. } => value.is_string(),
        Kind::Array(_) => value.is_array(),
        Kind::Object { .. } => value.is_object(),
        Kind::OneOf(options) => options.iter().any(|o| type_matches(o, value)),
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
