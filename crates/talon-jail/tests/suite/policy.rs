//! The policy as the config gives it: defaults, OpenClaw's keys,
//! per-agent overrides, bounds, and what the host reports.

use pretty_assertions::assert_eq;
use serde_json::json;
use talon_jail::{Jail, Limits, MAX_ALLOW_HOSTS, Mode, Network, Policy, Scope, WorkspaceAccess};

#[test]
fn an_absent_section_is_every_command_sandboxed_with_no_network() {
    let policy = Policy::from_value(None, None, "agents.defaults.sandbox").unwrap();
    assert_eq!(policy, Policy::default());
    assert_eq!(
        (
            policy.mode,
            policy.scope,
            policy.workspace_access,
            policy.network
        ),
        (Mode::All, Scope::Session, WorkspaceAccess::Rw, Network::Off)
    );
    assert_eq!(policy.limits, Limits::default());
}

#[test]
fn openclaw_keys_are_read_or_reported_and_an_agent_overrides_key_by_key() {
    let defaults = json!({"mode": "non-main", "scope": "agent", "workspaceAccess": "ro",
                          "docker": {"image": "openclaw-sandbox"}, "limits": {"processes": 64}});
    let own = json!({"network": "host", "limits": {"openFiles": 99}});
    let policy = Policy::from_value(Some(&own), Some(&defaults), "agents.list[0].sandbox").unwrap();
    assert_eq!(
        (
            policy.mode,
            policy.scope,
            policy.workspace_access,
            policy.network
        ),
        (
            Mode::NonMain,
            Scope::Agent,
            WorkspaceAccess::Ro,
            Network::Host
        )
    );
    assert_eq!(
        (policy.limits.processes, policy.limits.open_files),
        (64, 99)
    );
    assert_eq!(
        policy.ignored_keys(),
        [
            "docker: OpenClaw's container setting; Talon's sandbox has no containers and does not read it",
            "mode \"non-main\": Talon sandboxes every command (as \"all\"); \"off\" is the only unsandboxed mode"
        ]
    );
}

#[test]
fn bad_values_name_their_key() {
    let cases = [
        (json!({"mode": "sometimes"}), "agents.defaults.sandbox"),
        (
            json!({"limits": {"processes": 2}}),
            "agents.defaults.sandbox.limits.processes",
        ),
        (json!({"limits": {"bogus": 1}}), "agents.defaults.sandbox"),
        (
            json!({"netwrok": "host"}),
            "agents.defaults.sandbox.netwrok",
        ),
        (json!({"network": "sometimes"}), "agents.defaults.sandbox"),
    ];
    for (value, path) in cases {
        let err = Policy::from_value(Some(&value), None, "agents.defaults.sandbox").unwrap_err();
        assert_eq!(err.path, path, "{value}: {err}");
    }
}

#[test]
fn the_allow_list_is_read_entry_by_entry_and_errors_name_the_entry() {
    let value = json!({"network": "allow",
                       "allowHosts": ["API.example.com:443", "*.pypi.org:443", "localhost:8080", "[::1]:80"]});
    let policy = Policy::from_value(Some(&value), None, "agents.defaults.sandbox").unwrap();
    assert_eq!(
        (policy.network, policy.effective_network()),
        (Network::Allow, Network::Allow)
    );
    assert_eq!(
        serde_json::to_value(&policy.allow_hosts).unwrap(),
        json!([
            "api.example.com:443",
            "*.pypi.org:443",
            "localhost:8080",
            "[::1]:80"
        ])
    );
    let too_many: Vec<String> = (0..=MAX_ALLOW_HOSTS)
        .map(|i| format!("h{i}.test:443"))
        .collect();
    let cases = [
        (
            json!({"network": "allow", "allowHosts": ["a.test:443", "b.test:80", "c.test"]}),
            "agents.defaults.sandbox.allowHosts[2]: \"c.test\" has no port: write host:port (api.example.com:443)",
        ),
        (
            json!({"allowHosts": ["*.com:443"]}),
            "agents.defaults.sandbox.allowHosts[0]: \"*.com:443\": a wildcard needs a name of at least two labels after \"*.\" (*.example.com)",
        ),
        (
            json!({"allowHosts": ["a.test:443", 7]}),
            "agents.defaults.sandbox.allowHosts[1]: expected a \"host:port\" string",
        ),
        (
            json!({"allowHosts": "a.test:443"}),
            "agents.defaults.sandbox.allowHosts: expected an array of \"host:port\" strings",
        ),
        (
            json!({"allowHosts": too_many}),
            "agents.defaults.sandbox.allowHosts: 257 entries, at most 256 (use a wildcard, *.example.com:443)",
        ),
        (
            json!({"mode": "off", "network": "allow", "allowHosts": ["a.test:443"]}),
            "agents.defaults.sandbox.network: \"allow\" needs the sandbox, and mode is \"off\" (unsandboxed commands get \"off\" or \"host\")",
        ),
    ];
    for (value, expected) in cases {
        let err = Policy::from_value(Some(&value), None, "agents.defaults.sandbox").unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
    // An agent narrows the defaults' list to nothing: its network is off,
    // and config check says so.
    let own = json!({"allowHosts": []});
    let policy = Policy::from_value(Some(&own), Some(&value), "agents.list[0].sandbox").unwrap();
    assert_eq!(policy.effective_network(), Network::Off);
    assert_eq!(
        policy.ignored_keys(),
        ["network \"allow\" with no allowHosts: commands get no network (as \"off\")"]
    );
}

#[test]
fn a_caller_narrows_the_network_and_never_widens_it() {
    let all = [Network::Off, Network::Allow, Network::Host];
    let narrowed: Vec<Vec<Network>> = all
        .iter()
        .map(|policy| all.iter().map(|asked| policy.narrow(*asked)).collect())
        .collect();
    use Network::{Allow, Host, Off};
    assert_eq!(
        narrowed,
        [[Off, Off, Off], [Off, Allow, Allow], [Off, Allow, Host]]
    );
    assert_eq!(all.map(Network::as_str), ["off", "allow", "host"]);
}

#[test]
fn the_status_says_which_mode_is_in_force() {
    let off = Jail::new(Policy {
        mode: Mode::Off,
        ..Policy::default()
    });
    assert_eq!(
        serde_json::to_value(off.status()).unwrap(),
        json!({"mode": "off", "network": "off"})
    );
    let on = serde_json::to_value(Jail::new(Policy::default()).status()).unwrap();
    let expected_limit = if nix::unistd::Uid::effective().is_root() {
        "cgroup"
    } else {
        "rlimit"
    };
    assert_eq!(
        on,
        json!({"mode": "bubblewrap", "network": "off", "processes": expected_limit})
    );
}
