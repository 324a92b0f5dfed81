//! The contract between Code Mode's prelude (`src/js/code_mode.js`) and
//! the host (`talon_codemode::contract`, `talon_sandbox::contract`): the
//! host functions it captures are the ones a run's VMs get, with the same
//! sync/async kinds; the data parts, `API` operations and MCP kinds it
//! asks for are the ones the host answers; it prints on the host's text
//! and json streams; it joins namespace paths with the host's separator;
//! it defines the set-up function the host calls before a fresh cell, and
//! that function removes itself. A change on one side
//! without the other fails here: the static tests read the prelude's text,
//! the behavioural ones run it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};
use talon_codemode::contract::{
    API_OPS, DATA_PARTS, MCP_KINDS, PATH_SEPARATOR, PRELUDE_NAME, SETUP_FN, host_functions, prelude,
};
use talon_codemode::{
    CodeMode, CodeModeOptions, NamespaceRegistration, NamespaceRegistry, ScopeValue,
    create_code_mode_namespace_tool,
};
use talon_protocol::{CodeModeOutput, CodeModeResult, OutputStream};
use talon_sandbox::contract::{BASE_HOST_FUNCTIONS, PRINT_FN, PRINT_STREAMS};
use talon_sandbox::{CellEngine, HostFunction, Prelude, SandboxConfig};

use talon_testing::prelude_js::{
    self, captures, code, deleted, first_args, literals, set, unescape,
};

use super::*;

/// The prelude's text, as the crate embeds it.
const CODE_MODE_JS: &str = include_str!("../../src/js/code_mode.js");
/// Tool Search's prelude, which shares the process's sandbox (in an image of
/// its own).
const OPENCLAW_TOOLS_JS: &str = include_str!("../../../talon-toolsearch/src/js/openclaw_tools.js");

// --- reading the prelude -------------------------------------------------------

/// The host functions the header comment documents, with their kind.
fn documented(src: &str) -> BTreeMap<String, Kind> {
    prelude_js::documented(src)
        .into_iter()
        .filter_map(|(name, kind)| match kind.as_str() {
            "sync" => Some((name, Kind::Sync)),
            "async" => Some((name, Kind::Async)),
            _ => None,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sync,
    Async,
}

/// How the prelude treats each captured host function: `sync(...)` and
/// `async(...)` wrappers, or a raw capture that is awaited
/// (`apply(then, VAR(...))`) or called for its value.
fn js_kinds(code: &str) -> BTreeMap<String, Kind> {
    captures(code)
        .into_iter()
        .map(|c| {
            let kind = match c.wrap.as_deref() {
                Some("sync") => Kind::Sync,
                Some("async") => Kind::Async,
                Some(other) => panic!("unknown wrapper {other} of {}", c.name),
                None if code.contains(&format!("apply(then, {}(", c.var)) => Kind::Async,
                None => Kind::Sync,
            };
            (c.name, kind)
        })
        .collect()
}

fn rust_kind(function: &HostFunction) -> Kind {
    match function {
        HostFunction::Sync(_) => Kind::Sync,
        HostFunction::Async => Kind::Async,
    }
}

/// The host function the prelude reads into `var`.
fn captured_as(var: &str) -> String {
    captures(&code(CODE_MODE_JS))
        .into_iter()
        .find(|c| c.var == var)
        .unwrap_or_else(|| panic!("code_mode.js captures no {var}"))
        .name
}

fn stream_of(number: &str) -> Option<OutputStream> {
    let number: u32 = number.parse().ok()?;
    PRINT_STREAMS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|(_, stream)| *stream)
}

// --- the static contract ---------------------------------------------------------

#[test]
fn contract_the_prelude_is_the_embedded_js_and_defines_the_set_up_function() {
    let prelude = prelude();
    assert_eq!(prelude.name, PRELUDE_NAME);
    assert_eq!(prelude.source, CODE_MODE_JS);
    let code = code(CODE_MODE_JS);
    // The only global it defines directly is the set-up function, which
    // removes itself; the seed's globals go through lazyGlobal/fixedGlobal.
    assert_eq!(literals(&code, "defineProperty(g, \""), set([SETUP_FN]));
    assert_eq!(
        code.matches(&format!("delete g.{SETUP_FN};")).count(),
        1,
        "the set-up function removes itself"
    );
}

#[tokio::test]
async fn contract_host_functions_match_both_ways_with_their_kinds() {
    let code = code(CODE_MODE_JS);
    let listed = prelude().host_functions;
    let listed_set = set(&listed);
    assert_eq!(listed_set.len(), listed.len(), "no name listed twice");

    // Every listed name is captured and hidden, and nothing else is.
    let captured = set(captures(&code).into_iter().map(|c| c.name));
    assert_eq!(captured, listed_set, "captured by code_mode.js");
    let hidden = deleted(&code);
    assert_eq!(set(&hidden).len(), hidden.len(), "no name deleted twice");
    let mut expected = listed_set.clone();
    expected.insert(SETUP_FN.to_owned());
    assert_eq!(set(&hidden), expected, "hidden by code_mode.js");

    // The VM of a run gets exactly the listed functions (print is the
    // sandbox's own), with the kind the prelude treats each as.
    let (_cm, run) = standard();
    let functions = host_functions(&run.run);
    assert!(BASE_HOST_FUNCTIONS.contains(&PRINT_FN));
    let mut registered = set(functions.names());
    registered.insert(PRINT_FN.to_owned());
    assert_eq!(registered, listed_set, "registered by the bridge");
    let kinds = js_kinds(&code);
    assert_eq!(set(kinds.keys()), listed_set);
    for (name, kind) in &kinds {
        let rust = match functions.get(name) {
            Some(function) => rust_kind(function),
            // The sandbox dispatches print synchronously.
            None if name == PRINT_FN => Kind::Sync,
            None => panic!("{name} is not registered"),
        };
        assert_eq!(*kind, rust, "{name}: the prelude and the bridge disagree");
    }
    // The header comment documents the same kinds.
    assert_eq!(documented(CODE_MODE_JS), kinds);
}

#[tokio::test]
async fn contract_data_parts_api_ops_and_mcp_kinds_are_the_hosts() {
    let code = code(CODE_MODE_JS);
    assert_eq!(literals(&code, "data(\""), set(DATA_PARTS));
    assert_eq!(literals(&code, "api(\""), set(API_OPS));
    assert_eq!(literals(&code, "mcp(server.name, \""), set(MCP_KINDS));

    // The bridge answers each data part and API operation (and refuses
    // others), under the names the prelude captures.
    let (_cm, run) = standard();
    let functions = host_functions(&run.run);
    let sync = |name: &str, args: &[Value]| match functions.get(name) {
        Some(HostFunction::Sync(f)) => f(args),
        other => panic!("{name} is not synchronous: {other:?}"),
    };
    let data = captured_as("data");
    for part in DATA_PARTS {
        let text = sync(&data, &[json!(part)]).unwrap_or_else(|e| panic!("{part}: {e}"));
        let parsed: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
        assert!(parsed.is_object() || parsed.is_array(), "{part}: {parsed}");
    }
    assert!(sync(&data, &[json!("secrets")]).is_err());
    let api = captured_as("api");
    let unknown = sync(&api, &[json!("delete"), json!("x")]).unwrap_err();
    assert_eq!(unknown.message, "unknown API operation");
    let listed = sync(&api, &[json!("list"), Value::Null]).unwrap();
    let listed: Value = serde_json::from_str(listed.as_str().unwrap()).unwrap();
    let path = listed[0]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("API.list: {listed}"))
        .to_owned();
    for op in API_OPS {
        sync(&api, &[json!(op), json!(path)]).unwrap_or_else(|e| panic!("{op} {path}: {e}"));
    }

    // Each MCP kind the prelude sends is one the bridge maps to a call.
    let result = exec(
        &run.run,
        r#"const tool = await MCP.docs.searchDocs({query: "x"});
           const resource = await MCP.docs.resources.read({uri: "memo://one"});
           const prompt = await MCP.docs.prompts.get({name: "p", arguments: {topic: "t"}});
           return [tool.tool, resource.contents[0].text, prompt.messages[0].content.text];"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!(["mcp:docs:search_docs", "first memo", "p: t"])
    );
}

#[tokio::test]
async fn contract_text_and_json_print_on_the_hosts_streams() {
    let code = code(CODE_MODE_JS);
    assert_eq!(set(first_args(&code, "print")), set(["3", "4"]));
    for (function, stream) in [("text", OutputStream::Text), ("json", OutputStream::Json)] {
        let body = &code[code
            .find(&format!("function {function}("))
            .unwrap_or_else(|| panic!("no function {function}"))..];
        let number = &first_args(body, "print")[0];
        assert_eq!(
            stream_of(number),
            Some(stream),
            "{function}() prints on {number}"
        );
    }

    let (_cm, run) = standard();
    let result = exec(
        &run.run,
        "text('a'); json({b: 1}); console.log('c'); text('d'); return null;",
    )
    .await;
    let CodeModeResult::Completed { output, .. } = result else {
        panic!("{result:#?}")
    };
    assert_eq!(
        output,
        vec![
            CodeModeOutput::Text { text: "a".into() },
            CodeModeOutput::Json {
                value: json!({"b": 1})
            },
            CodeModeOutput::Text { text: "c\n".into() },
            CodeModeOutput::Text { text: "d".into() },
        ]
    );
}

#[tokio::test]
async fn contract_namespace_paths_are_joined_with_the_path_separator() {
    let code = code(CODE_MODE_JS);
    let separators: BTreeSet<String> = code
        .split(".join(\"")
        .skip(1)
        .map(|rest| unescape(&rest[..rest.find('"').expect("a closing quote")]))
        .collect();
    assert_eq!(separators, set([PATH_SEPARATOR.to_string()]));

    // A nested member crosses as its path joined with the separator.
    let registry = Arc::new(NamespaceRegistry::new());
    registry
        .register(
            "github",
            NamespaceRegistration {
                id: "github-nested".into(),
                global_name: "Gh".into(),
                description: "Nested helpers.".into(),
                required_tool_names: vec!["github_list_issues".into()],
                prompt: None,
                create_scope: Arc::new(|_| {
                    ScopeValue::Object(vec![(
                        "issues".into(),
                        ScopeValue::Object(vec![(
                            "list".into(),
                            create_code_mode_namespace_tool("github_list_issues", None),
                        )]),
                    )])
                }),
            },
        )
        .unwrap();
    let cm = code_mode(memory_store(), registry);
    let run = start(&cm, RunOptions::default());
    let joined = format!("issues{PATH_SEPARATOR}list");
    let ns = &run.run.namespaces().visible[0];
    assert_eq!(set(ns.callables.keys()), set([&joined]));
    let (id, _) = run
        .run
        .namespaces()
        .resolve("github-nested", &joined, &[])
        .unwrap();
    assert_eq!(id, "plugin:github:github_list_issues");
    let result = exec(&run.run, "return (await Gh.issues.list({})).tool;").await;
    assert_eq!(value(&result), json!("plugin:github:github_list_issues"));
}

// --- one engine, two surfaces ------------------------------------------------------

/// Tool Search's prelude as its crate builds it: the host functions it
/// captures are the ones it needs installed.
fn openclaw_tools_prelude() -> (Prelude, BTreeSet<String>, BTreeSet<String>) {
    let code = code(OPENCLAW_TOOLS_JS);
    let host = set(captures(&code).into_iter().map(|c| c.name));
    let globals = literals(&code, "defineProperty(g, \"");
    let prelude = Prelude {
        // Talon's Tool Search calls it "openclaw-tools"; any other name will do.
        name: "openclaw-tools".into(),
        source: OPENCLAW_TOOLS_JS.into(),
        host_functions: host.iter().cloned().collect(),
    };
    (prelude, host, globals)
}

#[tokio::test]
async fn contract_a_cell_on_a_shared_engine_sees_only_code_modes_api() {
    let (other, other_host, other_globals) = openclaw_tools_prelude();
    assert_ne!(other.name, PRELUDE_NAME);
    assert!(!other_globals.is_empty() && !other_host.is_empty());
    let engine = CellEngine::new(SandboxConfig {
        preludes: vec![prelude(), other],
        ..SandboxConfig::default()
    })
    .unwrap();
    let cm = CodeMode::with_engine(
        engine,
        CodeModeOptions {
            sandbox: SandboxConfig::default(),
            store: memory_store(),
            namespaces: Arc::new(NamespaceRegistry::new()),
        },
    )
    .unwrap();
    let run = start(&cm, RunOptions::default());
    let absent: Vec<String> = other_globals
        .iter()
        .chain(&other_host)
        .chain(prelude().host_functions.iter())
        .map(String::as_str)
        .chain([SETUP_FN])
        .map(str::to_owned)
        .collect();
    let probe = absent
        .iter()
        .map(|name| format!("typeof {name}"))
        .collect::<Vec<_>>()
        .join(", ");
    let result = exec(
        &run.run,
        &format!("return [[{probe}], typeof ALL_TOOLS, typeof tools.search, typeof text];"),
    )
    .await;
    assert_eq!(
        value(&result),
        json!([
            vec!["undefined"; absent.len()],
            "object",
            "function",
            "function"
        ]),
        "absent: {absent:?}"
    );
}
