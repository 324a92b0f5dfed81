//! `mcp.servers` parsing, secrets and the child's environment.

use std::time::Duration;

use serde_json::json;
use talon_mcp::config::{INHERITED_ENV, child_env, is_hook_variable};
use talon_mcp::{McpError, SecretSource, Transport, servers_from_json};

#[test]
fn servers_parse_in_openclaws_shape_with_defaults() {
    let servers = servers_from_json(&json!({
        "github": {"command": "npx", "args": ["-y", "@mcp/github"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "cwd": "/srv"},
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": {"env": "REMOTE_TOKEN"}},
                   "connectionTimeoutMs": 5000, "requestTimeoutMs": 1000, "enabled": false},
        "eager": {"command": "node", "connectOnStart": true, "someOpenClawKey": 1},
    }))
    .unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["eager", "github", "remote"]);
    let github = &servers[1];
    assert!(github.enabled && !github.connect_on_start);
    assert_eq!(github.connection_timeout, Duration::from_secs(30));
    assert_eq!(github.request_timeout, Duration::from_secs(60));
    match &github.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            assert_eq!(
                (command.as_str(), args.len(), cwd.as_deref()),
                ("npx", 2, Some(std::path::Path::new("/srv")))
            );
            assert_eq!(
                env["GITHUB_TOKEN"],
                SecretSource::Env("GITHUB_TOKEN".into())
            );
        }
        other => panic!("{other:?}"),
    }
    let remote = &servers[2];
    assert!(!remote.enabled);
    assert_eq!(
        (remote.connection_timeout, remote.request_timeout),
        (Duration::from_secs(5), Duration::from_secs(1))
    );
    assert!(servers[0].connect_on_start);
    assert!(
        servers_from_json(&serde_json::Value::Null)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bad_values_are_invalid_config_naming_the_field() {
    let cases = [
        (json!([]), "mcp.servers"),
        (json!({"x": {}}), "mcp.servers.x"),
        (
            json!({"x": {"command": "a", "url": "http://b"}}),
            "mcp.servers.x",
        ),
        (json!({"x": {"command": 3}}), "mcp.servers.x.command"),
        (
            json!({"x": {"command": "a", "args": "not a list"}}),
            "mcp.servers.x.args",
        ),
        (
            json!({"x": {"command": "a", "env": {"K": [1]}}}),
            "mcp.servers.x.env.K",
        ),
        (json!({"x": {"url": "ftp://host"}}), "mcp.servers.x.url"),
        (
            json!({"x": {"command": "a", "requestTimeoutMs": 0}}),
            "mcp.servers.x.requestTimeoutMs",
        ),
        (
            json!({"x": {"command": "a", "enabled": "yes"}}),
            "mcp.servers.x.enabled",
        ),
        (json!({"a:b": {"command": "a"}}), "mcp.servers.a:b"),
    ];
    for (value, field) in cases {
        match servers_from_json(&value) {
            Err(McpError::Config { field: got, .. }) => assert_eq!(got, field, "{value}"),
            other => panic!("{value}: {other:?}"),
        }
    }
}

#[test]
fn secrets_resolve_from_the_environment_and_never_show() {
    let lookup = |name: &str| (name == "TOKEN").then(|| "s3cr3t-value".to_owned());
    let source = SecretSource::Env("TOKEN".into());
    let secret = source.resolve("f", &lookup).unwrap();
    assert_eq!(secret.expose(), "s3cr3t-value");
    assert_eq!(format!("{secret:?} {source:?}"), "<redacted> ${TOKEN}");
    let template = servers_from_json(
        &json!({"x": {"url": "http://h", "headers": {"Authorization": "Bearer ${TOKEN}"}}}),
    )
    .unwrap();
    let Transport::Http { headers, .. } = &template[0].transport else {
        panic!()
    };
    assert_eq!(
        headers["Authorization"]
            .resolve("f", &lookup)
            .unwrap()
            .expose(),
        "Bearer s3cr3t-value"
    );
    assert!(!format!("{template:?}").contains("Bearer"));
    let missing = SecretSource::Env("NOPE".into())
        .resolve("mcp.servers.x.env.K", &lookup)
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "invalid_config: mcp.servers.x.env.K: environment variable NOPE is not set"
    );
}

#[test]
fn hook_variables_are_dropped_and_the_gateway_environment_is_not_inherited() {
    for name in [
        "LD_PRELOAD",
        "ld_library_path",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "BASH_FUNC_x%%",
        "PERL5OPT",
        "JAVA_TOOL_OPTIONS",
    ] {
        assert!(is_hook_variable(name), "{name}");
    }
    assert!(!is_hook_variable("GITHUB_TOKEN"));
    let configured = servers_from_json(&json!({"x": {"command": "a", "env": {
        "LD_PRELOAD": "/evil.so", "NODE_OPTIONS": "--require /evil.js", "GOOD": "${TOKEN}", "PLAIN": "1"}}}))
    .unwrap();
    let Transport::Stdio { env, .. } = &configured[0].transport else {
        panic!()
    };
    let lookup = |name: &str| match name {
        "TOKEN" => Some("t".to_owned()),
        "PATH" => Some("/usr/bin".to_owned()),
        "GATEWAY_SECRET" => Some("do not pass".to_owned()),
        _ => None,
    };
    let child: Vec<(String, String)> = child_env("x", env, &lookup)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.expose().to_owned()))
        .collect();
    assert_eq!(
        child,
        [("GOOD", "t"), ("PATH", "/usr/bin"), ("PLAIN", "1")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    assert!(INHERITED_ENV.contains(&"PATH") && !INHERITED_ENV.contains(&"GATEWAY_SECRET"));
}
