//! The policy as the config gives it: defaults, OpenClaw's keys,
//! per-agent overrides, bounds, and what the host reports.

use pretty_assertions::assert_eq;
use serde_json::json;
use talon_jail::{Jail, Limits, Mode, Network, Policy, Scope, WorkspaceAccess};

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
        (json!({"network": "allow"}), "agents.defaults.sandbox"),
    ];
    for (value, path) in cases {
        let err = Policy::from_value(Some(&value), None, "agents.defaults.sandbox").unwrap_err();
        assert_eq!(err.path, path, "{value}: {err}");
    }
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
