//! The dotted paths of `talon config get|set|unset`: `tools.codeMode.timeoutMs`,
//! `agents.list[0].id` (or `agents.list.0.id`), `models.providers["my.host"].apiKey`.
//!
//! A path is keys separated by dots, each key at least one character and
//! none of `.`, `[`, `]`; `[N]` is an array index; `["key"]` (or `['key']`, a
//! JSON5 string) is a key holding any character, dots and brackets
//! included. A dotted key of digits also indexes an array (`list.0`), and
//! names the key `"0"` in an object. Paths are shown the way the config
//! check shows keys (`agents.list[0].id`).

use std::fmt;

use super::EditError;
use crate::MAX_NESTING;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// An object's key (or, all digits, an array's index).
    Key(String),
    /// An array's index (`[N]`).
    Index(usize),
}

impl Segment {
    /// The array index this step names, if it names one.
    pub fn index(&self) -> Option<usize> {
        match self {
            Segment::Index(i) => Some(*i),
            Segment::Key(k) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
                k.parse().ok()
            }
            Segment::Key(_) => None,
        }
    }
}

/// A parsed path: at least one step, at most [`MAX_NESTING`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPath {
    segments: Vec<Segment>,
}

impl ConfigPath {
    /// Parses `text`, refusing an empty path, an empty step (`a..b`, `.a`,
    /// `a.`), a bracket that is neither `[N]` nor `["key"]`, and a path
    /// deeper than [`MAX_NESTING`] steps.
    pub fn parse(text: &str) -> Result<Self, EditError> {
        let bad = |message: String| EditError::BadPath {
            path: text.to_owned(),
            message,
        };
        if text.is_empty() {
            return Err(bad("the path is empty".into()));
        }
        let mut segments = Vec::new();
        let mut rest = text;
        loop {
            let segment;
            if let Some(inner) = rest.strip_prefix('[') {
                let (step, after) = bracket(inner).map_err(&bad)?;
                segment = step;
                rest = after;
            } else {
                let end = rest.find(['.', '[', ']']).unwrap_or(rest.len());
                if rest.starts_with(']') {
                    return Err(bad(
                        "unexpected `]` (a key with `]` in it is written `[\"key\"]`)".into(),
                    ));
                }
                if end == 0 {
                    let at = text.len() - rest.len();
                    return Err(bad(format!(
                        "an empty key at character {} (keys are separated by one `.`)",
                        text[..at].chars().count() + 1
                    )));
                }
                segment = Segment::Key(rest[..end].to_owned());
                rest = &rest[end..];
            }
            segments.push(segment);
            if segments.len() > MAX_NESTING {
                return Err(bad(format!("deeper than {MAX_NESTING} levels")));
            }
            if rest.is_empty() {
                return Ok(Self { segments });
            }
            if let Some(after) = rest.strip_prefix('.') {
                if after.is_empty() {
                    return Err(bad("the path ends with `.`".into()));
                }
                rest = after;
            } else if !rest.starts_with('[') {
                return Err(bad(format!(
                    "unexpected `{}` (a key with `]` in it is written `[\"key\"]`)",
                    rest.chars().next().unwrap_or(']')
                )));
            }
        }
    }

    /// Its steps, the first one first.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Its first `n` steps, shown (`(top level)` for none).
    pub fn prefix(&self, n: usize) -> String {
        let shown = Shown(&self.segments[..n.min(self.segments.len())]).to_string();
        if shown.is_empty() {
            "(top level)".to_owned()
        } else {
            shown
        }
    }
}

/// `[N]` or `["key"]` after its `[`: the step and the text after `]`.
fn bracket(inner: &str) -> Result<(Segment, &str), String> {
    match inner.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let mut escaped = false;
            let mut end = None;
            for (i, c) in inner.char_indices().skip(1) {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    c if c == quote => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.ok_or("a quoted key is not closed")?;
            let key = match crate::parse_json5(&inner[..=end]) {
                Ok(serde_json::Value::String(key)) => key,
                Ok(_) => return Err("a bracket holds an index or a quoted key".into()),
                Err(e) => return Err(format!("the quoted key: {e}")),
            };
            let after = inner[end + quote.len_utf8()..]
                .strip_prefix(']')
                .ok_or("a quoted key must be followed by `]`")?;
            Ok((Segment::Key(key), after))
        }
        _ => {
            let close = inner.find(']').ok_or("a `[` is not closed")?;
            let digits = &inner[..close];
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "`[{digits}]` is not an index (a key is written `[\"key\"]`)"
                ));
            }
            let index = digits
                .parse()
                .map_err(|_| format!("the index {digits} is too large"))?;
            Ok((Segment::Index(index), &inner[close + 1..]))
        }
    }
}

/// Steps as the config check shows keys.
struct Shown<'a>(&'a [Segment]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) if !k.is_empty() && !k.contains(['.', '[', ']']) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => {
                    let quoted = serde_json::to_string(k).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for ConfigPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Shown(&self.segments).fmt(f)
    }
}

impl std::str::FromStr for ConfigPath {
    type Err = EditError;

    fn from_str(text: &str) -> Result<Self, EditError> {
        Self::parse(text)
    }
}
