//! An `ssh` environment through the gateway, against a real OpenSSH server
//! on 127.0.0.1 (host key pinned, client key from an admin-named secret):
//! the run's commands run on the host, in its workspace there, and what
//! they change comes back to the gateway's copy, the diff and the
//! artifacts; no model call is made from the host.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use talon_gateway::{EnvironmentPolicy, SecretSource, SshHost};
use talon_mock_model::{Replay, Script, Turn};
use talon_testing::sshd::Sshd;

use super::environments::call;
use super::{Options, TestGateway, tool_turn};

#[tokio::test]
async fn an_ssh_environments_commands_run_on_its_host_and_their_changes_come_back() {
    let sshd = Sshd::start().unwrap();
    let sources = tempfile::tempdir().unwrap();
    let root = sources.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("app")).unwrap();
    std::fs::write(root.join("app/a.txt"), "hello\n").unwrap();
    let remote = tempfile::Builder::new()
        .prefix("talon-gw-ssh-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let host: SshHost = serde_json::from_value(json!({
        "host": sshd.host(), "port": sshd.port(), "user": sshd.user(),
        "hostKey": sshd.host_public_key(), "identity": {"secret": "BUILD_KEY"},
        "workdir": remote.path(),
    }))
    .unwrap();
    let script = Script {
        turns: vec![
            tool_turn(
                "exec",
                json!({"command": "pwd; echo built > out.txt; cat a.txt"}),
            ),
            Turn {
                text: Some("Built.".into()),
                ..Turn::default()
            },
        ],
        replay: Replay::PerRun,
        ..Script::default()
    };
    let g = TestGateway::start_opts(Options {
        script,
        config: json!({"tools": {"approvals": "allow"}}),
        environments: EnvironmentPolicy {
            source_roots: vec![root.clone()],
            secrets: BTreeMap::from([(
                "BUILD_KEY".to_owned(),
                SecretSource::File(sshd.client_key_path().to_path_buf()),
            )]),
            ..EnvironmentPolicy::default()
        },
        ssh_hosts: BTreeMap::from([("build".to_owned(), host)]),
        ..Options::default()
    })
    .await;
    let created = call(
        &g,
        "environments.create",
        json!({"provider": "ssh", "settings": {"host": "build", "source": {"path": root.join("app")}}}),
    )
    .await
    .unwrap();
    assert_eq!(
        (&created["provider"], &created["status"]),
        (&json!("ssh"), &json!("ready")),
        "{created}"
    );
    let run = call(
        &g,
        "runs.create",
        json!({"input": "build", "environmentId": created["id"]}),
    )
    .await
    .unwrap();
    let result = call(
        &g,
        "runs.wait",
        json!({"runId": run["runId"], "timeoutMs": 30_000}),
    )
    .await
    .unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    let events = call(&g, "runs.events", json!({"runId": run["runId"]}))
        .await
        .unwrap();
    let exec: &Value = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool.call.completed")
        .unwrap();
    let stdout = exec["data"]["result"]["stdout"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut lines = stdout.lines();
    // It ran in the host's workspace, under the admin's workdir.
    let pwd = lines.next().unwrap_or_default();
    assert!(pwd.starts_with(remote.path().to_str().unwrap()), "{exec}");
    assert_eq!(lines.next(), Some("hello"), "{exec}");
    // Its file came back to the gateway's copy.
    let workspace = std::path::PathBuf::from(created["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workspace.join("out.txt")).unwrap(),
        "built\n"
    );
    // The model was asked twice, by the gateway; the host made no call.
    assert_eq!(g.mock.requests().len(), 2);
    let deleted = call(
        &g,
        "environments.delete",
        json!({"environmentId": created["id"]}),
    )
    .await
    .unwrap();
    assert_eq!(deleted["status"], "deleted");
    assert_eq!(
        std::fs::read_dir(remote.path()).unwrap().count(),
        0,
        "the host's workspace is removed"
    );
}
