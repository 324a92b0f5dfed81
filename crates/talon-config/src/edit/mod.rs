//! `talon config get|set|unset`: one value of the config, read or edited
//! in place.
//!
//! - [`ConfigPath`] (`path.rs`): `tools.codeMode.timeoutMs`, `agents.list[0].id`
//!   (`agents.list.0.id` too), `models.providers["a.b"]`.
//! - [`parse_value`]: a command line's value, JSON5 (`true`, `12`, `"text"`, `{a: 1}`, `[1, 2]`),
//!   else, as OpenClaw does, the text itself as a string (unless it starts like JSON: `{`, `[`, a
//!   quote; or `strict`).
//! - [`get`] reads a value; [`set_text`] and [`unset_text`] edit a document's text by splicing
//!   the byte ranges its [`Layout`] records (`splice.rs`), so every comment, the layout, the
//!   quoting and the trailing commas of what the edit does not touch stay as they were. `set`
//!   replaces the value when the key is there, else adds the member to the innermost object that
//!   exists (creating the objects between; an array takes a new item only at its end); `unset`
//!   removes the member (every one, when the key is there twice) with its comma. Each edit
//!   parses its own result and compares it with the old document with the change applied to
//!   its value: an edit that would come out any other way is refused.
//! - [`edit_file`] (`file.rs`) does this to the config file and writes it only when the
//!   result passes the whole-file check ([`crate::check`]) as `talon config check` would.

use serde_json::Value;

use crate::json5::{self, Layout, Shape};
use crate::{Json5Error, MAX_CONFIG_BYTES, MAX_NESTING};

mod file;
mod path;
mod splice;

pub use file::{Change, Edited, edit_file};
pub use path::{ConfigPath, Segment};

/// Keys refused in a path `set` writes: JavaScript (OpenClaw reads the
/// same file) takes them as an object's prototype.
pub const FORBIDDEN_KEYS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Why a value could not be read or an edit made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The path does not parse.
    #[error("bad path {path:?}: {message}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing is at the path.
    #[error("{key} is not set")]
    Absent {
        /// The path.
        key: String,
    },
    /// The path goes through something that does not hold it.
    #[error("{path} cannot be reached: {key} is {found}")]
    Unreachable {
        /// The whole path.
        path: String,
        /// The part that exists.
        key: String,
        /// What is there (`a number (5)`, ...).
        found: String,
    },
    /// An index past an array's end (the end itself appends).
    #[error(
        "{key}[{index}] is past the end of {key}, which has {len} items (set {key}[{len}] to add one)"
    )]
    OutOfRange {
        /// The array.
        key: String,
        /// The index.
        index: usize,
        /// Its length.
        len: usize,
    },
    /// `set` would have to create an array.
    #[error(
        "{key} does not exist and only objects are created: set {key} to a whole array instead"
    )]
    WouldCreateArray {
        /// Where the array would be.
        key: String,
    },
    /// A key JavaScript takes as the prototype.
    #[error("{path}: the key {key:?} is refused (JavaScript takes it as an object's prototype)")]
    Forbidden {
        /// The whole path.
        path: String,
        /// The key.
        key: String,
    },
    /// The document's top level is not an object.
    #[error("the top level must be an object")]
    TopLevel,
    /// The document is not JSON5.
    #[error("{0}")]
    Syntax(Json5Error),
    /// The value given is not JSON5 (and not taken as a string).
    #[error("the value is not JSON5: {0}")]
    Value(Json5Error),
    /// The edited document would not parse (nested too deeply, most
    /// often).
    #[error("the edited file would be refused: {0}")]
    Result(Json5Error),
    /// The edited document would be larger than a config may be.
    #[error("the edited file would be larger than {limit} bytes")]
    TooLarge {
        /// The limit, [`MAX_CONFIG_BYTES`].
        limit: u64,
    },
    /// The edit did not come out as intended (a bug): nothing is written.
    #[error("the edit of {key} did not come out as intended, so it is not made")]
    Unintended {
        /// The path.
        key: String,
    },
}

/// A command line's value: JSON5, else the text as a string, unless
/// `strict` or it starts like JSON (`{`, `[`, a quote) or nests too
/// deeply, which are refused with the parser's error.
pub fn parse_value(text: &str, strict: bool) -> Result<Value, EditError> {
    match crate::parse_json5(text) {
        Ok(value) => Ok(value),
        Err(e @ Json5Error::TooDeep { .. }) => Err(EditError::Value(e)),
        Err(e) if strict || text.trim_start().starts_with(['{', '[', '"', '\'']) => {
            Err(EditError::Value(e))
        }
        Err(_) => Ok(Value::String(text.to_owned())),
    }
}

/// The value at `path` in `root` (`null` included).
pub fn get<'a>(root: &'a Value, path: &ConfigPath) -> Result<&'a Value, EditError> {
    let mut value = root;
    for (i, segment) in path.segments().iter().enumerate() {
        let next = match (value, segment) {
            (Value::Object(map), Segment::Key(key)) => map.get(key),
            (Value::Array(items), _) if segment.index().is_some() => {
                segment.index().and_then(|n| items.get(n))
            }
            _ => return Err(unreachable(path, i, value)),
        };
        value = next.ok_or_else(|| EditError::Absent {
            key: path.to_string(),
        })?;
    }
    Ok(value)
}

/// `text` with the value at `path` set to `value`.
pub fn set_text(text: &str, path: &ConfigPath, value: &Value) -> Result<String, EditError> {
    if let Some(key) = path.segments().iter().find_map(|s| match s {
        Segment::Key(k) if FORBIDDEN_KEYS.contains(&k.as_str()) => Some(k),
        _ => None,
    }) {
        return Err(EditError::Forbidden {
            path: path.to_string(),
            key: key.clone(),
        });
    }
    let (old, layout) = parse(text)?;
    let json = serde_json::to_string(value).map_err(|_| unintended(path))?;
    let splices = match resolve(&layout, &old, path)? {
        Resolved::Found(node) => {
            let range = layout.node(node).map(|n| n.value.clone());
            vec![splice::Splice::new(
                range.ok_or_else(|| unintended(path))?,
                json,
            )]
        }
        Resolved::Missing { container, depth } => {
            let segments = &path.segments()[depth..];
            let node = layout.node(container).ok_or_else(|| unintended(path))?;
            let key = match (node.shape, segments.first()) {
                (Shape::Object, Some(Segment::Key(key))) => Some(key.as_str()),
                (Shape::Array, Some(segment)) => {
                    let len = node.children.len();
                    match segment.index() {
                        Some(index) if index == len => None,
                        Some(index) => {
                            return Err(EditError::OutOfRange {
                                key: path.prefix(depth),
                                index,
                                len,
                            });
                        }
                        None => return Err(unintended(path)),
                    }
                }
                _ => return Err(unintended(path)),
            };
            let mut nest = Vec::new();
            for (i, segment) in segments.iter().enumerate().skip(1) {
                match segment {
                    Segment::Key(key) => nest.push(key.as_str()),
                    Segment::Index(_) => {
                        return Err(EditError::WouldCreateArray {
                            key: path.prefix(depth + i),
                        });
                    }
                }
            }
            splice::insert(text, &layout, container, key, &nest, &json)
        }
    };
    let edited = splice::apply(text, splices);
    let mut expected = old;
    set_value(&mut expected, path.segments(), value.clone());
    verify(&edited, &expected, path)?;
    Ok(edited)
}

/// `text` without the value at `path` (without every one of them, when a
/// key is there twice); [`EditError::Absent`] when it is not there.
pub fn unset_text(text: &str, path: &ConfigPath) -> Result<String, EditError> {
    let (old, mut layout) = parse(text)?;
    let mut edited = text.to_owned();
    let mut current = old.clone();
    let mut removed = false;
    // Each round removes one member, so there are at most as many rounds
    // as members.
    for _ in 0..=layout.nodes.len() {
        let node = match resolve(&layout, &current, path)? {
            Resolved::Found(node) => node,
            Resolved::Missing { .. } => break,
        };
        let item = layout.node(node).is_some_and(|n| n.key.is_none());
        let splices = splice::remove(&edited, &layout, node);
        if splices.is_empty() {
            return Err(unintended(path));
        }
        edited = splice::apply(&edited, splices);
        removed = true;
        // An array's next item is not a duplicate.
        if item {
            break;
        }
        (current, layout) =
            json5::parse_layout(&edited, MAX_NESTING).map_err(|_| unintended(path))?;
    }
    if !removed {
        return Err(EditError::Absent {
            key: path.to_string(),
        });
    }
    let mut expected = old;
    unset_value(&mut expected, path.segments());
    verify(&edited, &expected, path)?;
    Ok(edited)
}

/// Parses a document to edit: an object at the top level.
fn parse(text: &str) -> Result<(Value, Layout), EditError> {
    let (value, layout) = json5::parse_layout(text, MAX_NESTING).map_err(EditError::Syntax)?;
    if !value.is_object() {
        return Err(EditError::TopLevel);
    }
    Ok((value, layout))
}

/// The edited text must be a config (not too large, parsing) whose value
/// is `expected`.
fn verify(edited: &str, expected: &Value, path: &ConfigPath) -> Result<(), EditError> {
    if edited.len() as u64 > MAX_CONFIG_BYTES {
        return Err(EditError::TooLarge {
            limit: MAX_CONFIG_BYTES,
        });
    }
    let value = crate::parse_json5(edited).map_err(EditError::Result)?;
    if &value != expected {
        return Err(unintended(path));
    }
    Ok(())
}

fn unintended(path: &ConfigPath) -> EditError {
    EditError::Unintended {
        key: path.to_string(),
    }
}

/// Where a path ends in a document's layout.
enum Resolved {
    /// The member or item it names.
    Found(usize),
    /// The innermost container that exists, and how many of the path's
    /// steps lead to it.
    Missing { container: usize, depth: usize },
}

fn resolve(layout: &Layout, value: &Value, path: &ConfigPath) -> Result<Resolved, EditError> {
    let mut at = Layout::ROOT;
    for (i, segment) in path.segments().iter().enumerate() {
        let node = layout.node(at).ok_or_else(|| unintended(path))?;
        let next = match (node.shape, segment) {
            (Shape::Object, Segment::Key(key)) => node
                .children
                .iter()
                .rev()
                .find(|&&c| layout.node(c).and_then(|n| n.key.as_deref()) == Some(key))
                .copied(),
            (Shape::Array, _) if segment.index().is_some() => {
                segment.index().and_then(|n| node.children.get(n)).copied()
            }
            _ => {
                let here = value_at(value, &path.segments()[..i]).unwrap_or(&Value::Null);
                return Err(unreachable(path, i, here));
            }
        };
        match next {
            Some(child) => at = child,
            None => {
                return Ok(Resolved::Missing {
                    container: at,
                    depth: i,
                });
            }
        }
    }
    Ok(Resolved::Found(at))
}

/// The value at `segments` in `root`.
fn value_at<'a>(root: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    segments
        .iter()
        .try_fold(root, |value, segment| match value {
            Value::Object(map) => match segment {
                Segment::Key(key) => map.get(key),
                Segment::Index(_) => None,
            },
            Value::Array(items) => items.get(segment.index()?),
            _ => None,
        })
}

/// The error for a step that `value` (at the path's first `i` steps)
/// cannot take.
fn unreachable(path: &ConfigPath, i: usize, value: &Value) -> EditError {
    let found = match value {
        Value::Object(_) => {
            "an object (a key names its members, an index an array's items)".to_owned()
        }
        Value::Array(items) => format!(
            "an array of {} items (an index such as [0] names one)",
            items.len()
        ),
        other => crate::check::found(other),
    };
    EditError::Unreachable {
        path: path.to_string(),
        key: path.prefix(i),
        found,
    }
}

/// `root` with `value` at `segments`, creating objects on the way (the
/// value an edit must come out as; the edit has checked the path).
fn set_value(root: &mut Value, segments: &[Segment], value: Value) {
    let Some((last, parents)) = segments.split_last() else {
        *root = value;
        return;
    };
    let mut at = root;
    for segment in parents {
        let next = match at {
            Value::Object(map) => match segment {
                Segment::Key(key) => Some(
                    map.entry(key.clone())
                        .or_insert_with(|| Value::Object(Default::default())),
                ),
                Segment::Index(_) => None,
            },
            Value::Array(items) => match segment.index() {
                Some(n) if n == items.len() => {
                    items.push(Value::Object(Default::default()));
                    items.last_mut()
                }
                Some(n) => items.get_mut(n),
                None => None,
            },
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        at = next;
    }
    match (at, last) {
        (Value::Object(map), Segment::Key(key)) => {
            map.insert(key.clone(), value);
        }
        (Value::Array(items), segment) => match segment.index() {
            Some(n) if n == items.len() => items.push(value),
            Some(n) => {
                if let Some(item) = items.get_mut(n) {
                    *item = value;
                }
            }
            None => {}
        },
        _ => {}
    }
}

/// `root` without the value at `segments`.
fn unset_value(root: &mut Value, segments: &[Segment]) {
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut at = root;
    for segment in parents {
        let next = match at {
            Value::Object(map) => match segment {
                Segment::Key(key) => map.get_mut(key),
                Segment::Index(_) => None,
            },
            Value::Array(items) => segment.index().and_then(|n| items.get_mut(n)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        at = next;
    }
    match (at, last) {
        (Value::Object(map), Segment::Key(key)) => {
            map.remove(key);
        }
        (Value::Array(items), segment) => {
            if let Some(n) = segment.index().filter(|&n| n < items.len()) {
                items.remove(n);
            }
        }
        _ => {}
    }
}
