//! The contract between the sandbox's prelude (`src/js/base.js`) and the
//! host (`talon_sandbox::contract`): every host function the prelude
//! captures is one the host installs and dispatches, and no other, and it
//! leaves no guest function of its own behind; the print streams it uses
//! are the host's; a surface prelude's API is in its own image and no
//! other. A change on one side without the other fails here: the static
//! tests read the prelude's text, the behavioural ones run it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use talon_protocol::{ConsoleOutput, OutputStream};
use talon_sandbox::contract::{BASE_HOST_FUNCTIONS, NOW_FN, PRINT_FN, PRINT_STREAMS, RANDOM_FN};
use talon_sandbox::{Prelude, Sandbox, SandboxConfig, SandboxError, VmOptions};

use super::{TEST_KEY, run, vm};

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
    // It hides each one it captures.
    assert_eq!(deleted, host);
}

#[test]
fn contract_base_prelude_defines_no_guest_function_of_its_own() {
    assert_eq!(defined_guest_functions(&code(BASE_JS)), BTreeSet::new());
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
                 typeof {NOW_FN}]"
    );
    assert_eq!(
        run(&mut vm, &probe),
        json!([
            "number",
            true,
            "number",
            "undefined",
            "undefined",
            "undefined"
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

/// The probe prelude's name.
const PROBE: &str = "contract-probe";

/// A sandbox whose one prelude captures the print host function (as
/// surfaces' preludes do) and exposes it raw as `rawPrint`.
fn probe_sandbox() -> Sandbox {
    let source = format!(
        "(() => {{ const print = globalThis.{PRINT_FN}; delete globalThis.{PRINT_FN}; \
         globalThis.rawPrint = print; }})()"
    );
    Sandbox::new(SandboxConfig {
        preludes: vec![Prelude {
            name: PROBE.into(),
            source,
            host_functions: vec![PRINT_FN.into()],
        }],
        snapshot_key: Some(TEST_KEY),
        ..SandboxConfig::default()
    })
    .expect("a prelude can capture print")
}

fn in_image(prelude: &str) -> VmOptions {
    VmOptions {
        prelude: Some(prelude.into()),
        ..VmOptions::default()
    }
}

#[test]
fn contract_every_print_stream_number_reaches_its_stream() {
    let sandbox = probe_sandbox();
    assert!(sandbox.has_prelude(PROBE));
    let mut vm = sandbox
        .create_vm(in_image(PROBE), Default::default())
        .unwrap();
    let calls: String = PRINT_STREAMS
        .iter()
        .map(|(n, _)| format!("rawPrint({n}, 's{n}');"))
        .collect();
    assert_eq!(
        run(&mut vm, &format!("{calls} return typeof {PRINT_FN}")),
        json!("undefined")
    );
    let expected: Vec<ConsoleOutput> = PRINT_STREAMS
        .iter()
        .map(|(n, stream)| ConsoleOutput {
            stream: *stream,
            text: format!("s{n}"),
        })
        .collect();
    assert_eq!(vm.take_output(), expected);
}

#[test]
fn contract_a_preludes_api_is_only_in_its_own_image() {
    let sandbox = probe_sandbox();
    let mut bare = sandbox
        .create_vm(VmOptions::default(), Default::default())
        .unwrap();
    assert_eq!(
        run(
            &mut bare,
            &format!("return [typeof rawPrint, typeof {PRINT_FN}]")
        ),
        json!(["undefined", "undefined"])
    );
    // A snapshot restores only into the image it was made from.
    let snapshot = bare.snapshot().unwrap();
    let error = sandbox
        .restore_vm(&snapshot, in_image(PROBE), Default::default())
        .unwrap_err();
    assert!(
        matches!(&error, SandboxError::SnapshotInvalid(m) if m.contains("another module or base image")),
        "{error:?}"
    );
    let mut probe = sandbox
        .create_vm(in_image(PROBE), Default::default())
        .unwrap();
    let snapshot = probe.snapshot().unwrap();
    assert!(matches!(
        sandbox.restore_vm(&snapshot, VmOptions::default(), Default::default()),
        Err(SandboxError::SnapshotInvalid(_))
    ));
    let mut restored = sandbox
        .restore_vm(&snapshot, in_image(PROBE), Default::default())
        .unwrap();
    assert_eq!(
        run(&mut restored, "return typeof rawPrint"),
        json!("function")
    );
}

#[test]
fn contract_a_vm_of_an_unknown_prelude_is_refused() {
    let sandbox = probe_sandbox();
    let error = sandbox
        .create_vm(in_image("no-such-api"), Default::default())
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no prelude named \"no-such-api\""),
        "{error}"
    );
}

#[test]
fn contract_two_preludes_with_one_name_are_refused() {
    let prelude = Prelude {
        name: PROBE.into(),
        source: "1".into(),
        host_functions: vec![],
    };
    let error = Sandbox::new(SandboxConfig {
        preludes: vec![prelude.clone(), prelude],
        snapshot_key: Some(TEST_KEY),
        ..SandboxConfig::default()
    })
    .unwrap_err();
    assert!(error.to_string().contains("two preludes named"), "{error}");
}
