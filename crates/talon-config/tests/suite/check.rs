//! The whole-file check: what it finds, where, and the JSON Schema it
//! publishes.

use std::path::PathBuf;

use talon_config::Config;
use talon_config::check::{Code, Diagnostic, Severity, check, suggestion};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn findings(text: &str) -> Vec<String> {
    let config = Config::parse(text, None).unwrap();
    check(&config).iter().map(Diagnostic::to_string).collect()
}

#[test]
fn a_config_with_every_key_talon_reads_is_clean() {
    let config = Config::read(&fixture("every-key.json5")).unwrap();
    assert_eq!(check(&config), Vec::<Diagnostic>::new());
    assert!(config.check_at_start().is_ok());
}

#[test]
fn typos_wrong_types_and_broken_references_are_found_where_they_are() {
    let text = r#"{
  agents: {
    defualts: { model: 'local/m1' },
    list: [
      { id: 'main', model: 42 },
      { id: 'helper', model: 'lcoal/m1' },
      { id: 'helper', model: 'local/m2' },
      { name: 'no id' },
      { id: 'x', model: 'nomodel' },
    ],
  },
  models: { providers: { local: { baseUrl: 'http://127.0.0.1:9', apiKey: '${TALON_TEST_UNSET_VARIABLE}', models: [{ id: 'm1' }] } } },
  tools: { codeMode: { enabled: 'yes', mode: 'onl' }, toolSearch: 3, approvals: { rules: [{ tool: 'write', action: 'alow' }] } },
  store: { retention: { maxAgeDays: 0 } },
  gateway: { port: 18789, limits: { burst: 0, callsPerSecond: 'fast' }, runz: {} },
}"#;
    assert_eq!(
        findings(text),
        [
            "3:5: warning[unknown_key]: agents.defualts: unknown key, ignored; did you mean `defaults`?",
            "5:21: error[wrong_type]: agents.list[0].model: expected a string or an object, found a number (42)",
            "6:23: error[unknown_reference]: agents.list[1].model: provider \"lcoal\" is not in models.providers; did you mean \"local\"?",
            "7:9: error[duplicate]: agents.list[2].id: agent id \"helper\" is used twice",
            "7:23: warning[unknown_reference]: agents.list[2].model: provider \"local\" lists no model \"m2\"; did you mean \"m1\"?",
            "8:7: error[bad_value]: agents.list[3]: an agent needs an id",
            "9:18: error[bad_value]: agents.list[4].model: expected \"provider/model\", found \"nomodel\"",
            "12:66: warning[unknown_reference]: models.providers.local.apiKey: environment variable TALON_TEST_UNSET_VARIABLE is not set: runs on provider \"local\" will fail",
            "13:24: error[wrong_type]: tools.codeMode.enabled: expected true or false, found a string (\"yes\")",
            "13:40: error[bad_value]: tools.codeMode.mode: expected `only`, found `onl`",
            "13:55: error[wrong_type]: tools.toolSearch: expected true or false or an object, found a number (3)",
            "13:108: error[bad_value]: tools.approvals.rules[0].action: `alow` is not one of `ask`, `allow`, `deny`; did you mean `allow`?",
            "14:25: error[bad_value]: store.retention.maxAgeDays: 0 is out of range: expected a number above 0 and at most 36500",
            "15:14: note[not_used]: gateway.port: OpenClaw's key; Talon does not read it (ignored)",
            "15:37: error[bad_value]: gateway.limits.burst: 0 is out of range: expected a whole number from 1 to 4294967295",
            "15:47: error[wrong_type]: gateway.limits.callsPerSecond: expected a number, found a string (\"fast\")",
            "15:73: warning[unknown_key]: gateway.runz: unknown key, ignored; did you mean `runs`?",
        ]
    );
    let error = Config::parse(text, Some("talon.json5".into()))
        .unwrap()
        .check_at_start()
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("config file talon.json5: 12 errors\n  5:21: error[wrong_type]"),
        "{message}"
    );
}

#[test]
fn provider_headers_read_from_unset_variables_are_warned_of() {
    let text = r#"{ models: { providers: { p: { baseUrl: 'http://127.0.0.1:9',
    headers: { 'anthropic-beta': 'x', 'x-a': '${TALON_TEST_UNSET_VARIABLE}', 'x-b': { env: 'TALON_TEST_UNSET_VARIABLE' } } } } } }"#;
    assert_eq!(
        findings(text),
        [
            "2:39: warning[unknown_reference]: models.providers.p.headers.x-a: environment variable TALON_TEST_UNSET_VARIABLE is not set: runs on provider \"p\" will fail",
            "2:78: warning[unknown_reference]: models.providers.p.headers.x-b: environment variable TALON_TEST_UNSET_VARIABLE is not set: runs on provider \"p\" will fail",
        ]
    );
}

#[test]
fn openclaw_keys_load_with_a_note_and_null_means_unset() {
    let config = Config::parse(
        "{ channels: { telegram: { token: 1 } }, agents: { defaults: { heartbeat: {}, model: null } }, tools: { codeMode: null } }",
        None,
    )
    .unwrap();
    let found = check(&config);
    assert_eq!(
        found
            .iter()
            .map(|d| (d.severity, d.code, d.key.as_str()))
            .collect::<Vec<_>>(),
        [
            (Severity::Note, Code::NotUsed, "channels"),
            (Severity::Note, Code::NotUsed, "agents.defaults.heartbeat"),
        ]
    );
    assert!(config.check_at_start().is_ok());
}

#[test]
fn did_you_mean_takes_the_closest_word_within_a_third_of_its_length() {
    let keys = ["defaults", "list", "limits", "runs"];
    let cases = [
        ("defualts", Some("defaults")),
        ("Defaults", Some("defaults")),
        ("lsit", Some("list")),
        ("limit", Some("limits")),
        ("xyz", None),
        ("", None),
        ("completely-different", None),
    ];
    for (word, expected) in cases {
        assert_eq!(suggestion(word, keys.iter().copied()), expected, "{word}");
    }
}

#[test]
fn a_huge_config_is_checked_in_linear_time() {
    // 100,000 unknown keys: each gets its warning and the check stays fast
    // enough for a test (the did-you-mean compares against a handful).
    let body: Vec<String> = (0..100_000).map(|i| format!("k{i}: {i}")).collect();
    let text = format!("{{ agents: {{ {} }} }}", body.join(","));
    let config = Config::parse(&text, None).unwrap();
    let found = check(&config);
    assert_eq!(found.len(), 100_000);
    assert!(
        found
            .iter()
            .all(|d| d.code == Code::UnknownKey && d.position.is_some())
    );
}

#[test]
fn committed_config_schema_matches_the_declaration() {
    // Regenerate with `UPDATE_SCHEMA=1 cargo test -p talon-config`.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/talon.config.schema.json");
    let rendered =
        serde_json::to_string_pretty(&talon_config::derive_json_schema()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "schema/talon.config.schema.json is stale: run UPDATE_SCHEMA=1 cargo test -p talon-config"
    );
}

#[test]
fn the_otel_section_reads_whole_and_refuses_what_talon_cannot_export() {
    let config = Config::read(&fixture("every-key.json5")).unwrap();
    assert_eq!(
        config.otel().unwrap(),
        talon_config::OtelSettings {
            enabled: Some(true),
            endpoint: Some("http://127.0.0.1:4318".into()),
            service_name: Some("talon-test".into()),
            headers: [("x-team".to_owned(), "t1".to_owned())].into(),
            traces: Some(true),
            sample_rate: Some(0.5),
        }
    );
    let read = |text: &str| {
        Config::parse(text, None)
            .unwrap()
            .otel()
            .map_err(|e| e.to_string())
    };
    assert_eq!(read("{}"), Ok(talon_config::OtelSettings::default()));
    assert_eq!(
        read("{diagnostics: {enabled: false, otel: {enabled: true}}}").map(|s| s.enabled),
        Ok(Some(false))
    );
    assert_eq!(
        read("{diagnostics: {otel: {protocol: 'grpc'}}}"),
        Err("config key diagnostics.otel.protocol: expected `http/protobuf`, found `grpc`".into())
    );
    assert_eq!(
        read("{diagnostics: {otel: {endpoint: 'collector:4318'}}}"),
        Err("config key diagnostics.otel.endpoint: expected an http:// or https:// URL (the collector's OTLP/HTTP port, 4318)".into())
    );
    assert_eq!(
        read("{diagnostics: {otel: {sampleRate: 1.5}}}"),
        Err("config key diagnostics.otel.sampleRate: 1.5 is out of range: expected a number from 0 to 1".into())
    );
    assert_eq!(
        read("{diagnostics: {otel: {headers: {a: 1}}}}"),
        Err("config key diagnostics.otel.headers.a: expected a string, found a number (1)".into())
    );
    assert_eq!(
        findings("{diagnostics: {otel: {enabeld: true}}}"),
        [
            "1:23: warning[unknown_key]: diagnostics.otel.enabeld: unknown key, ignored; did you mean `enabled`?"
        ]
    );
}

#[test]
fn a_direct_only_list_of_the_wrong_shape_is_refused_where_it_is() {
    let text = r#"{
  tools: { directOnly: 5 },
  agents: { list: [
    { id: 'a', tools: { directOnly: [{ name: 'read' }, 'pick_color'] } },
    { id: 'b', tools: { directOnly: 'read' } },
  ] },
}"#;
    assert_eq!(
        findings(text),
        [
            "2:12: error[wrong_type]: tools.directOnly: expected an array, found a number (5)",
            "4:38: error[wrong_type]: agents.list[0].tools.directOnly[0]: expected a string, found an object",
            "5:25: error[wrong_type]: agents.list[1].tools.directOnly: expected an array, found a string (\"read\")",
        ]
    );
    // A gateway does not start on it.
    let refused = Config::parse(text, None).unwrap().check_at_start();
    assert!(refused.is_err());
}

#[test]
fn sections_whose_readers_refuse_unknown_keys_make_them_errors() {
    let text = r#"{
  tools: { approvals: { rules: [{ tol: 'exec', action: 'allow' }, { tool: 'x' }] } },
  agents: { defaults: { sandbox: { netwrok: 'host' } } },
}"#;
    assert_eq!(
        findings(text),
        [
            "2:35: error[unknown_key]: tools.approvals.rules[0].tol: unknown key: this section refuses keys it does not know; did you mean `tool`?",
            "2:67: error[bad_value]: tools.approvals.rules[1]: `action` is required",
            "3:36: error[unknown_key]: agents.defaults.sandbox.netwrok: unknown key: this section refuses keys it does not know; did you mean `network`?",
        ]
    );
}
