//! The policy the sandbox enforces: its defaults, what its check refuses,
//! the allow list's entries, narrowing, and what the host reports (how
//! the config's keys become a policy is talon-config's `sandbox` suite).

use pretty_assertions::assert_eq;
use serde_json::json;
use talon_jail::{
    AllowHost, Jail, Limits, MAX_ALLOW_HOSTS, Mode, Network, Policy, Scope, WorkspaceAccess,
};

#[test]
fn the_default_policy_sandboxes_every_command_with_no_network() {
    let policy = Policy::default();
    assert_eq!(policy.check(), Ok(()));
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
fn a_policy_built_in_code_is_checked_for_what_its_types_cannot_say() {
    let allow = |mode: Mode, hosts: usize| Policy {
        mode,
        network: Network::Allow,
        allow_hosts: (0..hosts)
            .map(|i| format!("h{i}.test:443").parse().unwrap())
            .collect(),
        ..Policy::default()
    };
    let limits = |limits: Limits| Policy {
        limits,
        ..Policy::default()
    };
    let cases = [
        (Policy::default(), None),
        (allow(Mode::All, MAX_ALLOW_HOSTS), None),
        (
            allow(Mode::All, MAX_ALLOW_HOSTS + 1),
            Some((
                "allowHosts",
                "257 entries, at most 256 (use a wildcard, *.example.com:443)",
            )),
        ),
        (
            allow(Mode::Off, 1),
            Some((
                "network",
                "\"allow\" needs the sandbox, and mode is \"off\" (unsandboxed commands get \"off\" or \"host\")",
            )),
        ),
        (
            limits(Limits {
                processes: 2,
                ..Limits::default()
            }),
            Some(("limits.processes", "2 is out of range (from 8 to 65536)")),
        ),
        (
            limits(Limits {
                memory_bytes: 1,
                ..Limits::default()
            }),
            Some((
                "limits.memoryBytes",
                "1 is out of range (at least 16777216)",
            )),
        ),
    ];
    for (policy, expected) in cases {
        let found = policy.check().err().map(|e| (e.key(), e.to_string()));
        let expected = expected.map(|(key, message)| (key.to_owned(), message.to_owned()));
        assert_eq!(found, expected, "{policy:?}");
    }
}

#[test]
fn allow_hosts_are_read_entry_by_entry() {
    let entries = [
        "API.example.com:443",
        "*.pypi.org:443",
        "localhost:8080",
        "[::1]:80",
    ];
    let read: Vec<String> = entries
        .iter()
        .map(|e| e.parse::<AllowHost>().unwrap().to_string())
        .collect();
    assert_eq!(
        read,
        [
            "api.example.com:443",
            "*.pypi.org:443",
            "localhost:8080",
            "[::1]:80"
        ]
    );
    let refused: Vec<String> = ["c.test", "*.com:443"]
        .iter()
        .map(|e| e.parse::<AllowHost>().unwrap_err())
        .collect();
    assert_eq!(
        refused,
        [
            "\"c.test\" has no port: write host:port (api.example.com:443)",
            "\"*.com:443\": a wildcard needs a name of at least two labels after \"*.\" (*.example.com)",
        ]
    );
    // An empty list allows nothing: the network is off.
    let none = Policy {
        network: Network::Allow,
        ..Policy::default()
    };
    assert_eq!(none.effective_network(), Network::Off);
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
