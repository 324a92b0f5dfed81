//! The config's shape, declared once: the check walks it
//! ([`crate::check`]), and [`Node::json_schema`] writes it as the JSON
//! Schema editors read (`schema/talon.config.schema.json`, committed and
//! drift-checked by `talon-config`'s tests).
//!
//! The tree itself is in [`crate::keys`]; this module holds only the
//! vocabulary: kinds of value, objects whose keys are fixed, maps whose
//! keys are free, and unions told apart by JSON type.

use serde_json::{Map, Value, json};

/// What a value may be.
#[derive(Debug, Clone)]
pub enum Kind {
    /// Anything: a section Talon passes through or does not read.
    Any,
    /// `true` or `false`.
    Bool,
    /// A whole number within the bounds.
    Integer {
        /// The least accepted.
        min: Option<i64>,
        /// The greatest accepted.
        max: Option<i64>,
    },
    /// Any number within the bounds.
    Number {
        /// Values must be above this.
        above: Option<f64>,
        /// Values must be at most this.
        max: Option<f64>,
    },
    /// A string; when `choices` is not empty, one of them.
    String {
        /// The accepted values (empty: any string).
        choices: &'static [&'static str],
        /// It must not be empty (or only white space).
        non_empty: bool,
    },
    /// An array of items of one shape.
    Array(Box<Node>),
    /// An object with fixed keys; `rest` says what other keys are.
    Object {
        /// The keys Talon (or OpenClaw) knows.
        fields: Vec<Field>,
        /// Keys beyond them.
        rest: Rest,
    },
    /// One of several shapes, told apart by JSON type (the first whose
    /// type matches is checked).
    OneOf(Vec<Node>),
}

/// What an object's other keys are.
#[derive(Debug, Clone)]
pub enum Rest {
    /// Not expected: each is warned about, with a did-you-mean.
    Unknown,
    /// Free keys (names chosen by the user), each value of this shape.
    Map(Box<Node>),
    /// Free keys with any value (a section passed through).
    Open,
}

/// One node of the tree: a kind and what it is for.
#[derive(Debug, Clone)]
pub struct Node {
    /// What the value may be.
    pub kind: Kind,
    /// What it does (shown by editors).
    pub description: &'static str,
}

/// One fixed key of an object.
#[derive(Debug, Clone)]
pub struct Field {
    /// The key.
    pub name: &'static str,
    /// Its value.
    pub node: Node,
    /// Whether Talon reads it, or only OpenClaw does.
    pub use_: Use,
}

/// Whether Talon reads a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Talon reads it.
    Read,
    /// OpenClaw's key, accepted and not used: the check notes it.
    OpenClawOnly,
}

impl Node {
    /// A node of this kind.
    pub fn new(kind: Kind, description: &'static str) -> Self {
        Self { kind, description }
    }

    /// Any value.
    pub fn any(description: &'static str) -> Self {
        Self::new(Kind::Any, description)
    }

    /// A boolean.
    pub fn bool(description: &'static str) -> Self {
        Self::new(Kind::Bool, description)
    }

    /// Any string.
    pub fn string(description: &'static str) -> Self {
        Self::new(
            Kind::String {
                choices: &[],
                non_empty: false,
            },
            description,
        )
    }

    /// A string that must hold something.
    pub fn text(description: &'static str) -> Self {
        Self::new(
            Kind::String {
                choices: &[],
                non_empty: true,
            },
            description,
        )
    }

    /// One of these words.
    pub fn word(choices: &'static [&'static str], description: &'static str) -> Self {
        Self::new(
            Kind::String {
                choices,
                non_empty: true,
            },
            description,
        )
    }

    /// A whole number in `min..=max`.
    pub fn integer(min: Option<i64>, max: Option<i64>, description: &'static str) -> Self {
        Self::new(Kind::Integer { min, max }, description)
    }

    /// A number above `above` and at most `max`.
    pub fn number(above: Option<f64>, max: Option<f64>, description: &'static str) -> Self {
        Self::new(Kind::Number { above, max }, description)
    }

    /// An array of `item`s.
    pub fn array(item: Node, description: &'static str) -> Self {
        Self::new(Kind::Array(Box::new(item)), description)
    }

    /// An object with these keys, others warned about.
    pub fn object(fields: Vec<Field>, description: &'static str) -> Self {
        Self::new(
            Kind::Object {
                fields,
                rest: Rest::Unknown,
            },
            description,
        )
    }

    /// An object of free keys, each value a `value`.
    pub fn map(value: Node, description: &'static str) -> Self {
        Self::new(
            Kind::Object {
                fields: Vec::new(),
                rest: Rest::Map(Box::new(value)),
            },
            description,
        )
    }

    /// An object with any keys and values.
    pub fn open_object(description: &'static str) -> Self {
        Self::new(
            Kind::Object {
                fields: Vec::new(),
                rest: Rest::Open,
            },
            description,
        )
    }

    /// One of these shapes.
    pub fn one_of(options: Vec<Node>, description: &'static str) -> Self {
        Self::new(Kind::OneOf(options), description)
    }

    /// The JSON types this node accepts, for messages ("a string or an
    /// object").
    pub fn expected(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        self.type_names(&mut names);
        names.dedup();
        match names.as_slice() {
            [] => "anything".to_owned(),
            [one] => (*one).to_owned(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        }
    }

    fn type_names(&self, out: &mut Vec<&'static str>) {
        match &self.kind {
            Kind::Any => {}
            Kind::Bool => out.push("true or false"),
            Kind::Integer { .. } => out.push("a whole number"),
            Kind::Number { .. } => out.push("a number"),
            Kind::String { .. } => out.push("a string"),
            Kind::Array(_) => out.push("an array"),
            Kind::Object { .. } => out.push("an object"),
            Kind::OneOf(options) => options.iter().for_each(|o| o.type_names(out)),
        }
    }

    /// This node as JSON Schema (draft 2020-12).
    pub fn json_schema(&self) -> Value {
        let mut schema = match &self.kind {
            Kind::Any => json!({}),
            Kind::Bool => json!({ "type": "boolean" }),
            Kind::Integer { min, max } => {
                let mut s = json!({ "type": "integer" });
                if let Some(min) = min {
                    s["minimum"] = json!(min);
                }
                if let Some(max) = max {
                    s["maximum"] = json!(max);
                }
                s
            }
            Kind::Number { above, max } => {
                let mut s = json!({ "type": "number" });
                if let Some(above) = above {
                    s["exclusiveMinimum"] = json!(above);
                }
                if let Some(max) = max {
                    s["maximum"] = json!(max);
                }
                s
            }
            Kind::String { choices, non_empty } => {
                let mut s = json!({ "type": "string" });
                if !choices.is_empty() {
                    s["enum"] = json!(choices);
                } else if *non_empty {
                    s["minLength"] = json!(1);
                }
                s
            }
            Kind::Array(item) => json!({ "type": "array", "items": item.json_schema() }),
            Kind::Object { fields, rest } => {
                let properties: Map<String, Value> = fields
                    .iter()
                    .map(|f| (f.name.to_owned(), f.node.json_schema()))
                    .collect();
                let mut s = json!({ "type": "object" });
                if !properties.is_empty() {
                    s["properties"] = Value::Object(properties);
                }
                match rest {
                    Rest::Unknown => s["additionalProperties"] = json!(false),
                    Rest::Map(value) => s["additionalProperties"] = value.json_schema(),
                    Rest::Open => {}
                }
                s
            }
            Kind::OneOf(options) => {
                json!({ "anyOf": options.iter().map(Node::json_schema).collect::<Vec<_>>() })
            }
        };
        if !self.description.is_empty() {
            schema["description"] = json!(self.description);
        }
        schema
    }
}

/// A key Talon reads.
pub fn field(name: &'static str, node: Node) -> Field {
    Field {
        name,
        node,
        use_: Use::Read,
    }
}

/// OpenClaw's key that Talon accepts and does not read.
pub fn openclaw(name: &'static str, description: &'static str) -> Field {
    Field {
        name,
        node: Node::any(description),
        use_: Use::OpenClawOnly,
    }
}
