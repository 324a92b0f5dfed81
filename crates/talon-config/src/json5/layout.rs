//! Where every part of a JSON5 document is, byte by byte: the layout that
//! `talon config set` and `unset` splice (`crate::edit`).
//!
//! [`super::parse_layout`] records one [`Node`] per value: the root, each
//! object member and each array item, with the byte range of its key (as
//! written, quotes included), of its value (for an object or array, from
//! the opening bracket to just past the closing one), and the offset of
//! the comma that follows it. The member's whole range, trailing comma
//! included, is [`Layout::member`]. Nothing here reads the text again:
//! an edit replaces one of these ranges and leaves every other byte (the
//! comments, the layout, the quoting) as it was.

use std::ops::Range;

/// What a value is, as far as editing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{ ... }`.
    Object,
    /// `[ ... ]`.
    Array,
    /// Anything else: a string, number, `true`, `false` or `null`.
    Scalar,
}

/// One value of the document and where it is.
#[derive(Debug, Clone)]
pub struct Node {
    /// The container it is in (`None` for the root).
    pub parent: Option<usize>,
    /// Its key (decoded), when it is an object's member.
    pub key: Option<String>,
    /// The key as written (quotes included), when it is an object's
    /// member.
    pub key_range: Option<Range<usize>>,
    /// The value as written; for an object or array, its brackets
    /// included.
    pub value: Range<usize>,
    /// The offset of the comma after it, if one follows.
    pub comma: Option<usize>,
    /// What the value is.
    pub shape: Shape,
    /// Its members or items in document order (indices into
    /// [`Layout::nodes`]).
    pub children: Vec<usize>,
}

/// Every value of a document, the root first.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The nodes; `nodes[0]` is the root, each container's children come
    /// after it.
    pub nodes: Vec<Node>,
}

impl Layout {
    /// The root node's index.
    pub const ROOT: usize = 0;

    /// The node at `index`, if there is one.
    pub fn node(&self, index: usize) -> Option<&Node> {
        self.nodes.get(index)
    }

    /// A member's or item's whole range: from its key (or, for an array
    /// item, its value) to just past its trailing comma, or to the end of
    /// its value when no comma follows.
    pub fn member(&self, index: usize) -> Option<Range<usize>> {
        let node = self.nodes.get(index)?;
        let start = node
            .key_range
            .as_ref()
            .map_or(node.value.start, |k| k.start);
        let end = node.comma.map_or(node.value.end, |c| c + 1);
        Some(start..end)
    }

    /// A container's brackets: the offsets of its opening and its closing
    /// bracket.
    pub fn brackets(&self, index: usize) -> Option<(usize, usize)> {
        let node = self.nodes.get(index)?;
        (node.shape != Shape::Scalar && node.value.end > node.value.start)
            .then(|| (node.value.start, node.value.end - 1))
    }

    /// Records the start of a value; returns its index.
    pub(super) fn open(
        &mut self,
        parent: Option<usize>,
        key: Option<(String, Range<usize>)>,
        start: usize,
        shape: Shape,
    ) -> usize {
        let index = self.nodes.len();
        let (key, key_range) = key.map_or((None, None), |(k, r)| (Some(k), Some(r)));
        self.nodes.push(Node {
            parent,
            key,
            key_range,
            value: start..start,
            comma: None,
            shape,
            children: Vec::new(),
        });
        if let Some(parent) = parent.and_then(|p| self.nodes.get_mut(p)) {
            parent.children.push(index);
        }
        index
    }

    /// Records where a value ends.
    pub(super) fn close(&mut self, index: usize, end: usize) {
        if let Some(node) = self.nodes.get_mut(index) {
            node.value.end = end;
        }
    }

    /// Records the comma after a member or item.
    pub(super) fn comma(&mut self, index: usize, at: usize) {
        if let Some(node) = self.nodes.get_mut(index) {
            node.comma = Some(at);
        }
    }
}
