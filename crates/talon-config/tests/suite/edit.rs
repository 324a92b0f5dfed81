//! `talon config set|unset` on a document's text: each test asserts the
//! whole edited text, so a stray byte anywhere shows.

use serde_json::json;
use talon_config::edit::{ConfigPath, EditError, Segment, get, parse_value, set_text, unset_text};

fn path(text: &str) -> ConfigPath {
    ConfigPath::parse(text).unwrap()
}

fn set(text: &str, at: &str, value: &str) -> String {
    set_text(text, &path(at), &parse_value(value, false).unwrap()).unwrap()
}

fn unset(text: &str, at: &str) -> String {
    unset_text(text, &path(at)).unwrap()
}

const COMMENTED: &str = r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {
      enabled: true, // on
      timeoutMs: 5000, // five seconds
    },
    'allow': ["read", 'write'],
  },
}
"#;

#[test]
fn a_value_is_replaced_and_nothing_else_moves() {
    assert_eq!(
        set(COMMENTED, "tools.codeMode.timeoutMs", "12000"),
        r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {
      enabled: true, // on
      timeoutMs: 12000, // five seconds
    },
    'allow': ["read", 'write'],
  },
}
"#
    );
    // A whole object, and an array's item (by index, either way).
    assert_eq!(
        set(COMMENTED, "tools.codeMode", "{enabled: false}"),
        r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {"enabled":false},
    'allow': ["read", 'write'],
  },
}
"#
    );
    let expected = r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {
      enabled: true, // on
      timeoutMs: 5000, // five seconds
    },
    'allow': ["read", "exec"],
  },
}
"#;
    assert_eq!(set(COMMENTED, "tools.allow[1]", "exec"), expected);
    assert_eq!(set(COMMENTED, "tools.allow.1", "'exec'"), expected);
}

#[test]
fn a_new_key_goes_after_its_last_sibling_indented_like_it() {
    assert_eq!(
        set(COMMENTED, "tools.codeMode.maxPendingToolCalls", "4"),
        r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {
      enabled: true, // on
      timeoutMs: 5000, // five seconds
      maxPendingToolCalls: 4,
    },
    'allow': ["read", 'write'],
  },
}
"#
    );
    // Without trailing commas, the old last member gets one and the new
    // one has none; tabs stay tabs.
    let plain = "{\n\t\"tools\": {\n\t\t\"toolSearch\": false\n\t}\n}\n";
    assert_eq!(
        set(plain, "tools.codeMode", "{\"enabled\": true}"),
        "{\n\t\"tools\": {\n\t\t\"toolSearch\": false,\n\t\t\"codeMode\": {\"enabled\":true}\n\t}\n}\n"
    );
    // Inline objects stay inline.
    assert_eq!(
        set(
            "{ tools: { toolSearch: false } }",
            "tools.deny",
            "[\"exec\"]"
        ),
        "{ tools: { toolSearch: false, deny: [\"exec\"] } }"
    );
    assert_eq!(
        set("{ tools: { toolSearch: false, } }", "tools.deny", "[]"),
        "{ tools: { toolSearch: false, deny: [], } }"
    );
}

#[test]
fn missing_objects_are_created_on_the_way() {
    assert_eq!(
        set(COMMENTED, "agents.defaults.model.primary", "local/mock"),
        r#"// Talon's config
{
  /* the tools */
  tools: {
    codeMode: {
      enabled: true, // on
      timeoutMs: 5000, // five seconds
    },
    'allow': ["read", 'write'],
  },
  agents: {
    defaults: {
      model: {
        primary: "local/mock",
      },
    },
  },
}
"#
    );
    // Into an empty object, with the file's four-space step and quotes.
    assert_eq!(
        set(
            "{\n    \"tools\": {}\n}\n",
            "tools.codeMode.enabled",
            "true"
        ),
        "{\n    \"tools\": {\n        \"codeMode\": {\n            \"enabled\": true\n        }\n    }\n}\n"
    );
    // After the comments of an object that has nothing else.
    assert_eq!(
        set("{\n  // nothing yet\n}\n", "tools.toolSearch", "true"),
        "{\n  // nothing yet\n  tools: {\n    toolSearch: true\n  }\n}\n"
    );
    // CRLF files get CRLF lines.
    assert_eq!(
        set("{\r\n  a: {\r\n    b: 1\r\n  }\r\n}\r\n", "a.c.d", "2"),
        "{\r\n  a: {\r\n    b: 1,\r\n    c: {\r\n      d: 2\r\n    }\r\n  }\r\n}\r\n"
    );
}

#[test]
fn an_array_takes_a_new_item_at_its_end_only() {
    let text = "{\n  agents: {\n    list: [\n      { id: 'main' },\n    ],\n  },\n}\n";
    assert_eq!(
        set(text, "agents.list[1].id", "helper"),
        "{\n  agents: {\n    list: [\n      { id: 'main' },\n      {\n        id: \"helper\",\n      },\n    ],\n  },\n}\n"
    );
    assert_eq!(
        set(text, "agents.list[0].name", "Main"),
        "{\n  agents: {\n    list: [\n      { id: 'main', name: \"Main\" },\n    ],\n  },\n}\n"
    );
    assert_eq!(
        set_text(text, &path("agents.list[3].id"), &json!("x")),
        Err(EditError::OutOfRange {
            key: "agents.list".into(),
            index: 3,
            len: 1
        })
    );
}

#[test]
fn unset_takes_the_member_its_comma_and_its_line() {
    let text = "{\n  a: 1, // one\n  b: 2,\n  // about c\n  c: 3\n}\n";
    assert_eq!(unset(text, "a"), "{\n  b: 2,\n  // about c\n  c: 3\n}\n");
    assert_eq!(
        unset(text, "b"),
        "{\n  a: 1, // one\n  // about c\n  c: 3\n}\n"
    );
    // The last, without a comma: the comma before it goes.
    assert_eq!(
        unset(text, "c"),
        "{\n  a: 1, // one\n  b: 2\n  // about c\n}\n"
    );
    // With trailing commas.
    let trailing = "{\n  a: 1,\n  b: 2,\n}\n";
    assert_eq!(unset(trailing, "b"), "{\n  a: 1,\n}\n");
    assert_eq!(unset(trailing, "a"), "{\n  b: 2,\n}\n");
    // Inline.
    let inline = "{ a: 1, b: 2, c: 3 }";
    assert_eq!(unset(inline, "a"), "{ b: 2, c: 3 }");
    assert_eq!(unset(inline, "b"), "{ a: 1, c: 3 }");
    assert_eq!(unset(inline, "c"), "{ a: 1, b: 2 }");
    assert_eq!(unset("{ a: 1, b: 2, }", "b"), "{ a: 1, }");
    // The only member.
    assert_eq!(unset("{ tools: { a: 1 } }", "tools.a"), "{ tools: {} }");
    assert_eq!(
        unset("{\n  tools: {\n    a: 1,\n  },\n}\n", "tools.a"),
        "{\n  tools: {},\n}\n"
    );
    assert_eq!(
        unset(
            "{\n  tools: {\n    // keep me\n    a: 1,\n  },\n}\n",
            "tools.a"
        ),
        "{\n  tools: {\n    // keep me\n  },\n}\n"
    );
    // A member over several lines.
    assert_eq!(
        unset("{\n  a: {\n    b: 1,\n  },\n  c: 2,\n}\n", "a"),
        "{\n  c: 2,\n}\n"
    );
    // An array's item, and a key that is there twice (both go).
    assert_eq!(unset("{ l: [1, 2, 3] }", "l[1]"), "{ l: [1, 3] }");
    assert_eq!(
        unset("{\n  a: 1,\n  b: 2,\n  a: 3,\n}\n", "a"),
        "{\n  b: 2,\n}\n"
    );
}

#[test]
fn values_are_json5_else_text() {
    for (text, value) in [
        ("true", json!(true)),
        ("12", json!(12)),
        ("\"text\"", json!("text")),
        ("'text'", json!("text")),
        ("{a: 1}", json!({"a": 1})),
        ("[1, 2]", json!([1, 2])),
        ("null", json!(null)),
        ("local/mock", json!("local/mock")),
        ("hello world", json!("hello world")),
        ("", json!("")),
    ] {
        assert_eq!(parse_value(text, false).unwrap(), value, "{text}");
    }
    // Text that starts like JSON must be JSON5; so must anything when
    // strict.
    for text in ["{a: ", "[1,", "\"open"] {
        assert!(
            matches!(parse_value(text, false), Err(EditError::Value(_))),
            "{text}"
        );
    }
    assert!(matches!(
        parse_value("local/mock", true),
        Err(EditError::Value(_))
    ));
    // Too deep is refused, never a stack overflow.
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(
        parse_value(&deep, false).unwrap_err().to_string(),
        "the value is not JSON5: line 1 column 129: nested deeper than 128 levels"
    );
    // Deep enough alone, too deep where it goes.
    let deep = format!("{}1{}", "[".repeat(127), "]".repeat(127));
    let value = parse_value(&deep, false).unwrap();
    assert_eq!(
        set_text("{}", &path("a.b"), &value)
            .unwrap_err()
            .to_string(),
        "the edited file would be refused: line 3 column 134: nested deeper than 128 levels"
    );
}

#[test]
fn paths_dotted_bracketed_and_refused() {
    assert_eq!(
        path("agents.list[0].id").segments(),
        [
            Segment::Key("agents".into()),
            Segment::Key("list".into()),
            Segment::Index(0),
            Segment::Key("id".into())
        ]
    );
    assert_eq!(
        path("models.providers[\"a.b\"]['x]'].k").to_string(),
        "models.providers[\"a.b\"][\"x]\"].k"
    );
    for (text, message) in [
        ("", "the path is empty"),
        (
            "a..b",
            "an empty key at character 3 (keys are separated by one `.`)",
        ),
        (
            ".a",
            "an empty key at character 1 (keys are separated by one `.`)",
        ),
        ("a.", "the path ends with `.`"),
        (
            "a[x]",
            "`[x]` is not an index (a key is written `[\"key\"]`)",
        ),
        ("a[0", "a `[` is not closed"),
        (
            "a[0]b",
            "unexpected `b` (a key with `]` in it is written `[\"key\"]`)",
        ),
        (
            "a]",
            "unexpected `]` (a key with `]` in it is written `[\"key\"]`)",
        ),
        ("a[\"b]", "a quoted key is not closed"),
        (
            "a[99999999999999999999999]",
            "the index 99999999999999999999999 is too large",
        ),
    ] {
        assert_eq!(
            ConfigPath::parse(text),
            Err(EditError::BadPath {
                path: text.into(),
                message: message.into()
            }),
            "{text}"
        );
    }
    let deep = vec!["a"; 129].join(".");
    assert!(ConfigPath::parse(&deep).is_err());
    assert!(ConfigPath::parse(&vec!["a"; 128].join(".")).is_ok());
}

#[test]
fn what_set_and_unset_refuse() {
    let text = "{ tools: { toolSearch: true, allow: ['read'] }, n: 5 }";
    let refused = |at: &str, value: serde_json::Value| {
        set_text(text, &path(at), &value).unwrap_err().to_string()
    };
    assert_eq!(
        refused("n.b", json!(1)),
        "n.b cannot be reached: n is a number (5)"
    );
    assert_eq!(
        refused("tools.toolSearch.mode", json!("tools")),
        "tools.toolSearch.mode cannot be reached: tools.toolSearch is a boolean (true)"
    );
    assert_eq!(
        refused("tools.allow.x", json!(1)),
        "tools.allow.x cannot be reached: tools.allow is an array of 1 items (an index such as [0] names one)"
    );
    assert_eq!(
        refused("tools[0]", json!(1)),
        "tools[0] cannot be reached: tools is an object (a key names its members, an index an array's items)"
    );
    assert_eq!(
        refused("agents.list[0].id", json!("x")),
        "agents.list does not exist and only objects are created: set agents.list to a whole array instead"
    );
    for key in ["__proto__", "constructor", "prototype"] {
        assert_eq!(
            refused(&format!("tools.{key}.x"), json!(1)),
            format!(
                "tools.{key}.x: the key \"{key}\" is refused (JavaScript takes it as an object's prototype)"
            )
        );
    }
    assert_eq!(
        unset_text(text, &path("tools.deny")),
        Err(EditError::Absent {
            key: "tools.deny".into()
        })
    );
    assert_eq!(
        unset_text(text, &path("n.b")).unwrap_err().to_string(),
        "n.b cannot be reached: n is a number (5)"
    );
    // Not JSON5, or not an object: nothing to edit.
    assert!(matches!(
        set_text("{ tools: ", &path("a"), &json!(1)),
        Err(EditError::Syntax(_))
    ));
    assert_eq!(
        set_text("[1]", &path("a"), &json!(1)),
        Err(EditError::TopLevel)
    );
}

#[test]
fn get_reads_a_value_or_says_why_not() {
    let value =
        talon_config::parse_json5("{ agents: { list: [{ id: 'main', tools: null }] }, n: 5 }")
            .unwrap();
    assert_eq!(get(&value, &path("agents.list[0].id")), Ok(&json!("main")));
    assert_eq!(get(&value, &path("agents.list.0.id")), Ok(&json!("main")));
    assert_eq!(get(&value, &path("agents.list[0].tools")), Ok(&json!(null)));
    assert_eq!(
        get(&value, &path("agents.list[1]")),
        Err(EditError::Absent {
            key: "agents.list[1]".into()
        })
    );
    assert_eq!(
        get(&value, &path("n.x")).unwrap_err().to_string(),
        "n.x cannot be reached: n is a number (5)"
    );
}

/// Every member's path in a layout, as `talon config` writes paths.
fn every_path(layout: &talon_config::json5::Layout) -> Vec<String> {
    (1..layout.nodes.len())
        .map(|mut i| {
            let mut steps = Vec::new();
            while let Some(node) = layout.node(i) {
                let Some(parent) = node.parent else { break };
                steps.push(match &node.key {
                    Some(key) => format!("[{}]", serde_json::to_string(key).unwrap()),
                    None => {
                        let index = layout
                            .node(parent)
                            .unwrap()
                            .children
                            .iter()
                            .position(|&c| c == i);
                        format!("[{}]", index.unwrap())
                    }
                });
                i = parent;
            }
            steps.reverse();
            steps.concat()
        })
        .collect()
}

#[test]
fn every_member_of_a_real_config_can_be_set_added_to_and_unset() {
    // Each edit checks its own result against the old value with the
    // change applied, so any misplaced byte fails it.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-key.json5"),
    )
    .unwrap();
    let (_, layout) = talon_config::json5::parse_layout(&text, talon_config::MAX_NESTING).unwrap();
    let paths = every_path(&layout);
    assert!(paths.len() > 100, "{}", paths.len());
    for (i, at) in paths.iter().enumerate() {
        let at = path(at);
        unset_text(&text, &at).unwrap_or_else(|e| panic!("unset {at}: {e}"));
        set_text(&text, &at, &json!({"x": [1, "two"]})).unwrap_or_else(|e| panic!("set {at}: {e}"));
        let node = layout.node(i + 1).unwrap();
        let new = match node.shape {
            talon_config::json5::Shape::Object => format!("{at}.added.deeper"),
            talon_config::json5::Shape::Array => format!("{at}[{}]", node.children.len()),
            talon_config::json5::Shape::Scalar => continue,
        };
        set_text(&text, &path(&new), &json!(true)).unwrap_or_else(|e| panic!("set {new}: {e}"));
    }
}
