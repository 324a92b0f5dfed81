//! Hostile cell sources: deep nesting of every shape (which would overflow
//! a recursive parser's stack and abort the process) and oversized
//! sources. Each fails with its exact code, sources just under the limits
//! still run, and the runtime keeps working.

use serde_json::json;
use talon_codemode::config::DEFAULT_MAX_SOURCE_BYTES;
use talon_codemode::typescript::{MAX_NESTING, nesting_estimate};
use talon_codemode::{ExecInput, Language};
use talon_protocol::CodeModeResult;

use super::*;

type Shape = (&'static str, fn(usize) -> String);

fn rep(s: &str, n: usize) -> String {
    s.repeat(n)
}

/// Every nesting shape, as a cell of depth `n`.
const SHAPES: &[Shape] = &[
    ("parens", |n| {
        format!("return {}1{}", rep("(", n), rep(")", n))
    }),
    ("brackets", |n| {
        format!("return {}{}", rep("[", n), rep("]", n))
    }),
    ("objects", |n| {
        format!("return {}1{}", rep("{a:", n), rep("}", n))
    }),
    ("blocks", |n| {
        format!("{}{}return 1", rep("{", n), rep("}", n))
    }),
    ("plus chain", |n| format!("return 1{}", rep("+1", n))),
    ("and chain", |n| {
        format!("const a = 1; return a{}", rep("&&a", n))
    }),
    ("or chain", |n| {
        format!("const a = 0; return a{}", rep("||a", n))
    }),
    ("nullish chain", |n| {
        format!("const a = 1; return a{}", rep("??a", n))
    }),
    ("not chain", |n| format!("return {}1", rep("!", n))),
    ("minus chain", |n| format!("return {}1", rep("- ", n))),
    ("typeof chain", |n| format!("return {}1", rep("typeof ", n))),
    ("void chain", |n| format!("return {}1", rep("void ", n))),
    ("await chain", |n| format!("return {}1", rep("await ", n))),
    ("new chain", |n| format!("return {}Object", rep("new ", n))),
    ("member chain", |n| {
        format!("const a = {{}}; a.b = a; return typeof a{}", rep(".b", n))
    }),
    ("optional chain", |n| {
        format!("const a = {{}}; return a{}", rep("?.b", n))
    }),
    ("call chain", |n| {
        format!("const f = () => f; return typeof f{}", rep("()", n))
    }),
    ("index chain", |n| {
        format!("const a = [0]; a[0] = a; return typeof a{}", rep("[0]", n))
    }),
    ("ternary chain", |n| {
        format!("const a = 1; return a{}", rep("?a:a", n))
    }),
    ("nested ternary", |n| {
        format!("const a = 1; return {}a{}", rep("a?(", n), rep("):a", n))
    }),
    ("assignment chain", |n| {
        format!("let a; {}1; return a", rep("a=", n))
    }),
    ("arrow chain", |n| {
        format!("return typeof ({}x)", rep("x=>", n))
    }),
    ("functions", |n| {
        format!(
            "return {}1{}",
            rep("(function(){return ", n),
            rep("})()", n)
        )
    }),
    ("templates", |n| {
        format!("return {}1{}", rep("`${", n), rep("}`", n))
    }),
    ("spread", |n| {
        format!("return {}1{}", rep("[...[", n), rep("]]", n))
    }),
    ("if nest", |n| {
        format!("const a = 1; {}return 1", rep("if(a)", n))
    }),
    ("if lines", |n| {
        format!("const a = 1;\n{}return 1", rep("if (a)\n", n))
    }),
    ("else-if chain", |n| {
        format!("const a = 0; {}return 2", rep("if(a)a;else ", n))
    }),
    ("labels", |n| {
        format!(
            "{}return 1",
            (0..n).map(|i| format!("l{i}:")).collect::<String>()
        )
    }),
];

/// TypeScript-only nesting shapes (types and type syntax).
const TYPE_SHAPES: &[Shape] = &[
    ("as chain", |n| format!("return 1{}", rep(" as number", n))),
    ("non-null chain", |n| {
        format!("const a = 1; return a{}", rep("!", n))
    }),
    ("type args", |n| {
        format!(
            "let x: {}number{} = 1; return x",
            rep("Array<", n),
            rep(">", n)
        )
    }),
    ("generic call", |n| {
        format!(
            "const f = <T,>() => 1; return f<{}number{}>()",
            rep("Array<", n),
            rep(">", n)
        )
    }),
    ("keyof chain", |n| {
        format!("let x: {}string = 1 as any; return 1", rep("keyof ", n))
    }),
    ("tuple types", |n| {
        format!(
            "let x: {}number{} = 1 as any; return 1",
            rep("[", n),
            rep("]", n)
        )
    }),
    ("object types", |n| {
        format!(
            "let x: {}number{} = 1 as any; return 1",
            rep("{a:", n),
            rep("}", n)
        )
    }),
    ("function types", |n| {
        format!("let x: {}number = 1 as any; return 1", rep("()=>", n))
    }),
    ("conditional types", |n| {
        format!(
            "type T = {}number; return 1",
            rep("string extends number ? 1 : ", n)
        )
    }),
    ("array types", |n| {
        format!("let x: number{} = 1 as any; return 1", rep("[]", n))
    }),
];

/// The largest `n` whose cell the estimate accepts.
fn deepest_accepted(shape: fn(usize) -> String) -> usize {
    let ok = |n: usize| nesting_estimate(&shape(n), MAX_NESTING) <= MAX_NESTING;
    let (mut lo, mut hi) = (0usize, 1usize);
    while ok(hi) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) { lo = mid } else { hi = mid }
    }
    lo
}

async fn exec_ts(run: &CodeModeRun, code: &str) -> CodeModeResult {
    run.exec("call_1", json!({"code": code, "language": "typescript"}))
        .await
}

#[tokio::test]
async fn deep_typescript_of_every_shape_is_refused_before_swc() {
    let (_cm, run) = standard();
    for (name, shape) in SHAPES.iter().chain(TYPE_SHAPES) {
        for n in [3_000, 30_000] {
            let code = shape(n);
            let result = exec_ts(&run.run, &code).await;
            let (error, code) = failure(&result);
            assert_eq!(
                code,
                Some("typescript_transform_failed"),
                "{name} x{n}: {error}"
            );
            assert!(error.contains("nests too deeply"), "{name} x{n}: {error}");
        }
    }
    // The review's cases, exactly.
    let parens = format!("return {}1{}", "(".repeat(3_000), ")".repeat(3_000));
    assert_eq!(
        failure(&exec_ts(&run.run, &parens).await).1,
        Some("typescript_transform_failed")
    );
    let chain = format!("return 1{}", "+1".repeat(99_999));
    assert_eq!(
        failure(&exec_ts(&run.run, &chain).await).1,
        Some("typescript_transform_failed")
    );
    assert_eq!(
        value(&exec_ts(&run.run, "return 1 as number").await),
        json!(1)
    );
}

#[tokio::test]
async fn typescript_just_under_the_nesting_limit_still_runs() {
    let (_cm, run) = standard();
    for (name, shape) in SHAPES.iter().chain(TYPE_SHAPES) {
        let n = deepest_accepted(*shape);
        assert!(n >= 140, "{name}: only {n} levels accepted");
        let code = shape(n);
        let result = exec_ts(&run.run, &code).await;
        if let CodeModeResult::Failed { error, code, .. } = &result {
            // Accepted by the estimate and stripped: whatever the guest
            // makes of it, it is not a transform failure.
            assert_ne!(
                code.map(|c| c.as_str()),
                Some("typescript_transform_failed"),
                "{name} x{n}: {error}"
            );
        }
    }
}

#[tokio::test]
async fn deep_javascript_fails_in_the_sandbox_and_the_next_cell_works() {
    let (_cm, run) = standard();
    for (name, shape) in SHAPES {
        let code = shape(30_000);
        let result = exec(&run.run, &code).await;
        // QuickJS parses operator, member and call chains iteratively; the
        // rest reach its stack guard inside the sandbox: a guest RangeError.
        let iterative = [
            "plus chain",
            "and chain",
            "or chain",
            "nullish chain",
            "member chain",
            "optional chain",
            "call chain",
            "index chain",
        ];
        match &result {
            CodeModeResult::Completed { .. } => assert!(iterative.contains(name), "{name}"),
            CodeModeResult::Failed { error, code, .. } => {
                assert!(!iterative.contains(name), "{name}: {error}");
                assert_eq!(*code, None, "{name}: {error}");
                assert!(
                    error.contains("RangeError: Maximum call stack size exceeded"),
                    "{name}: {error}"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(value(&exec(&run.run, "return 1").await), json!(1), "{name}");
    }
}

#[tokio::test]
async fn realistic_deep_but_sane_cells_pass_the_estimate() {
    let concat = format!(
        "const parts: string[] = [];\nconst s = {};\nreturn s.length;",
        (0..500)
            .map(|i| format!("\"part {i}\""))
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let nested = format!(
        "const config = {};\nreturn JSON.stringify(config).length;",
        (0..200).fold("1".to_owned(), |inner, i| format!("{{ k{i}: {inner} }}"))
    );
    let semicolonless = (0..2_000)
        .map(|i| format!("const v{i} = f(a{i}, b) + g(c)\nif (v{i} > 1) {{ out.push(v{i}) }}\n"))
        .collect::<String>();
    for code in [&concat, &nested, &semicolonless] {
        let estimate = nesting_estimate(code, usize::MAX);
        assert!(estimate <= MAX_NESTING, "{estimate}: {}", &code[..60]);
    }
    let (_cm, run) = standard();
    assert_eq!(
        value(&exec_ts(&run.run, &concat).await)
            .as_u64()
            .map(|n| n > 3_000),
        Some(true)
    );
    assert!(value(&exec_ts(&run.run, &nested).await).as_u64().is_some());
}

/// A realistic TypeScript cell of about `size` bytes.
fn realistic(size: usize) -> String {
    let mut code = String::from("const out: number[] = [];\n");
    let mut i = 0;
    while code.len() < size {
        code.push_str(&format!(
            "interface Row{i} {{ id: number; name: string; tags?: string[] }}\n\
             function pick{i}(rows: Row{i}[], min: number): Row{i}[] {{\n  \
             // keep rows above the minimum, with their tags\n  \
             return rows.filter((r: Row{i}) => r.id > min && r.name !== \"x{i}\").map((r) => ({{ ...r, tags: r.tags ?? [] }}));\n}}\n\
             out.push(pick{i}([{{ id: {i}, name: `row ${{{i}}}` }}], {i} - 1).length as number);\n"
        ));
        i += 1;
    }
    code.push_str("return out.length;\n");
    code
}

#[tokio::test]
async fn a_realistic_500_kb_cell_runs_in_both_languages() {
    let (_cm, run) = standard();
    let ts = realistic(500 << 10);
    let rows = ts.matches("out.push").count() as u64;
    assert_eq!(value(&exec_ts(&run.run, &ts).await), json!(rows));
    let js = talon_codemode::typescript::strip_types(&ts).unwrap();
    assert_eq!(value(&exec(&run.run, &js).await), json!(rows));
}

#[tokio::test]
async fn oversized_sources_are_refused_first() {
    let (_cm, run) = standard();
    let over = format!("return 1;{}", " ".repeat(DEFAULT_MAX_SOURCE_BYTES));
    for language in ["javascript", "typescript"] {
        for key in ["code", "command"] {
            let result = run
                .run
                .exec("call_1", json!({key: over.clone(), "language": language}))
                .await;
            let (error, code) = failure(&result);
            assert_eq!(code, Some("invalid_input"), "{language} {key}: {error}");
            assert!(
                error.contains("maxSourceBytes")
                    && error.contains(&DEFAULT_MAX_SOURCE_BYTES.to_string()),
                "{error}"
            );
            assert!(error.len() < 400, "the message does not quote the source");
        }
    }
    // Checked before the language, the module check and the strip.
    let hostile = format!(
        "import('x'); enum E {{}} {}",
        "(".repeat(DEFAULT_MAX_SOURCE_BYTES)
    );
    let (_, code) = failure(
        &run.run
            .exec("call_1", json!({"code": hostile, "language": "cobol"}))
            .await,
    );
    assert_eq!(code, Some("invalid_input"));
    // At the cap exactly, it runs.
    let at = format!("return 1;{}", " ".repeat(DEFAULT_MAX_SOURCE_BYTES - 9));
    assert_eq!(at.len(), DEFAULT_MAX_SOURCE_BYTES);
    assert_eq!(value(&exec(&run.run, &at).await), json!(1));
    assert_eq!(value(&exec_ts(&run.run, &at).await), json!(1));
}

#[test]
fn the_configured_cap_applies() {
    let mut config = config();
    config.max_source_bytes = 4096;
    let ok = json!({"code": format!("return 1;{}", " ".repeat(4096 - 9))});
    assert!(ExecInput::parse_for(&ok, &config).is_ok());
    let over = json!({"code": format!("return 1;{}", " ".repeat(4096 - 8))});
    let e = ExecInput::parse_for(&over, &config).unwrap_err();
    assert_eq!(e.code.as_str(), "invalid_input");
    assert!(e.message.contains("4096 bytes"), "{}", e.message);
    let e = ExecInput::parse_with_limit(&over, &[Language::JavaScript], 100).unwrap_err();
    assert!(e.message.contains("100 bytes"), "{}", e.message);
}

#[test]
fn input_checks_are_linear_on_hostile_text() {
    // Scanners over a source at the cap: nothing recurses or blows up.
    let cap = DEFAULT_MAX_SOURCE_BYTES;
    for unit in [
        "(",
        "`${",
        "{",
        "[",
        "/*",
        "'",
        "<",
        "a.",
        "/(/ ",
        "\u{2028}(",
        "é",
    ] {
        let code = unit.repeat(cap / unit.len());
        let _ = talon_codemode::module_access(&code);
        let _ = talon_codemode::shell_command(&code);
        let _ = nesting_estimate(&code, MAX_NESTING);
        for language in ["javascript", "typescript"] {
            let args = json!({"code": code, "language": language});
            if let Ok(input) =
                ExecInput::parse(&args, &[Language::JavaScript, Language::TypeScript])
                && language == "typescript"
                && ["(", "`${", "{", "[", "<", "a.", "\u{2028}("].contains(&unit)
            {
                assert_eq!(
                    input.javascript().unwrap_err().code.as_str(),
                    "typescript_transform_failed",
                    "{unit}"
                );
            }
        }
    }
}

/// Inputs a review found to hide nesting from the estimate (each would
/// build a syntax tree far deeper than the strip thread's stack allows):
/// the estimate must see their depth. Only the estimate runs here, never
/// SWC, so a regression fails the test instead of aborting it.
#[test]
fn misreadings_that_would_hide_nesting_are_counted() {
    let deep =
        |open: &str, close: &str, n: usize| format!("{}1{}", open.repeat(n), close.repeat(n));
    let parens = deep("(", ")", 3_000);
    let mut hidden = vec![
        // Tagged-template chains.
        format!("return f{}", "``".repeat(5_000)),
        // Keywords used as property names before a `/`.
        format!("return a.return/{parens}/1"),
        format!("return a.if(0)/{parens}/1"),
        format!("return a?.delete/{parens}/1"),
        format!("return a.typeof/{}/1", "+1".repeat(3_000)),
        // Characters Rust and SWC classify differently before a `/`.
        format!("return a\u{FEFF}/{parens}/1"),
        format!("return a\u{200B}/{parens}/1"),
        format!("return a\u{0301}/{parens}/1"),
        format!("return (\u{FEFF}/{parens}/1)"),
        // A backslash-CRLF line continuation inside a string.
        format!("const x = 'a\\\r\n' + {parens}; return x"),
        // A line comment ended by U+2028 or U+2029.
        format!("//x\u{2028}return {parens}"),
        format!("//x\u{2029}return {parens}"),
        // Statement chains split by commas across nested blocks.
        format!(
            "{}{}",
            format!("a=>{{{}x,", "if(a)".repeat(500)).repeat(10),
            "}".repeat(10)
        ),
        format!(
            "{}{}",
            format!("a=>{{{}x,", "L:".repeat(500)).repeat(10),
            "}".repeat(10)
        ),
        format!(
            "{}{}",
            format!("a=>{{{}x,", "while(a)".repeat(500)).repeat(10),
            "}".repeat(10)
        ),
        // Regular expressions that could hide operators.
        format!("return a.return/{}/1", "typeof ".repeat(3_000)),
    ];
    hidden.push(format!("return a.new/{}/1", "!".repeat(3_000)));
    for code in &hidden {
        let estimate = nesting_estimate(code, usize::MAX);
        assert!(
            estimate > MAX_NESTING,
            "estimate {estimate} for {:?}...",
            &code[..code.floor_char_boundary(60)]
        );
    }
}

/// The scanner skips HTML-like comments (`<!--`, line-leading `-->`) only
/// because SWC reads them as comments too: a cell that is valid only if they
/// are comments strips cleanly.
#[test]
fn html_like_comments_are_comments_to_swc() {
    for code in ["return 1 <!-- )))", "const a = 1;\n--> )))\nreturn a"] {
        assert!(
            talon_codemode::typescript::strip_types(code).is_ok(),
            "{code:?}"
        );
    }
}
