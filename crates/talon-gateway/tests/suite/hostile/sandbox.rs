//! Shell commands through the gateway (`tools.invoke` of `exec`, the
//! run's one execution path, approved by policy) trying to reach past the
//! command sandbox: the admin token and the store in the state directory,
//! `/etc/shadow`, another workspace, the gateway's process, environment
//! and port, writes outside the workspace, links out, mounts, DNS, and
//! floods of processes, memory and disk. Each is contained: the command
//! fails or finds nothing, says so to the model, and the gateway, its
//! state and the host are untouched.

use serde_json::{Value, json};

use super::super::{Options, TestGateway};

/// Every command prints this only if its attack worked.
const ESCAPED: &str = "ESCAPED";

async fn gateway() -> TestGateway {
    let g = TestGateway::start_opts(Options {
        config: json!({
            "tools": {"approvals": "allow"},
            "agents": {"defaults": {"sandbox": {"limits": {
                "processes": 64, "memoryBytes": 268_435_456, "fileSizeBytes": 8_388_608,
                "tmpBytes": 8_388_608, "cpuSeconds": 20
            }}}}
        }),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    g
}

/// Runs `command` through `tools.invoke`; the tool's result.
async fn exec(g: &TestGateway, command: &str) -> Value {
    let answer = g
        .client
        .post(g.url("/v1/tools.invoke"))
        .bearer_auth(&g.admin)
        .json(
            &json!({"tool": "exec", "arguments": {"command": command, "timeoutMs": 30_000},
                      "sessionKey": "hostile-sandbox"}),
        )
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let body: Value = answer.json().await.unwrap();
    assert!(status.is_success(), "{command}: {status} {body}");
    body
}

#[tokio::test]
async fn commands_cannot_reach_the_gateway_its_state_or_the_host() {
    let g = gateway().await;
    let state = g.dir.path().display().to_string();
    let token_file = g.dir.path().join("admin.token");
    std::fs::write(&token_file, &g.admin).unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("secret.txt"), "other workspace").unwrap();
    let other = other.path().display().to_string();
    let pid = std::process::id();
    let port = g.running.addr.port();
    let attacks = [
        format!("cat {state}/admin.token && echo {ESCAPED}"),
        // The workspace's parents exist (empty, to hold its mount point):
        // nothing else of the state directory.
        format!("ls -A {state} | grep -vx workspace | grep -q . && echo {ESCAPED}; true"),
        format!("cat {state}/*.db* >/dev/null 2>&1 && echo {ESCAPED}"),
        format!("cat /etc/shadow && echo {ESCAPED}"),
        format!("cat {other}/secret.txt && echo {ESCAPED}"),
        format!("kill -9 {pid} && echo {ESCAPED}"),
        format!("cat /proc/{pid}/environ && echo {ESCAPED}"),
        format!("grep -a -l TALON /proc/[0-9]*/environ && echo {ESCAPED}"),
        format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo {ESCAPED}"),
        // Lands, if anywhere, in the sandbox's own /tmp (the test's state
        // directory is under /tmp): the host's is checked below.
        format!("touch {state}/pwned; true"),
        format!("ln -s {state}/admin.token link && cat link && echo {ESCAPED}"),
        format!("ln {state}/admin.token hard && echo {ESCAPED}"),
        format!("mount -t tmpfs none /mnt && echo {ESCAPED}"),
        format!("getent hosts localhost6 example.com >/dev/null && echo {ESCAPED}"),
        format!("unshare -U true && echo {ESCAPED}"),
        // Floods, each bounded by the sandbox's limits.
        format!(
            "(i=0; while [ $i -lt 500 ]; do sleep 60 & i=$((i+1)); done) 2>/dev/null; set -- /proc/[0-9]*; [ $# -gt 64 ] && echo {ESCAPED}; true"
        ),
        format!("perl -e '$x = \"a\" x (1 << 30)' 2>/dev/null && echo {ESCAPED}; true"),
        format!("dd if=/dev/zero of=big bs=1M count=64 2>/dev/null && echo {ESCAPED}; true"),
        format!("dd if=/dev/zero of=/tmp/big bs=1M count=64 2>/dev/null && echo {ESCAPED}; true"),
    ];
    for attack in &attacks {
        let answer = exec(&g, attack).await;
        let text = answer.to_string();
        assert!(
            !text.contains(&format!("{ESCAPED}\\n")),
            "{attack}: {answer}"
        );
        assert!(!text.contains(&g.admin), "{attack}: {answer}");
    }
    // The gateway is alive and its state untouched.
    let health = g.client.get(g.url("/healthz")).send().await.unwrap();
    assert_eq!(
        (health.status().as_u16(), health.text().await.unwrap()),
        (200, "ok\nsandbox: bubblewrap (network off)\n".to_owned())
    );
    assert!(!g.dir.path().join("pwned").exists());
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), g.admin);
    // The file-size limit held: the workspace's file stopped at 8 MiB.
    let big = g.dir.path().join("workspace").join("big");
    assert_eq!(std::fs::metadata(big).unwrap().len(), 8 << 20);
}

#[tokio::test]
async fn the_unsandboxed_mode_runs_commands_and_healthz_says_so() {
    // The admin's unsandboxed mode: commands run, and /healthz says so.
    let g = TestGateway::start_opts(Options {
        config: json!({"tools": {"approvals": "allow"},
                       "agents": {"defaults": {"sandbox": {"mode": "off", "network": "host"}}}}),
        ..Options::default()
    })
    .await;
    std::fs::create_dir_all(g.dir.path().join("workspace")).unwrap();
    let health = g.client.get(g.url("/healthz")).send().await.unwrap();
    assert_eq!(
        health.text().await.unwrap(),
        "ok\nsandbox: off (commands run unsandboxed: agents.defaults.sandbox.mode is \"off\")\n"
    );
    let answer = exec(&g, "echo unsandboxed").await;
    assert!(answer.to_string().contains("unsandboxed\\n"), "{answer}");
}
