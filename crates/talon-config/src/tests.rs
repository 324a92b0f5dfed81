//! Unit tests of the crate root: the store section, the config file
//! locator and loading.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use super::*;
use crate::model::{CodeModeSection, CodeModeSetting};

#[test]
fn the_store_section_and_the_database_url() {
    let config = Config::parse(
        "{ store: { url: 'postgres://db/talon', retention: { maxAgeDays: 1.5, maxEvents: 1000, artifactMaxAgeDays: 0.5 } } }",
        None,
    )
    .unwrap();
    assert_eq!(
        config.store_with(None).unwrap(),
        StoreSettings {
            url: Some("postgres://db/talon".into()),
            max_event_age: Some(std::time::Duration::from_secs(129_600)),
            max_events: Some(1000),
            max_artifact_age: Some(std::time::Duration::from_secs(43_200)),
        }
    );
    // The environment wins; an empty one does not count.
    let from_env = config.store_with(Some("sqlite:/tmp/x.db".into())).unwrap();
    assert_eq!(from_env.url.as_deref(), Some("sqlite:/tmp/x.db"));
    let blank = config.store_with(Some(" ".into())).unwrap();
    assert_eq!(blank.url.as_deref(), Some("postgres://db/talon"));
    assert_eq!(
        Config::default().store_with(None).unwrap(),
        StoreSettings::default()
    );
    for (text, key) in [
        ("{ store: { url: 5 } }", "store.url"),
        ("{ store: { url: '' } }", "store.url"),
        (
            "{ store: { retention: { maxAgeDays: -1 } } }",
            "store.retention.maxAgeDays",
        ),
        (
            "{ store: { retention: { artifactMaxAgeDays: 40000 } } }",
            "store.retention.artifactMaxAgeDays",
        ),
        (
            "{ store: { retention: { maxEvents: 0 } } }",
            "store.retention.maxEvents",
        ),
        (
            "{ store: { retention: { maxEvents: 'many' } } }",
            "store.retention.maxEvents",
        ),
    ] {
        match Config::parse(text, None).unwrap().store_with(None) {
            Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn json5_with_comments_trailing_commas_and_agent_overrides() {
    let config = Config::parse(
        "// OpenClaw config\n{ tools: { codeMode: { enabled: true, timeoutMs: 5000, }, },\n\
         agents: { defaults: { tools: { codeMode: { maxPendingToolCalls: 4 } } },\n\
                   list: [ { id: 'ops', tools: { codeMode: { timeoutMs: 100 } } } ] } }",
        None,
    )
    .unwrap();
    let document = config.document().unwrap();
    let section = |enabled, timeout_ms, max_pending_tool_calls| {
        CodeModeSetting::Settings(CodeModeSection {
            enabled,
            timeout_ms,
            max_pending_tool_calls,
            ..CodeModeSection::default()
        })
    };
    let code_mode = |agent| document.tool(agent, |t| t.code_mode.as_ref());
    assert_eq!(
        code_mode("ops"),
        (
            Some(&section(Some(true), Some(5000), None)),
            Some(&section(None, Some(100), None))
        )
    );
    assert_eq!(code_mode("main").1, Some(&section(None, None, Some(4))));
    assert_eq!(
        document.tool("ops", |t| t.tool_search.as_ref()),
        (None, None)
    );
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json5");
    assert!(matches!(Config::read(&missing), Err(ConfigError::NotFound(p)) if p == missing));
    let bad = dir.path().join("bad.json5");
    std::fs::write(&bad, "{ tools: ").unwrap();
    let error = Config::read(&bad).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("config file {}: ", bad.display())),
        "{error}"
    );
    std::fs::write(&bad, "[1, 2]").unwrap();
    assert!(
        Config::read(&bad)
            .unwrap_err()
            .to_string()
            .ends_with("the top level must be an object")
    );
    let good = dir.path().join("good.json5");
    std::fs::write(&good, "{tools: {codeMode: true}}").unwrap();
    assert_eq!(
        Config::read(&good)
            .unwrap()
            .document()
            .unwrap()
            .tools
            .settings
            .code_mode,
        Some(CodeModeSetting::Switch(true))
    );
}

#[test]
fn deep_documents_parse_up_to_the_limit_and_fail_cleanly_past_it() {
    // Test threads have the 2 MiB stack of any spawned thread: the
    // deepest accepted document must parse (and drop) within it.
    for (open, close) in [("[", "]"), ("{a:", "}"), ("{\"a\": ", "}")] {
        let text = format!(
            "{{x: {}1{}}}",
            open.repeat(MAX_NESTING - 1),
            close.repeat(MAX_NESTING - 1)
        );
        assert!(Config::parse(&text, None).is_ok(), "{open}");
        for depth in [MAX_NESTING, 20_000, 1_000_000] {
            let text = format!("{{x: {}1{}}}", open.repeat(depth), close.repeat(depth));
            let error = Config::parse(&text, None).unwrap_err().to_string();
            assert_eq!(
                error,
                format!(
                    "config file <config>: line 1 column {}: nested deeper than 128 levels",
                    5 + open.len() * (MAX_NESTING - 1)
                )
            );
        }
    }
}

#[test]
fn special_and_oversized_config_files_are_refused_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json5");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let zero = dir.path().join("zero.json5");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let big = dir.path().join("big.json5");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(MAX_CONFIG_BYTES + 1).unwrap();
    let cases = [
        (
            fifo.clone(),
            format!(
                "config file {}: {}: not a regular file (FIFO)",
                fifo.display(),
                fifo.display()
            ),
        ),
        (
            zero.clone(),
            format!(
                "config file {}: {}: not a regular file (character device)",
                zero.display(),
                zero.display()
            ),
        ),
        (
            dir.path().to_owned(),
            format!(
                "config file {}: {}: not a regular file (directory)",
                dir.path().display(),
                dir.path().display()
            ),
        ),
        (
            big.clone(),
            format!(
                "config file {}: {}: larger than {MAX_CONFIG_BYTES} bytes",
                big.display(),
                big.display()
            ),
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(Config::read(&path).unwrap_err().to_string(), expected);
    }
}
