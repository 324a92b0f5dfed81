//! The contract between the sandbox's prelude (`src/js/base.js`) and the
//! host (`talon_sandbox::contract`): every host function the prelude
//! captures is one the host installs and dispatches, and no other; the
//! print streams it uses are the host's; the guest functions that register
//! and install a prelude's API have the names the host uses. A change on
//! one side without the other fails here: the static tests read the
//! prelude's text, the behavioural ones run it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use talon_protocol::{ConsoleOutput, OutputStream};
use talon_sandbox::contract::{
    BASE_HOST_FUNCTIONS, INSTALL_API_FN, NOW_FN, PRINT_FN, PRINT_STREAMS, RANDOM_FN,
    REGISTER_API_FN,
};
use talon_sandbox::{Prelude, Sandbox, SandboxConfig, VmOptions, install_api};

use super::{TEST_KEY, fail, run, vm};

/// The prelude's text, exactly as the image builder embeds it.
const BASE_JS: &str = include_str!("../../src/js/base.js");

/// The source without its full-line comments (which name the host
/// functions in prose).
fn code(src: &str) -> String {
    src.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every `OBJ.__name` the code mentions, by form: the names read into a
/// `const` (captured) and the names deleted.
fn captured_and_deleted(code: &str, object: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut captured = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    let member = format!("{object}.__");
    for line in code.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix(&format!("delete {object}.")) {
            deleted.insert(ident(rest).to_owned());
        } else if let Some((_, rhs)) = line
            .strip_prefix("const ")
            .and_then(|l| l.split_once(" = "))
            && let Some(rest) = rhs.strip_prefix(&member)
        {
            captured.insert(format!("__{}", ident(rest)));
        }
    }
    (captured, deleted)
}

/// The names of `defineProperty(globalThis, "NAME", ...)` that start with
/// `__` (the prelude's own guest functions).
fn defined_guest_functions(code: &str) -> BTreeSet<String> {
    code.split("defineProperty(globalThis, \"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or_default().to_owned())
        .filter(|name| name.starts_with("__"))
        .collect()
}

/// The first argument of every `print(` call (not `xprint(`).
fn print_args(code: &str) -> BTreeSet<String> {
    code.match_indices("print(")
        .filter(|(at, _)| {
            !code[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
        })
        .map(|(at, pat)| {
            let rest = &code[at + pat.len()..];
            rest[..rest.find([',', ')']).unwrap_or(rest.len())]
                .trim()
                .to_owned()
        })
        .collect()
}

/// `console`'s methods and the stream number each one's writer prints to
/// (`log: writer(1)`).
fn console_streams(code: &str) -> BTreeMap<String, u32> {
    code.lines()
        .filter_map(|line| {
            let (method, rest) = line.trim().split_once(": writer(")?;
            let number = rest.split(')').next()?.parse().ok()?;
            Some((method.to_owned(), number))
        })
        .collect()
}

fn stream_of(number: u32) -> Option<OutputStream> {
    PRINT_STREAMS
        .iter()
        .find(|(n, _)| *n == number)
        .map(|(_, stream)| *stream)
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn contract_base_prelude_captures_exactly_the_base_host_functions() {
    let code = code(BASE_JS);
    let (captured, deleted) = captured_and_deleted(&code, "globalThis");
    let host = names(&BASE_HOST_FUNCTIONS);
    assert_eq!(
        host,
        names(&[PRINT_FN, RANDOM_FN, NOW_FN]),
        "BASE_HOST_FUNCTIONS lists the three"
    );
    assert_eq!(captured, host, "base.js captures every base host function");
    // It hides each one it captures, and the installer removes itself.
    let mut hidden = host.clone();
    hidden.insert(INSTALL_API_FN.to_owned());
    assert_eq!(deleted, hidden);
}

#[test]
fn contract_base_prelude_defines_the_register_and_install_functions() {
    assert_eq!(
        defined_guest_functions(&code(BASE_JS)),
        names(&[REGISTER_API_FN, INSTALL_API_FN])
    );
    // The host's installer script calls the function base.js defines.
    let script = install_api("x", &json!(null));
    assert!(
        script.starts_with(&format!("{INSTALL_API_FN}(")),
        "{script}"
    );
}

#[test]
fn contract_print_streams_are_distinct_and_base_js_uses_stdout_and_stderr() {
    let numbers: BTreeSet<u32> = PRINT_STREAMS.iter().map(|(n, _)| *n).collect();
    let streams: Vec<OutputStream> = PRINT_STREAMS.iter().map(|(_, s)| *s).collect();
    assert_eq!(numbers.len(), PRINT_STREAMS.len(), "numbers are distinct");
    for stream in [
        OutputStream::Stdout,
        OutputStream::Stderr,
        OutputStream::Text,
        OutputStream::Json,
    ] {
        assert_eq!(
            streams.iter().filter(|s| **s == stream).count(),
            1,
            "{stream:?} has exactly one number"
        );
    }

    let code = code(BASE_JS);
    // base.js prints only through its writers, whose numbers are these.
    assert_eq!(print_args(&code), names(&["stream"]));
    let console = console_streams(&code);
    assert_eq!(
        console.keys().map(String::as_str).collect::<Vec<_>>(),
        ["debug", "error", "info", "log", "warn"]
    );
    for (method, number) in &console {
        let expected = match method.as_str() {
            "log" | "info" | "debug" => OutputStream::Stdout,
            _ => OutputStream::Stderr,
        };
        assert_eq!(stream_of(*number), Some(expected), "console.{method}");
    }
}

#[test]
fn contract_base_prelude_runs_on_the_host_functions_and_hides_them() {
    let mut vm = vm();
    let probe = format!(
        "console.log('o'); console.error('e'); \
         const r = Math.random(); const t = performance.now(); \
         return [typeof r, r >= 0 && r < 1, typeof t, typeof {PRINT_FN}, typeof {RANDOM_FN}, \
                 typeof {NOW_FN}, typeof {REGISTER_API_FN}, typeof {INSTALL_API_FN}]"
    );
    assert_eq!(
        run(&mut vm, &probe),
        json!([
            "number",
            true,
            "number",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "function"
        ])
    );
    assert_eq!(
        vm.take_output(),
        vec![
            ConsoleOutput {
                stream: OutputStream::Stdout,
                text: "o\n".into()
            },
            ConsoleOutput {
                stream: OutputStream::Stderr,
                text: "e\n".into()
            },
        ]
    );
}

/// A sandbox whose one prelude captures the print host function (as
/// surfaces' preludes do) and, once installed, exposes it raw.
fn probe_sandbox() -> Sandbox {
    let source = format!(
        "(() => {{ const print = globalThis.{PRINT_FN}; delete globalThis.{PRINT_FN}; \
         globalThis.{REGISTER_API_FN}('contract-probe', function install(arg) {{ \
           globalThis.rawPrint = print; globalThis.installedWith = arg; }}); }})()"
    );
    Sandbox::new(SandboxConfig {
        preludes: vec![Prelude {
            name: "contract-probe".into(),
            source,
            host_functions: vec![PRINT_FN.into()],
        }],
        snapshot_key: Some(TEST_KEY),
        ..SandboxConfig::default()
    })
    .expect("a prelude can capture print and register its API")
}

#[test]
fn contract_every_print_stream_number_reaches_its_stream() {
    let sandbox = probe_sandbox();
    assert!(sandbox.has_prelude("contract-probe"));
    let mut vm = sandbox
        .create_vm(VmOptions::default(), Default::default())
        .unwrap();
    // Before the installer runs, only it is there.
    assert_eq!(
        run(
            &mut vm,
            &format!("return [typeof {INSTALL_API_FN}, typeof {REGISTER_API_FN}, typeof rawPrint]")
        ),
        json!(["function", "undefined", "undefined"])
    );
    vm.eval(&install_api("contract-probe", &json!({"a": 1})))
        .unwrap();
    let calls: String = PRINT_STREAMS
        .iter()
        .map(|(n, _)| format!("rawPrint({n}, 's{n}');"))
        .collect();
    assert_eq!(
        run(
            &mut vm,
            &format!("{calls} return [installedWith, typeof {INSTALL_API_FN}]")
        ),
        json!([{"a": 1}, "undefined"])
    );
    let expected: Vec<ConsoleOutput> = PRINT_STREAMS
        .iter()
        .map(|(n, stream)| ConsoleOutput {
            stream: *stream,
            text: format!("s{n}"),
        })
        .collect();
    assert_eq!(vm.take_output(), expected);
    // One API per VM: the installer is gone.
    let error = fail(
        &mut vm,
        &format!("{INSTALL_API_FN}('contract-probe', null)"),
    );
    assert!(error.to_string().contains("not defined"), "{error}");
}

#[test]
fn contract_installing_an_unknown_api_is_refused() {
    let mut vm = vm();
    let error = vm
        .eval(&install_api("no-such-api", &json!(null)))
        .unwrap_err();
    assert!(
        error.to_string().contains("no guest API named no-such-api"),
        "{error}"
    );
}
