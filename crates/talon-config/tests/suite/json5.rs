//! The JSON5 reader: the spec's syntax, and errors at the right place.

use serde_json::json;
use talon_config::{Json5Error, MAX_NESTING, json5, parse_json5};

fn syntax(text: &str) -> (usize, usize, String) {
    match parse_json5(text) {
        Err(Json5Error::Syntax {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("expected a syntax error for {text:?}, got {other:?}"),
    }
}

#[test]
fn the_spec_s_example_document() {
    let text = r#"// https://spec.json5.org/#introduction
{
  // comments
  unquoted: 'and you can quote me on that',
  singleQuotes: 'I can use "double quotes" here',
  lineBreaks: "Look, Mom! \
No \\n's!",
  hexadecimal: 0xdecaf,
  leadingDecimalPoint: .8675309, andTrailing: 8675309.,
  positiveSign: +1,
  trailingComma: 'in objects', andIn: ['arrays',],
  "backwardsCompatible": "with JSON",
  /* block */ $dollar_und3r: -0x10, ünïcode: '\u00e9\x41\0',
}"#;
    assert_eq!(
        parse_json5(text).unwrap(),
        json!({
            "unquoted": "and you can quote me on that",
            "singleQuotes": "I can use \"double quotes\" here",
            "lineBreaks": "Look, Mom! No \\n's!",
            "hexadecimal": 912_559,
            "leadingDecimalPoint": 0.867_530_9,
            "andTrailing": 8_675_309.0,
            "positiveSign": 1,
            "trailingComma": "in objects",
            "andIn": ["arrays"],
            "backwardsCompatible": "with JSON",
            "$dollar_und3r": -16,
            "ünïcode": "éA\u{0}",
        })
    );
}

#[test]
fn numbers_keep_integers_integral() {
    assert_eq!(
        parse_json5("[0, -0, 18446744073709551615, -9223372036854775808, 1e3, -2.5E-1, 1e400]")
            .map_err(|e| e.to_string()),
        Err("line 1 column 67: this number is too large for a JSON value".to_owned())
    );
    assert_eq!(
        parse_json5("[0, -0, 18446744073709551615, -9223372036854775808, 1e3, -2.5E-1, 18446744073709551616]").unwrap(),
        json!([0, 0, u64::MAX, i64::MIN, 1000.0, -0.25, 18_446_744_073_709_551_616.0])
    );
}

#[test]
fn strings_escapes_and_surrogates() {
    assert_eq!(
        parse_json5(
            r#"["\ud83d\ude00", '\'', "\v\b\f\t\r", "a\
b", "\q"]"#
        )
        .unwrap(),
        json!(["😀", "'", "\u{b}\u{8}\u{c}\t\r", "ab", "q"])
    );
    assert_eq!(syntax(r#"["\ud83d"]"#).0, 1);
    assert_eq!(
        syntax(r#""\1""#).2,
        "a digit escape other than `\\0` is not JSON5"
    );
}

#[test]
fn a_missing_brace_points_at_the_one_left_open() {
    let text = "{\n  agents: {\n    defaults: { model: 'x' },\n  \n";
    assert_eq!(
        syntax(text),
        (
            5,
            1,
            "the object opened at line 2 column 11 is not closed: the file ends first".to_owned()
        )
    );
    // A comma forgotten between two keys: at the second key, naming the first.
    let text = "{\n  agents: {}\n  tools: {}\n}";
    assert_eq!(
        syntax(text),
        (
            3,
            3,
            "expected `,` or `}` after the value of `agents`, found `t` (in the object opened at line 1 column 1)".to_owned()
        )
    );
}

#[test]
fn every_error_has_its_place() {
    let cases: &[(&str, (usize, usize, &str))] = &[
        ("", (1, 1, "the document is empty: expected a value")),
        (
            "{ a: 1 } x",
            (1, 10, "unexpected `x` after the end of the document"),
        ),
        (
            "{ a 1 }",
            (1, 5, "expected `:` after the key `a`, found `1`"),
        ),
        (
            "{ a: yes }",
            (
                1,
                6,
                "expected a value, found `yes` (a string needs quotes)",
            ),
        ),
        (
            "[1 2]",
            (
                1,
                4,
                "expected `,` or `]` after item 0, found `2` (in the array opened at line 1 column 1)",
            ),
        ),
        (
            "{ 'a\nb': 1 }",
            (
                1,
                5,
                "the string opened at line 1 column 3 is not closed on its line (end a line inside a string with `\\`)",
            ),
        ),
        ("  /* open", (1, 3, "this comment is not closed (no `*/`)")),
        (
            "[Infinity]",
            (
                1,
                2,
                "`Infinity` and `NaN` are JSON5 but have no JSON value; write a finite number",
            ),
        ),
        (
            "[-NaN]",
            (
                1,
                2,
                "`Infinity` and `NaN` are JSON5 but have no JSON value; write a finite number",
            ),
        ),
        (
            "[012]",
            (
                1,
                2,
                "a number may not start with `0` (write `0x...` for hexadecimal)",
            ),
        ),
        ("[12px]", (1, 2, "`12px` is not a number")),
        ("[1e]", (1, 2, "`1e` is not a number")),
        (
            "{ -: 1 }",
            (
                1,
                3,
                "expected a key (a name or a quoted string) or `}`, found `-`",
            ),
        ),
        (
            "\r\n\r\n  [",
            (
                3,
                4,
                "the array opened at line 3 column 3 is not closed: the file ends first",
            ),
        ),
        (
            "{ é: 'ü\tx', b: ? }",
            (1, 16, "expected a value, found `?`"),
        ),
    ];
    for (text, (line, column, message)) in cases {
        assert_eq!(
            syntax(text),
            (*line, *column, (*message).to_owned()),
            "{text:?}"
        );
    }
}

#[test]
fn nesting_past_the_limit_is_refused_at_its_bracket() {
    let ok = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
    assert!(parse_json5(&ok).is_ok());
    let deep = format!("\n{}", "[".repeat(200_000));
    assert_eq!(
        parse_json5(&deep),
        Err(Json5Error::TooDeep {
            limit: MAX_NESTING,
            line: 2,
            column: MAX_NESTING + 1
        })
    );
}

#[test]
fn spans_point_at_keys_and_items() {
    let text = "{\n  agents: {\n    list: [\n      { id: 'a' },\n    ],\n  },\n  'we/ird~': 1,\n}";
    let (_, spans) = json5::parse_spanned(text, MAX_NESTING).unwrap();
    let at = |p: &str| spans.position(p);
    assert_eq!(
        [
            at(""),
            at("/agents"),
            at("/agents/list"),
            at("/agents/list/0"),
            at("/agents/list/0/id"),
            at("/we~1ird~0"),
            at("/nothing")
        ],
        [
            Some((1, 1)),
            Some((2, 3)),
            Some((3, 5)),
            Some((4, 7)),
            Some((4, 9)),
            Some((7, 3)),
            None
        ]
    );
}

#[test]
fn a_large_flat_document_parses_in_linear_time() {
    // 200,000 keys on one line: spans stay cheap to build and to query.
    let body: Vec<String> = (0..200_000).map(|i| format!("k{i}: {i}")).collect();
    let text = format!("{{{}}}", body.join(","));
    let (value, spans) = json5::parse_spanned(&text, MAX_NESTING).unwrap();
    assert_eq!(value.as_object().map(serde_json::Map::len), Some(200_000));
    assert_eq!(spans.position("/k199999").map(|(l, _)| l), Some(1));
}

#[test]
fn deep_documents_of_every_shape_are_refused() {
    for open in ["[", "{a:", "{\"a\":", "[{a:"] {
        let text = open.repeat(20_000);
        let error = parse_json5(&text).unwrap_err();
        assert!(
            matches!(error, Json5Error::TooDeep { limit: 128, .. }),
            "{error}"
        );
    }
}

#[test]
fn line_comments_end_at_every_json5_line_terminator() {
    for end in ["\n", "\r", "\u{2028}", "\u{2029}"] {
        let text = format!("//x{end}[1]");
        assert_eq!(parse_json5(&text), Ok(json!([1])), "{end:?}");
        // Brackets inside strings and comments are not nesting.
        let quoted = format!("{{a: '[[[[', b: \"{{{{\\\"[[[\", // [[[[{end} /* {{{{ */ c: 1}}");
        assert_eq!(
            parse_json5(&quoted),
            Ok(json!({"a": "[[[[", "b": "{{\"[[[", "c": 1})),
            "{end:?}"
        );
    }
}

#[test]
fn the_layout_has_every_key_value_comma_and_bracket() {
    let text = "{ 'a': 1 /* one */, b: [true, {c: null}], }";
    let (value, layout) = json5::parse_layout(text, MAX_NESTING).unwrap();
    assert_eq!(value, parse_json5(text).unwrap());
    let shown: Vec<String> = (0..layout.nodes.len())
        .map(|i| {
            let node = layout.node(i).unwrap();
            let key = node.key_range.clone().map_or("-", |r| &text[r]);
            let member = layout.member(i).unwrap();
            format!(
                "{i} parent {:?} key {key} value {:?} member {:?} {:?} children {:?}",
                node.parent,
                &text[node.value.clone()],
                &text[member],
                node.shape,
                node.children
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            "0 parent None key - value \"{ 'a': 1 /* one */, b: [true, {c: null}], }\" member \"{ 'a': 1 /* one */, b: [true, {c: null}], }\" Object children [1, 2]",
            "1 parent Some(0) key 'a' value \"1\" member \"'a': 1 /* one */,\" Scalar children []",
            "2 parent Some(0) key b value \"[true, {c: null}]\" member \"b: [true, {c: null}],\" Array children [3, 4]",
            "3 parent Some(2) key - value \"true\" member \"true,\" Scalar children []",
            "4 parent Some(2) key - value \"{c: null}\" member \"{c: null}\" Object children [5]",
            "5 parent Some(4) key c value \"null\" member \"c: null\" Scalar children []",
        ]
    );
    assert_eq!(layout.brackets(0), Some((0, text.len() - 1)));
    assert_eq!(layout.brackets(1), None);
}
