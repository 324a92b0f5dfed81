//! The sandbox sections: how their keys become the policy the sandbox
//! enforces (defaults, OpenClaw's keys, an agent's own over the defaults
//! key by key), and what `config check` says of them.

use talon_config::Config;
use talon_config::check::{Diagnostic, check};
use talon_config::model::SandboxSection;
use talon_jail::{Limits, Mode, Network, Policy, Scope, WorkspaceAccess};

fn sections(text: &str) -> (SandboxSection, Vec<Option<SandboxSection>>) {
    let config = Config::parse(text, None).unwrap();
    let agents = &config.document().unwrap().agents;
    let mut merged: Vec<Option<SandboxSection>> = vec![None; agents.list.len()];
    for (i, _, _, section) in agents.own_sandboxes() {
        merged[i] = Some(section);
    }
    (agents.default_sandbox(), merged)
}

fn findings(text: &str) -> Vec<String> {
    let config = Config::parse(text, None).unwrap();
    check(&config).iter().map(Diagnostic::to_string).collect()
}

#[test]
fn an_absent_section_is_the_default_policy() {
    let (base, _) = sections("{}");
    assert_eq!(base.policy().unwrap(), Policy::default());
}

#[test]
fn openclaw_keys_are_read_or_noted_and_an_agent_overrides_key_by_key() {
    let text = "{agents: {
        defaults: {sandbox: {mode: 'non-main', scope: 'agent', workspaceAccess: 'none',
                             docker: {image: 'openclaw-sandbox'}, limits: {processes: 64}}},
        list: [{id: 'a', sandbox: {network: 'host', limits: {openFiles: 99}}}, {id: 'b'}]}}";
    let (base, agents) = sections(text);
    let own = agents[0].as_ref().unwrap().policy().unwrap();
    assert_eq!(
        own,
        Policy {
            mode: Mode::NonMain,
            scope: Scope::Agent,
            workspace_access: WorkspaceAccess::None,
            network: Network::Host,
            allow_hosts: Vec::new(),
            limits: Limits {
                processes: 64,
                open_files: 99,
                ..Limits::default()
            },
        }
    );
    assert_eq!(agents[1], None);
    assert_eq!(base.policy().unwrap().network, Network::Off);
    assert_eq!(
        findings(text),
        [
            "2:30: note[not_used]: agents.defaults.sandbox.mode: mode \"non-main\": Talon sandboxes every command (as \"all\"); \"off\" is the only unsandboxed mode",
            "3:30: note[not_used]: agents.defaults.sandbox.docker: OpenClaw's key; Talon does not read it (ignored)",
        ]
    );
}

#[test]
fn what_the_sandbox_cannot_enforce_is_an_error_at_its_key() {
    let hosts: Vec<String> = (0..=talon_jail::MAX_ALLOW_HOSTS)
        .map(|i| format!("'h{i}.test:443'"))
        .collect();
    let cases = [
        (
            "{agents: {defaults: {sandbox: {limits: {processes: 2}}}}}".to_owned(),
            "error[bad_value]: agents.defaults.sandbox.limits.processes: 2 is out of range: expected a whole number from 8 to 65536",
        ),
        (
            "{agents: {defaults: {sandbox: {mode: 'sometimes'}}}}".to_owned(),
            "error[bad_value]: agents.defaults.sandbox.mode: `sometimes` is not one of `all`, `non-main`, `off`",
        ),
        (
            "{agents: {defaults: {sandbox: {network: 'allow', allowHosts: ['a.test:443', 'c.test']}}}}".to_owned(),
            "agents.defaults.sandbox.allowHosts[1]: \"c.test\" has no port: write host:port (api.example.com:443)",
        ),
        (
            format!("{{agents: {{defaults: {{sandbox: {{allowHosts: [{}]}}}}}}}}", hosts.join(",")),
            "agents.defaults.sandbox.allowHosts: expected at most 256 items, found 257",
        ),
        (
            "{agents: {defaults: {sandbox: {mode: 'off'}}, list: [{id: 'a', sandbox: {network: 'allow', allowHosts: ['a.test:443']}}]}}".to_owned(),
            "error[bad_value]: agents.list[0].sandbox.network: \"allow\" needs the sandbox, and mode is \"off\" (unsandboxed commands get \"off\" or \"host\")",
        ),
    ];
    for (text, expected) in cases {
        let found = findings(&text);
        assert!(
            found.len() == 1 && found[0].contains(expected),
            "{text}: {found:#?}"
        );
        let refused = Config::parse(&text, None).unwrap().check_at_start();
        assert!(refused.is_err(), "{text}");
    }
}

#[test]
fn an_allow_list_that_allows_nothing_is_a_warning_where_it_is_set() {
    let text = "{agents: {defaults: {sandbox: {network: 'allow', allowHosts: ['a.test:443']}},
                list: [{id: 'a', sandbox: {allowHosts: []}}, {id: 'b', sandbox: {limits: {processes: 9}}}]}}";
    let (_, agents) = sections(text);
    let narrowed = agents[0].as_ref().unwrap().policy().unwrap();
    assert_eq!(narrowed.effective_network(), Network::Off);
    assert_eq!(
        findings(text),
        [
            "warning[bad_value]: agents.list[0].sandbox.network: network \"allow\" with no allowHosts: commands get no network (as \"off\")"
        ]
    );
}
