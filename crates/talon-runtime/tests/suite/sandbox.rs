//! The sandbox's part in building a run: OpenClaw's tool policy for
//! sandboxed runs (`tools.sandbox.tools`) over `tools.allow`/`deny`, which
//! the unsandboxed mode leaves out, and each agent's jail read once.

use talon_config::Config;
use talon_protocol::ToolSource;
use talon_tools::policy::PolicySubject;

/// Which of the core tools `config`'s policy lets agent `main` use.
fn allowed(config: &str) -> Vec<&'static str> {
    let config = Config::parse(config, None).unwrap();
    let policy = talon_runtime::policy(&config, "main").unwrap();
    ["read", "write", "edit", "list", "grep", "exec"]
        .into_iter()
        .filter(|name| {
            policy.allows(PolicySubject {
                name,
                id: &format!("openclaw:core:{name}"),
                source: ToolSource::Openclaw,
            })
        })
        .collect()
}

#[test]
fn the_sandbox_tool_policy_narrows_sandboxed_runs_only() {
    assert_eq!(
        allowed("{tools: {sandbox: {tools: {deny: ['exec']}}}}"),
        ["read", "write", "edit", "list", "grep"]
    );
    assert_eq!(
        allowed(
            "{tools: {allow: ['read', 'write', 'grep'], sandbox: {tools: {allow: ['read'], alsoAllow: ['grep']}}}}"
        ),
        ["read", "grep"]
    );
    // An agent's own section wins over the global one.
    assert_eq!(
        allowed(
            "{tools: {sandbox: {tools: {deny: ['exec']}}},
              agents: {list: [{id: 'main', tools: {sandbox: {tools: {deny: ['write']}}}}]}}"
        ),
        ["read", "edit", "list", "grep", "exec"]
    );
    // Unsandboxed runs are not sandboxed runs.
    assert_eq!(
        allowed(
            "{tools: {sandbox: {tools: {deny: ['exec']}}}, agents: {defaults: {sandbox: {mode: 'off'}}}}"
        ),
        ["read", "write", "edit", "list", "grep", "exec"]
    );
}

#[test]
fn a_bad_sandbox_section_is_an_error_naming_its_key() {
    let config = Config::parse(
        "{agents: {defaults: {sandbox: {limits: {processes: 1}}}}}",
        None,
    )
    .unwrap();
    assert_eq!(
        talon_runtime::Jails::from_config(&config)
            .unwrap_err()
            .to_string(),
        "config key agents.defaults.sandbox.limits.processes: 1 is out of range: expected a whole number from 8 to 65536"
    );
    let config = Config::parse("{tools: {sandbox: {tools: {deny: 'exec'}}}}", None).unwrap();
    assert_eq!(
        talon_runtime::policy(&config, "main")
            .unwrap_err()
            .to_string(),
        "config key tools.sandbox.tools.deny: expected an array, found a string (\"exec\")"
    );
}
