//! Each rule written once: the fakes word no refusal and count no cap
//! themselves. Every error the Rust fake (`talon-sdk-testing`) and the
//! TypeScript fake (`@talon/sdk-testing`) answer with comes from the
//! protocol's refusal table (`talon_protocol::gateway::refusals`, generated
//! into `@talon/sdk` as `refusals`), and their caps from
//! `talon_protocol::gateway::caps`; the one exception in each is the
//! failure a test scripts (`FakeRun::fail(code, message)`), whose words are
//! the test's (marked so on its line). A transport detail of one runtime
//! that no server declares (how much of a refused body Node drains) says
//! "not a protocol cap" on its line.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources(dir: &Path, ext: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}", dir.display());
    out
}

/// The lines of `sources` matching `bad`, as `file:line: text`.
fn offending(sources: &[(String, String)], bad: &regex::Regex) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in sources {
        for (i, line) in text.lines().enumerate() {
            let exempt = line.contains("the test's words") || line.contains("not a protocol cap");
            if bad.is_match(line) && !exempt {
                found.push(format!("{name}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_typescript_fake_words_no_refusal_itself() {
    let fake = sources(
        &root().join("sdk/typescript/packages/sdk-testing/src/fake"),
        "ts",
    );
    // An error code or a message written out, a `Failure` of a literal,
    // or a cap as a bare number.
    let bad = regex::Regex::new(
        r#"code: "|retryable: (true|false)|(fail|Failure)\(\s*[`"']|const (MAX|METADATA|DEFAULT)_[A-Z_]+ = [0-9]"#,
    )
    .unwrap();
    assert_eq!(offending(&fake, &bad), Vec::<String>::new());
}

#[test]
fn the_rust_fake_words_no_refusal_itself() {
    let fake = sources(&root().join("crates/talon-sdk-testing/src"), "rs");
    let bad = regex::Regex::new(
        r"ApiError::new\(|const (MAX|METADATA|DEFAULT)_[A-Z_]+: [a-z0-9]+ = [0-9]",
    )
    .unwrap();
    assert_eq!(offending(&fake, &bad), Vec::<String>::new());
}
