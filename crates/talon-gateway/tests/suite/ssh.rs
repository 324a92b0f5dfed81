//! An `ssh` environment through the gateway, against a real OpenSSH server
//! on 127.0.0.1 (host key pinned, client key from an admin-named secret):
//! the run's commands run on the host, in its workspace there, and what
//! they change comes back to the gateway's copy, the diff and the
//! artifacts; no model call is made from the host.

use std::collections::BTreeMap;

use serde_json::json;
use talon_gateway::{EnvironmentPolicy, SecretSource, SshHost};
use talon_testing::sshd::Sshd;

use super::env_support::{
    completed_call, create_environment, delete_environment, read, run_events, run_to_end_in,
    workspace_of,
};
use super::{Options, TestGateway, call_then_say};

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
    let script = call_then_say(
        "exec",
        json!({"command": "pwd; echo built > out.txt; cat a.txt"}),
        "Built.",
    );
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
    let created = create_environment(
        &g,
        "ssh",
        json!({"host": "build", "source": {"path": root.join("app")}}),
    )
    .await
    .unwrap();
    assert_eq!(
        (&created["provider"], &created["status"]),
        (&json!("ssh"), &json!("ready")),
        "{created}"
    );
    let (run_id, result) = run_to_end_in(&g, &created["id"], "build").await;
    assert_eq!(result["status"], "completed", "{result}");
    let events = run_events(&g, &run_id).await;
    let exec = completed_call(&events);
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
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "out.txt"), "built\n");
    // The model was asked twice, by the gateway; the host made no call.
    assert_eq!(g.mock.requests().len(), 2);
    let deleted = delete_environment(&g, &created["id"]).await;
    assert_eq!(deleted["status"], "deleted");
    assert_eq!(
        std::fs::read_dir(remote.path()).unwrap().count(),
        0,
        "the host's workspace is removed"
    );
}
