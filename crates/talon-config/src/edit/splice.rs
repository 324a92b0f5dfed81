//! The text of an edit: which bytes of the file change, and what the new
//! ones look like.
//!
//! An edit is a few [`Splice`]s on the file's text, placed by its
//! [`Layout`]: a replaced value is its value's bytes; a new member goes
//! after the container's last member, on a line of its own indented like
//! that member when the container is written one member a line (a comma
//! added after the old last member if it had none, and one after the new
//! member if the old last had one), or inline after it; a removed member
//! takes its comma with it, and its line when it had the line to itself
//! (and, when it was the last and had no comma, the comma before it).
//! New keys are quoted as the file quotes its keys, nested new objects
//! are indented by the file's own indentation step, and line ends are the
//! file's (CRLF when it uses them).

use std::ops::Range;

use crate::json5::{Layout, Shape};

/// Bytes `range` of the text become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Splice {
    range: Range<usize>,
    with: String,
}

impl Splice {
    pub(super) fn new(range: Range<usize>, with: impl Into<String>) -> Self {
        Self {
            range,
            with: with.into(),
        }
    }
}

/// Applies non-overlapping splices; two at the same place keep their
/// order.
pub(super) fn apply(text: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| s.range.start);
    let mut out =
        String::with_capacity(text.len() + splices.iter().map(|s| s.with.len()).sum::<usize>());
    let mut cursor = 0;
    for splice in splices {
        let start = splice.range.start.max(cursor);
        out.push_str(text.get(cursor..start).unwrap_or_default());
        out.push_str(&splice.with);
        cursor = splice.range.end.max(start);
    }
    out.push_str(text.get(cursor..).unwrap_or_default());
    out
}

/// How the file writes what an edit adds.
struct Style {
    /// One level of indentation.
    unit: String,
    /// Whether a one-member-a-line container's last member has a comma.
    trailing_commas: bool,
    /// How keys that need no quotes are written.
    quote: Option<char>,
    /// `\n` or `\r\n`.
    newline: &'static str,
}

impl Style {
    fn of(text: &str, layout: &Layout, container: usize) -> Self {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        // Keys that need no quotes say how the file quotes: the
        // container's own first, else the file's first.
        let siblings = layout
            .node(container)
            .map(|n| n.children.clone())
            .unwrap_or_default();
        let written = siblings
            .iter()
            .copied()
            .chain(0..layout.nodes.len())
            .find_map(|i| {
                let node = layout.node(i)?;
                node.key.as_deref().filter(|k| is_identifier(k))?;
                text.get(node.key_range.clone()?)?.chars().next()
            });
        let quote = written.filter(|c| matches!(c, '"' | '\''));
        let mut unit = None;
        let (mut with_comma, mut without) = (0, 0);
        for (i, node) in layout.nodes.iter().enumerate() {
            if unit.is_none()
                && let (Some(parent), Some(member)) = (node.parent, layout.member(i))
                && let Some((open, _)) = layout.brackets(parent)
                && starts_line(text, member.start)
            {
                let (outer, inner) = (indent_at(text, open), indent_at(text, member.start));
                if inner.len() > outer.len() && inner.starts_with(outer) {
                    unit = Some(inner[outer.len()..].to_owned());
                }
            }
            if let (Some(&last), Some((_, close))) = (node.children.last(), layout.brackets(i))
                && starts_line(text, close)
            {
                match layout.node(last).and_then(|n| n.comma) {
                    Some(_) => with_comma += 1,
                    None => without += 1,
                }
            }
        }
        Self {
            unit: unit.unwrap_or_else(|| "  ".to_owned()),
            trailing_commas: with_comma > without,
            quote,
            newline,
        }
    }

    fn key(&self, key: &str) -> String {
        match self.quote {
            None if is_identifier(key) => key.to_owned(),
            Some('\'') if !key.contains(['\'', '\\']) && !key.chars().any(char::is_control) => {
                format!("'{key}'")
            }
            _ => serde_json::Value::from(key).to_string(),
        }
    }

    fn comma(&self) -> &'static str {
        if self.trailing_commas { "," } else { "" }
    }

    /// `key: value` (or the value alone), the value wrapped in a new
    /// object for each of `nest`'s keys; one member a line (at `indent`)
    /// when `lines`, else inline.
    fn member(
        &self,
        key: Option<&str>,
        nest: &[&str],
        json: &str,
        indent: &str,
        lines: bool,
    ) -> String {
        let mut out = key
            .map(|k| format!("{}: ", self.key(k)))
            .unwrap_or_default();
        match nest.split_first() {
            None => out.push_str(json),
            Some((first, rest)) if lines => {
                let inner = format!("{indent}{}", self.unit);
                let nl = self.newline;
                let member = self.member(Some(first), rest, json, &inner, true);
                out.push_str(&format!(
                    "{{{nl}{inner}{member}{}{nl}{indent}}}",
                    self.comma()
                ));
            }
            Some((first, rest)) => {
                let member = self.member(Some(first), rest, json, "", false);
                out.push_str(&format!("{{ {member} }}"));
            }
        }
        out
    }
}

/// The splices that add a member (`key` in an object, none for an array's
/// new last item) holding `json` wrapped in `nest`'s new objects to the
/// container `container`.
pub(super) fn insert(
    text: &str,
    layout: &Layout,
    container: usize,
    key: Option<&str>,
    nest: &[&str],
    json: &str,
) -> Vec<Splice> {
    let style = Style::of(text, layout, container);
    let nl = style.newline;
    let (Some(node), Some((open, close))) = (layout.node(container), layout.brackets(container))
    else {
        return Vec::new();
    };
    let lines = one_a_line(text, layout, container);
    let Some(&last) = node.children.last() else {
        // An empty container: its first member.
        let outer = indent_at(text, open);
        let inner = format!("{outer}{}", style.unit);
        let between = text.get(open + 1..close).unwrap_or_default();
        if between.trim().is_empty() {
            let with = if lines {
                let member = style.member(key, nest, json, &inner, true);
                format!("{nl}{inner}{member}{}{nl}{outer}", style.comma())
            } else if node.shape == Shape::Object {
                format!(" {} ", style.member(key, nest, json, "", false))
            } else {
                style.member(key, nest, json, "", false)
            };
            return vec![Splice::new(open + 1..close, with)];
        }
        // Only comments inside: the member goes after them.
        if starts_line(text, close) {
            let at = line_start(text, close);
            let member = style.member(key, nest, json, &inner, true);
            return vec![Splice::new(
                at..at,
                format!("{inner}{member}{}{nl}", style.comma()),
            )];
        }
        let member = style.member(key, nest, json, "", false);
        return vec![Splice::new(close..close, format!("{member} "))];
    };
    let (Some(last_node), Some(member)) = (layout.node(last), layout.member(last)) else {
        return Vec::new();
    };
    let had_comma = last_node.comma.is_some();
    let tail = if had_comma { "," } else { "" };
    let mut splices = Vec::new();
    if !lines {
        let new = style.member(key, nest, json, "", false);
        if had_comma {
            splices.push(Splice::new(member.end..member.end, format!(" {new},")));
        } else {
            let end = last_node.value.end;
            splices.push(Splice::new(end..end, format!(", {new}")));
        }
        return splices;
    }
    let indent = if starts_line(text, member.start) {
        indent_at(text, member.start)
    } else {
        node.children
            .first()
            .and_then(|&f| layout.member(f))
            .map_or("", |m| indent_at(text, m.start))
    };
    let new = style.member(key, nest, json, indent, true);
    if !had_comma {
        let end = last_node.value.end;
        splices.push(Splice::new(end..end, ","));
    }
    // After the last member's own line (its comment included) when it has
    // one, else right after it.
    let (end, at_line_end) = same_line_end(text, member.end);
    let at = if at_line_end { end } else { member.end };
    splices.push(Splice::new(at..at, format!("{nl}{indent}{new}{tail}")));
    splices
}

/// The splices that remove the member or item `index`.
pub(super) fn remove(text: &str, layout: &Layout, index: usize) -> Vec<Splice> {
    let (Some(node), Some(member)) = (layout.node(index), layout.member(index)) else {
        return Vec::new();
    };
    let Some(parent) = node.parent else {
        return Vec::new();
    };
    let (Some(container), Some((open, close))) = (layout.node(parent), layout.brackets(parent))
    else {
        return Vec::new();
    };
    let siblings = &container.children;
    let Some(at) = siblings.iter().position(|&s| s == index) else {
        return Vec::new();
    };
    let blank = |range: Range<usize>| text.get(range).is_some_and(|s| s.trim().is_empty());
    let previous = at.checked_sub(1).and_then(|p| siblings.get(p)).copied();
    let next = siblings.get(at + 1).copied();
    // The comma before it goes when it was the last and had none.
    let previous_comma = previous
        .filter(|_| node.comma.is_none() && next.is_none())
        .and_then(|p| layout.node(p)?.comma);
    let (end, at_line_end) = same_line_end(text, member.end);
    if starts_line(text, member.start) && at_line_end {
        // It has its lines to itself: they go, its comment after it too.
        let start = line_start(text, member.start);
        let end = end + newline_len(text, end);
        if siblings.len() == 1 && blank(open + 1..start) && blank(end..close) {
            return vec![Splice::new(open + 1..close, "")];
        }
        let mut splices = vec![Splice::new(start..end, "")];
        if let Some(comma) = previous_comma {
            splices.push(Splice::new(comma..comma + 1, ""));
        }
        return splices;
    }
    if siblings.len() == 1 {
        if blank(open + 1..member.start) && blank(member.end..close) {
            return vec![Splice::new(open + 1..close, "")];
        }
        return vec![Splice::new(member, "")];
    }
    if let Some(next) = next.and_then(|n| layout.member(n)) {
        // Up to the next member when only white space is between.
        let end = if blank(member.end..next.start) {
            next.start
        } else {
            member.end
        };
        return vec![Splice::new(member.start..end, "")];
    }
    match (previous_comma, previous.and_then(|p| layout.member(p))) {
        // The last, without a comma: from the comma before it.
        (Some(comma), _) => vec![Splice::new(comma..member.end, "")],
        // The last, with one: the white space before it too.
        (None, Some(previous)) if blank(previous.end..member.start) => {
            vec![Splice::new(previous.end..member.end, "")]
        }
        _ => vec![Splice::new(member, "")],
    }
}

/// Whether a container is written one member a line: its first member
/// starts a line; an empty one, when it spans lines, is the document, or
/// is in a container written so.
fn one_a_line(text: &str, layout: &Layout, container: usize) -> bool {
    let mut at = container;
    // Bounded by the document's nesting.
    for _ in 0..=layout.nodes.len() {
        let Some(node) = layout.node(at) else {
            return false;
        };
        if let Some(first) = node.children.first().and_then(|&f| layout.member(f)) {
            return starts_line(text, first.start);
        }
        let spans_lines = layout
            .brackets(at)
            .and_then(|(open, close)| text.get(open..close))
            .is_some_and(|s| s.contains(['\n', '\r']));
        match node.parent {
            _ if spans_lines => return true,
            None => return true,
            Some(parent) => at = parent,
        }
    }
    false
}

/// Whether `key` can be written without quotes.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Where the line holding `offset` starts.
fn line_start(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .and_then(|s| s.rfind(['\n', '\r']))
        .map_or(0, |i| i + 1)
}

/// Whether only white space is before `offset` on its line.
fn starts_line(text: &str, offset: usize) -> bool {
    text.get(line_start(text, offset)..offset)
        .is_some_and(|s| s.chars().all(|c| c == ' ' || c == '\t'))
}

/// The white space that starts the line holding `offset`.
fn indent_at(text: &str, offset: usize) -> &str {
    let start = line_start(text, offset);
    let line = text.get(start..offset).unwrap_or_default();
    let end = line.find(|c| c != ' ' && c != '\t').unwrap_or(line.len());
    &line[..end]
}

/// Skips spaces and comments from `from` on its line: where that ends,
/// and whether it is the line's end (or the file's).
fn same_line_end(text: &str, from: usize) -> (usize, bool) {
    let mut at = from;
    loop {
        let rest = text.get(at..).unwrap_or_default();
        let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        at += spaces;
        let rest = &rest[spaces..];
        if rest.starts_with("//") {
            return (at + rest.find(['\n', '\r']).unwrap_or(rest.len()), true);
        }
        if let Some(body) = rest.strip_prefix("/*")
            && let Some(close) = body.find("*/")
            && !body[..close].contains(['\n', '\r'])
        {
            at += 2 + close + 2;
            continue;
        }
        return (at, rest.is_empty() || rest.starts_with(['\n', '\r']));
    }
}

/// The length of the line end at `at` (0 when there is none).
fn newline_len(text: &str, at: usize) -> usize {
    let rest = text.get(at..).unwrap_or_default();
    if rest.starts_with("\r\n") {
        2
    } else if rest.starts_with(['\n', '\r']) {
        1
    } else {
        0
    }
}
