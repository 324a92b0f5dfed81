//! The contract between `tool_search_code`'s prelude
//! (`src/js/openclaw_tools.js`) and the host (`talon_toolsearch::code`,
//! `talon_sandbox::contract`): the host functions it captures are exactly
//! the ones a body's VM gets, all asynchronous; it defines `openclaw` and
//! nothing else; on a shared engine, a body's VM (Tool Search's own image)
//! has none of another surface's globals. A change on one side without the other fails
//! here: the static tests read the prelude's text, the behavioural ones
//! run it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::json;
use talon_sandbox::contract::PRINT_FN;
use talon_sandbox::{CellEngine, HostFunction, Prelude, SandboxConfig};
use talon_tools::ToolRunner;
use talon_toolsearch::code::{PRELUDE_FUNCTIONS, host_functions};
use talon_toolsearch::{
    CodeSandbox, Mode, PRELUDE_NAME, ToolSearch, ToolSearchConfig, build_surface, prelude,
};

use talon_testing::prelude_js::{self, calls, code, deleted, documented, literals, set};

use super::{Echo, catalog, ctx};

/// The prelude's text, as the crate embeds it.
const OPENCLAW_TOOLS_JS: &str = include_str!("../../src/js/openclaw_tools.js");
/// Code Mode's prelude, which shares the process's sandbox (in an image of
/// its own).
const CODE_MODE_JS: &str = include_str!("../../../talon-codemode/src/js/code_mode.js");

// --- reading the prelude -------------------------------------------------------

/// Host functions read into constants: name and wrapper, if any.
fn captures(code: &str) -> BTreeMap<String, Option<String>> {
    prelude_js::captures(code)
        .into_iter()
        .map(|c| (c.name, c.wrap))
        .collect()
}

// --- the static contract ---------------------------------------------------------

#[test]
fn contract_the_prelude_is_the_embedded_js_and_defines_openclaw() {
    let prelude = prelude();
    assert_eq!(prelude.name, PRELUDE_NAME);
    assert_eq!(prelude.source, OPENCLAW_TOOLS_JS);
    assert_eq!(prelude.host_functions, PRELUDE_FUNCTIONS);
    let code = code(OPENCLAW_TOOLS_JS);
    assert_eq!(literals(&code, "defineProperty(g, \""), set(["openclaw"]));
}

#[test]
fn contract_host_functions_match_both_ways_and_are_all_async() {
    let code = code(OPENCLAW_TOOLS_JS);
    let listed = set(PRELUDE_FUNCTIONS);
    assert_eq!(
        listed.len(),
        PRELUDE_FUNCTIONS.len(),
        "no name listed twice"
    );

    // Every listed name is captured raw (values cross as values, no JSON
    // text to parse) and hidden, and nothing else is.
    let captured = captures(&code);
    assert_eq!(
        set(captured.keys()),
        listed,
        "captured by openclaw_tools.js"
    );
    for name in &listed {
        assert_eq!(captured[name], None, "{name} is used as the host gives it");
    }
    let hidden = deleted(&code);
    assert_eq!(set(&hidden).len(), hidden.len(), "no name deleted twice");
    assert_eq!(set(&hidden), listed, "hidden by openclaw_tools.js");

    // A body's VM gets exactly these, each asynchronous, as documented.
    let functions = host_functions();
    assert_eq!(set(functions.names()), listed, "registered for a body");
    for name in &listed {
        assert!(
            matches!(functions.get(name), Some(HostFunction::Async)),
            "{name} is asynchronous"
        );
    }
    let documented = documented(OPENCLAW_TOOLS_JS);
    assert_eq!(set(documented.keys()), listed, "the header comment");
    assert!(
        documented.values().all(|kind| kind == "async"),
        "{documented:?}"
    );

    // Its only output is `console`: it never captures the print function.
    assert!(!captured.contains_key(PRINT_FN));
    assert_eq!(calls(&code, "print(").count(), 0);
}

// --- one engine, two surfaces ------------------------------------------------------

/// Code Mode's prelude as its crate builds it (the host functions it
/// captures installed first), and the globals it defines.
fn code_mode_prelude() -> (Prelude, BTreeSet<String>) {
    let code = code(CODE_MODE_JS);
    let host: Vec<String> = captures(&code).into_keys().collect();
    let mut globals = literals(&code, "lazyGlobal(\"");
    globals.extend(literals(&code, "fixed(g, \""));
    globals.extend(literals(&code, "defineProperty(g, \""));
    let prelude = Prelude {
        // Talon's Code Mode calls it "code-mode"; any other name will do.
        name: "code-mode".into(),
        source: CODE_MODE_JS.into(),
        host_functions: host,
    };
    (prelude, globals)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_a_body_on_a_shared_engine_sees_only_openclaw_tools() {
    let (other, other_globals) = code_mode_prelude();
    assert_ne!(other.name, PRELUDE_NAME);
    assert!(other_globals.contains("ALL_TOOLS"), "{other_globals:?}");
    assert!(
        other_globals.contains("__openclaw_setup"),
        "{other_globals:?}"
    );
    let absent: Vec<String> = other_globals
        .iter()
        .chain(&other.host_functions)
        .chain(&set(PRELUDE_FUNCTIONS))
        .cloned()
        .collect();
    let engine = CellEngine::new(SandboxConfig {
        preludes: vec![prelude(), other],
        ..SandboxConfig::default()
    })
    .unwrap();
    let sandbox = CodeSandbox::with_engine(engine).unwrap();
    let config = ToolSearchConfig {
        mode: Mode::Code,
        ..Default::default()
    };
    let catalog = catalog();
    let surface = build_surface(&catalog, Some(&config)).unwrap();
    let echo = Arc::new(Echo::default());
    let runner = Arc::new(ToolRunner::new(Arc::new(catalog), echo));
    let ts = ToolSearch::new(config, surface, runner, Some(sandbox)).unwrap();

    let probe = absent
        .iter()
        .map(|name| format!("typeof {name}"))
        .collect::<Vec<_>>()
        .join(", ");
    // Each host function answers under the name the body's API calls.
    let body = format!(
        "const hits = await openclaw.tools.search('create an issue'); \
         const tool = await openclaw.tools.describe(hits[0].id); \
         const ran = await openclaw.tools.call(tool.id, {{title: 'x'}}); \
         return [[{probe}], ran.ran];"
    );
    let out = ts
        .handle(&ctx(), "code-1", "tool_search_code", json!({"code": body}))
        .await;
    pretty_assertions::assert_eq!(
        out,
        json!({"value": [vec!["undefined"; absent.len()], "plugin:issues:create_issue"],
               "console": []}),
        "absent: {absent:?}"
    );
}
