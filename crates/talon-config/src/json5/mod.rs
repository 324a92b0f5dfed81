//! A JSON5 reader that knows where everything is.
//!
//! Config errors must point at the right line and column: a syntax error
//! at the character that is wrong (and, for an object, array or string
//! left open, at the bracket or quote that opened it), and a schema
//! diagnostic at the key it is about. The `json5` crate gives neither, so
//! this module parses JSON5 (<https://spec.json5.org/>) itself into a
//! `serde_json::Value` and, on request, a [`Spans`] table from each
//! value's JSON Pointer to the byte offset of its key (or, for array items
//! and the root, of the value); or, for editing, a [`Layout`] of where
//! every key, value and comma is (`layout.rs`).
//!
//! The parser is recursive descent with its own depth limit (checked at
//! the opening bracket, so no input reaches the stack), linear in the
//! input, and never panics; `fuzz/fuzz_targets/config_json5.rs` holds it
//! to that. `Infinity` and `NaN` are valid JSON5 but have no JSON value,
//! so they are refused with an error that says so.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::Json5Error;

mod layout;
mod scalars;

pub use layout::{Layout, Node, Shape};
use scalars::NOT_FINITE;

/// Where each value of a parsed document starts: JSON Pointer (RFC 6901)
/// → byte offset of its key in an object, else of the value itself.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    offsets: HashMap<String, usize>,
    line_starts: Vec<usize>,
    text: String,
}

impl Spans {
    /// The 1-based line and column (in characters) of the value at
    /// `pointer`, if the document has it.
    pub fn position(&self, pointer: &str) -> Option<(usize, usize)> {
        self.offsets.get(pointer).map(|&o| self.line_column(o))
    }

    /// The 1-based line and column of a byte offset.
    fn line_column(&self, offset: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count())
            + 1;
        (line, column)
    }
}

/// The 1-based line and column of byte `offset` in `text`: lines end at
/// LF, CR or CRLF (as editors count them).
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let bytes = before.as_bytes();
    let mut line = 1;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            line += 1;
            start = i + 1;
        }
    }
    let column = before.get(start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// Parses `text` into a value, refusing nesting deeper than `limit`.
pub fn parse(text: &str, limit: usize) -> Result<Value, Json5Error> {
    Parser::new(text, limit, false)
        .parse_document()
        .map(|(v, ..)| v)
}

/// Parses `text` into a value and the [`Layout`] of where each of its
/// keys, values and commas is.
pub fn parse_layout(text: &str, limit: usize) -> Result<(Value, Layout), Json5Error> {
    let mut parser = Parser::new(text, limit, false);
    parser.layout = Some(Layout::default());
    let (value, _, layout) = parser.parse_document()?;
    Ok((value, layout.unwrap_or_default()))
}

/// Parses `text` into a value and where each of its parts starts.
pub fn parse_spanned(text: &str, limit: usize) -> Result<(Value, Spans), Json5Error> {
    let (value, offsets, _) = Parser::new(text, limit, true).parse_document()?;
    let mut line_starts = vec![0];
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            line_starts.push(i + 1);
        }
    }
    Ok((
        value,
        Spans {
            offsets,
            line_starts,
            text: text.to_owned(),
        },
    ))
}

/// Escapes one key for a JSON Pointer.
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A parse's value, where each part starts (when asked for) and its
/// layout (when asked for).
type Parsed = (Value, HashMap<String, usize>, Option<Layout>);

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    limit: usize,
    depth: usize,
    spans: Option<HashMap<String, usize>>,
    pointer: String,
    /// The layout being recorded, when asked for.
    layout: Option<Layout>,
    /// The layout's node of the value being parsed.
    current: usize,
}

/// What a container is, for messages.
#[derive(Clone, Copy)]
enum Opener {
    Object,
    Array,
}

impl Opener {
    fn noun(self) -> &'static str {
        match self {
            Opener::Object => "object",
            Opener::Array => "array",
        }
    }
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, limit: usize, spans: bool) -> Self {
        Self {
            text,
            pos: 0,
            limit,
            depth: 0,
            spans: spans.then(HashMap::new),
            pointer: String::new(),
            layout: None,
            current: Layout::ROOT,
        }
    }

    /// The value, where each part starts (when asked for) and the layout
    /// (when asked for).
    fn parse_document(mut self) -> Result<Parsed, Json5Error> {
        self.skip_blank()?;
        if self.peek().is_none() {
            return Err(self.error_at(self.pos, "the document is empty: expected a value"));
        }
        self.note_span(self.pos);
        let root = self.open_node(None);
        let value = self.value()?;
        self.close_node(root);
        self.skip_blank()?;
        if let Some(c) = self.peek() {
            return Err(self.error_at(
                self.pos,
                format!("unexpected {} after the end of the document", describe(c)),
            ));
        }
        Ok((value, self.spans.unwrap_or_default(), self.layout))
    }

    /// Records the start of a value (at the current position) in the
    /// layout, as a child of the value being parsed (or as the root);
    /// returns its node.
    fn open_node(&mut self, key: Option<(&str, std::ops::Range<usize>)>) -> usize {
        let shape = match self.peek() {
            Some('{') => Shape::Object,
            Some('[') => Shape::Array,
            _ => Shape::Scalar,
        };
        let (pos, current) = (self.pos, self.current);
        match &mut self.layout {
            Some(layout) => {
                let parent = (!layout.nodes.is_empty()).then_some(current);
                let key = key.map(|(k, r)| (k.to_owned(), r));
                layout.open(parent, key, pos, shape)
            }
            None => Layout::ROOT,
        }
    }

    /// Records the end of a value (the current position) in the layout.
    fn close_node(&mut self, node: usize) {
        if let Some(layout) = &mut self.layout {
            layout.close(node, self.pos);
        }
    }

    /// Parses the value of a member or item whose layout node is `node`.
    fn child_value(&mut self, node: usize) -> Result<Value, Json5Error> {
        let parent = std::mem::replace(&mut self.current, node);
        let value = self.value();
        self.current = parent;
        self.close_node(node);
        value
    }

    /// Records a comma (at the current position) after `node`.
    fn note_comma(&mut self, node: usize) {
        if let Some(layout) = &mut self.layout {
            layout.comma(node, self.pos);
        }
    }

    fn error_at(&self, offset: usize, message: impl Into<String>) -> Json5Error {
        let (line, column) = line_column(self.text, offset);
        Json5Error::Syntax {
            message: message.into(),
            line,
            column,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..)?.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn note_span(&mut self, offset: usize) {
        if let Some(spans) = &mut self.spans {
            spans.insert(self.pointer.clone(), offset);
        }
    }

    /// Skips white space and comments.
    fn skip_blank(&mut self) -> Result<(), Json5Error> {
        loop {
            match self.peek() {
                Some(c) if is_space(c) => {
                    self.bump();
                }
                Some('/') => {
                    let start = self.pos;
                    let rest = &self.text[self.pos..];
                    if rest.starts_with("//") {
                        while let Some(c) = self.peek() {
                            if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                                break;
                            }
                            self.bump();
                        }
                    } else if rest.starts_with("/*") {
                        match rest.strip_prefix("/*").and_then(|r| r.find("*/")) {
                            Some(end) => self.pos += 2 + end + 2,
                            None => {
                                return Err(
                                    self.error_at(start, "this comment is not closed (no `*/`)")
                                );
                            }
                        }
                    } else {
                        return Ok(());
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Value, Json5Error> {
        let start = self.pos;
        match self.peek() {
            Some('{') => self.container(Opener::Object),
            Some('[') => self.container(Opener::Array),
            Some(q @ ('"' | '\'')) => {
                self.bump();
                self.string(q, start).map(Value::String)
            }
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => self.number(),
            Some(c) if is_identifier_start(c) => {
                let word = self.word();
                match word {
                    "null" => Ok(Value::Null),
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    "Infinity" | "NaN" => Err(self.error_at(start, NOT_FINITE)),
                    _ => Err(self.error_at(
                        start,
                        format!("expected a value, found `{word}` (a string needs quotes)"),
                    )),
                }
            }
            Some(c) => {
                Err(self.error_at(start, format!("expected a value, found {}", describe(c))))
            }
            None => Err(self.error_at(start, "expected a value, found the end of the file")),
        }
    }

    /// A run of identifier characters (for the literals and bare words).
    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !is_identifier_part(c) {
                break;
            }
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn container(&mut self, kind: Opener) -> Result<Value, Json5Error> {
        let open = self.pos;
        if self.depth >= self.limit {
            let (line, column) = line_column(self.text, open);
            return Err(Json5Error::TooDeep {
                limit: self.limit,
                line,
                column,
            });
        }
        self.depth += 1;
        self.bump();
        let value = match kind {
            Opener::Object => self.object_body(open).map(Value::Object),
            Opener::Array => self.array_body(open).map(Value::Array),
        };
        self.depth -= 1;
        value
    }

    fn unclosed(&self, kind: Opener, open: usize) -> Json5Error {
        let (line, column) = line_column(self.text, open);
        self.error_at(
            self.pos,
            format!(
                "the {} opened at line {line} column {column} is not closed: the file ends first",
                kind.noun()
            ),
        )
    }

    fn object_body(&mut self, open: usize) -> Result<Map<String, Value>, Json5Error> {
        let mut map = Map::new();
        let base = self.pointer.len();
        loop {
            self.skip_blank()?;
            let key_at = self.pos;
            let key = match self.peek() {
                Some('}') => {
                    self.bump();
                    return Ok(map);
                }
                None => return Err(self.unclosed(Opener::Object, open)),
                Some(q @ ('"' | '\'')) => {
                    self.bump();
                    self.string(q, key_at)?
                }
                Some(c) if is_identifier_start(c) || c == '\\' => self.identifier()?,
                Some(c) => {
                    return Err(self.error_at(
                        key_at,
                        format!(
                            "expected a key (a name or a quoted string) or `}}`, found {}",
                            describe(c)
                        ),
                    ));
                }
            };
            let key_end = self.pos;
            self.skip_blank()?;
            match self.peek() {
                Some(':') => {
                    self.bump();
                }
                Some(c) => {
                    return Err(self.error_at(
                        self.pos,
                        format!("expected `:` after the key `{key}`, found {}", describe(c)),
                    ));
                }
                None => return Err(self.unclosed(Opener::Object, open)),
            }
            self.skip_blank()?;
            if self.peek().is_none() {
                return Err(self.unclosed(Opener::Object, open));
            }
            if self.spans.is_some() {
                self.pointer.push('/');
                self.pointer.push_str(&pointer_token(&key));
                self.note_span(key_at);
            }
            let node = self.open_node(Some((&key, key_at..key_end)));
            let value = self.child_value(node);
            self.pointer.truncate(base);
            let value = value?;
            let last = key.clone();
            map.insert(key, value);
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.note_comma(node);
                    self.bump();
                }
                Some('}') => {
                    self.bump();
                    return Ok(map);
                }
                None => return Err(self.unclosed(Opener::Object, open)),
                Some(c) => {
                    let (line, column) = line_column(self.text, open);
                    return Err(self.error_at(
                        self.pos,
                        format!(
                            "expected `,` or `}}` after the value of `{}`, found {} (in the object opened at line {line} column {column})",
                            last,
                            describe(c)
                        ),
                    ));
                }
            }
        }
    }

    fn array_body(&mut self, open: usize) -> Result<Vec<Value>, Json5Error> {
        let mut items = Vec::new();
        let base = self.pointer.len();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some(']') => {
                    self.bump();
                    return Ok(items);
                }
                None => return Err(self.unclosed(Opener::Array, open)),
                Some(_) => {}
            }
            if self.spans.is_some() {
                self.pointer.push('/');
                self.pointer.push_str(&items.len().to_string());
                self.note_span(self.pos);
            }
            let node = self.open_node(None);
            let value = self.child_value(node);
            self.pointer.truncate(base);
            items.push(value?);
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.note_comma(node);
                    self.bump();
                }
                Some(']') => {
                    self.bump();
                    return Ok(items);
                }
                None => return Err(self.unclosed(Opener::Array, open)),
                Some(c) => {
                    let (line, column) = line_column(self.text, open);
                    return Err(self.error_at(
                        self.pos,
                        format!(
                            "expected `,` or `]` after item {}, found {} (in the array opened at line {line} column {column})",
                            items.len() - 1,
                            describe(c)
                        ),
                    ));
                }
            }
        }
    }

    /// An unquoted key: an ECMAScript IdentifierName, `\uXXXX` escapes
    /// included.
    fn identifier(&mut self) -> Result<String, Json5Error> {
        let mut out = String::new();
        let mut first = true;
        while let Some(c) = self.peek() {
            let at = self.pos;
            let c = if c == '\\' {
                self.bump();
                if self.bump() != Some('u') {
                    return Err(self.error_at(at, "a key may hold only `\\u` escapes"));
                }
                let decoded = self.hex_char(4, at)?;
                let valid = if first {
                    is_identifier_start(decoded)
                } else {
                    is_identifier_part(decoded)
                };
                if !valid {
                    return Err(self.error_at(at, "this escape is not a character a key may hold"));
                }
                decoded
            } else if (first && is_identifier_start(c)) || (!first && is_identifier_part(c)) {
                self.bump();
                c
            } else {
                break;
            };
            out.push(c);
            first = false;
        }
        Ok(out)
    }
}

/// JSON5's white space: ECMAScript's WhiteSpace and LineTerminator.
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | ' '
            | '\u{a0}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{feff}'
    ) || (c.is_whitespace() && !c.is_ascii())
}

fn is_identifier_start(c: char) -> bool {
    c == '$' || c == '_' || c.is_alphabetic()
}

fn is_identifier_part(c: char) -> bool {
    is_identifier_start(c) || c.is_alphanumeric() || c == '\u{200c}' || c == '\u{200d}'
}

/// A character as a message shows it.
fn describe(c: char) -> String {
    match c {
        '\n' | '\r' => "the end of the line".to_owned(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        c => format!("`{c}`"),
    }
}
