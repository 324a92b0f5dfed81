//! Shell commands through `talon agent` (the model's `exec`, approved by
//! policy) trying to reach past the command sandbox: the state directory
//! with its admin token, `/etc/shadow`, another directory of the user's,
//! the agent process's environment, the network, and every process the
//! command can signal. Each attack that works leaves a file in the
//! workspace; none may, and the agent finishes its run. Also: the
//! workspace's access modes, a host without bubblewrap (commands refused,
//! saying what is missing), and a command filling the disk.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::{MockFiles, exec_script, finish, home_with_workspace, spawn_talon};

/// Asserts that `talon agent` exited 0 printing just "Finished.": its
/// stderr.
fn finished(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        (Some(0), "Finished."),
        "{stderr}"
    );
    stderr
}

/// `talon` in a mount namespace of its own (the caller mapped to root)
/// with a private home and state directory: `sh -c shell` runs with `$0`
/// the binary and `args` after it.
fn in_mount_namespace<S: AsRef<OsStr>>(
    home: &Path,
    state: &Path,
    shell: &str,
    args: impl IntoIterator<Item = S>,
) -> Output {
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--map-root-user", "--", "/bin/sh", "-c"])
        .arg(shell)
        .arg(env!("CARGO_BIN_EXE_talon"))
        .args(args)
        .env("HOME", home)
        .env("TALON_STATE_DIR", state)
        .env_remove("TALON_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

#[test]
fn commands_the_agent_runs_cannot_reach_its_state_or_the_host() {
    let (home, workspace) = home_with_workspace();
    let h = home.path().display();
    let state = home.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("admin.token"), "tln_admin_secret").unwrap();
    std::fs::create_dir_all(home.path().join("other")).unwrap();
    std::fs::write(home.path().join("other/secret.txt"), "other").unwrap();
    let attack = |last: &str| {
        format!(
            "for f in {h}/state/admin.token /etc/shadow {h}/other/secret.txt /root/.bash_history; do \
           cat \"$f\" >/dev/null 2>&1 && touch \"ESCAPED_read_$(basename $f)\"; done; \
         grep -a -q TALON_AGENT_SECRET /proc/[0-9]*/environ 2>/dev/null && touch ESCAPED_environ; \
         ls {h}/state 2>/dev/null | grep -q . && touch ESCAPED_state; \
         getent hosts localhost6 example.com >/dev/null 2>&1 && touch ESCAPED_dns; \
         touch {h}/ESCAPED_outside 2>/dev/null; \
         {last}"
        )
    };
    let run = |command: String, config: &str| {
        let files = MockFiles::write(home.path(), &exec_script(&[&command]), config);
        let secret = home.path().join("marker");
        finished(&finish(spawn_talon(
            home.path(),
            &files.agent(&workspace, "try"),
            &[("TALON_AGENT_SECRET", &secret)],
        )));
        let mut escaped: Vec<String> = std::fs::read_dir(&workspace)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ESCAPED"))
            .collect();
        escaped.sort();
        for name in &escaped {
            std::fs::remove_file(workspace.join(name)).unwrap();
        }
        escaped
    };
    // Sandboxed: nothing, even killing every process it can signal.
    assert_eq!(
        run(attack("kill -9 -1"), "{ tools: { approvals: 'allow' } }"),
        Vec::<String>::new()
    );
    assert!(!home.path().join("ESCAPED_outside").exists());
    assert_eq!(
        std::fs::read_to_string(state.join("admin.token")).unwrap(),
        "tln_admin_secret"
    );
    // The same reads with the admin's unsandboxed mode reach the host
    // (which is what the sandbox stops; no kill here, it would reach too).
    let unsandboxed = run(
        attack("true"),
        "{ tools: { approvals: 'allow' }, agents: { defaults: { sandbox: { mode: 'off', network: 'host' } } } }",
    );
    assert!(
        unsandboxed.contains(&"ESCAPED_read_admin.token".to_owned()),
        "{unsandboxed:?}"
    );
    assert!(
        unsandboxed.contains(&"ESCAPED_state".to_owned()),
        "{unsandboxed:?}"
    );
}

#[test]
fn workspace_access_ro_and_none_are_honoured() {
    let (home, workspace) = home_with_workspace();
    std::fs::write(workspace.join("kept.txt"), "kept").unwrap();
    let run = |access: &str| {
        let files = MockFiles::write(
            home.path(),
            &serde_json::json!({"turns": [
                {"toolCalls": [{"name": "exec", "arguments": {"command": "pwd > /tmp/pwd; (touch made.txt 2>/dev/null && echo made) > /tmp/r; cat kept.txt >> /tmp/r 2>/dev/null; cat /tmp/pwd /tmp/r"}}]},
                {"toolCalls": [{"name": "write", "arguments": {"path": "written.txt", "content": "w"}}]},
                {"text": "Finished."}
            ]})
            .to_string(),
            &format!("{{ tools: {{ approvals: 'allow' }}, agents: {{ defaults: {{ sandbox: {{ workspaceAccess: '{access}', scope: 'agent' }} }} }} }}"),
        );
        let out = finish(spawn_talon(
            home.path(),
            &files.agent(&workspace, "try"),
            &[],
        ));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        stderr
    };
    // Read-only: the command reads the workspace and cannot write it; the
    // write tool refuses.
    let stderr = run("ro");
    assert!(!workspace.join("made.txt").exists(), "{stderr}");
    assert!(!workspace.join("written.txt").exists(), "{stderr}");
    assert!(stderr.contains("read-only"), "{stderr}");
    // None: a scratch workspace of the agent's under the state directory,
    // the agent's own untouched.
    run("none");
    let scratch = home.path().join("state/sandboxes/agent-main");
    assert!(scratch.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(scratch.join("written.txt")).unwrap(),
        "w"
    );
    assert!(!workspace.join("made.txt").exists() && !workspace.join("written.txt").exists());
}

/// `talon` in a mount namespace where `/usr/bin/bwrap` is `/dev/null`: a
/// host without bubblewrap.
fn without_bubblewrap(home: &Path, args: &[&str]) -> Output {
    in_mount_namespace(
        home,
        &home.join("state"),
        "mount --bind /dev/null /usr/bin/bwrap && exec \"$0\" \"$@\"",
        args,
    )
}

#[test]
fn a_host_that_cannot_sandbox_refuses_commands_and_says_what_is_missing() {
    let (home, workspace) = home_with_workspace();
    let files = MockFiles::write(
        home.path(),
        &exec_script(&["touch ran"]),
        "{ tools: { approvals: 'allow' } }",
    );
    let missing = "this host cannot sandbox it (bubblewrap (bwrap) is not installed)";
    let out = without_bubblewrap(home.path(), &files.agent(&workspace, "try"));
    let stderr = finished(&out);
    assert!(stderr.contains(missing), "{stderr}");
    assert!(!workspace.join("ran").exists());
    // `config check` says so before any command.
    let config = files.config.to_str().unwrap();
    let out = without_bubblewrap(home.path(), &["config", "check", config]);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("warning[sandbox_unavailable]")
            && said.contains("bubblewrap (bwrap) is not installed"),
        "{said}"
    );
}

/// A command filling the disk (here a 256 MiB tmpfs the workspace and the
/// state directory share, in a mount namespace of the test's) is stopped
/// once its writes leave less than the reserve; the model is told, a
/// command that frees space runs, and the run finishes.
#[test]
fn a_command_filling_the_disk_is_stopped_and_the_run_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let disk = home.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let files = MockFiles::write(
        home.path(),
        &exec_script(&[
            // About 200 MB/s, so that the 100 ms check sees it before the
            // tmpfs is full (a real disk has the whole reserve to spare).
            "i=0; while [ $i -lt 250 ]; do dd if=/dev/zero of=f$i bs=1M count=1 \
             2>/dev/null || break; i=$((i+1)); sleep 0.005; done; echo wrote=$i",
            "rm -f f*; echo cleaned",
            "dd if=/dev/zero of=g bs=1M count=8 2>/dev/null && echo small",
        ]),
        "{ tools: { approvals: 'allow' }, agents: { defaults: { sandbox: { limits: \
         { diskReserveBytes: 201326592 } } } } }",
    );
    let out = in_mount_namespace(
        home.path(),
        &disk.join("state"),
        "mount -t tmpfs -o size=256m tmpfs \"$1\" && mkdir \"$1/ws\" \"$1/state\" && \
         exec \"$0\" agent --config \"$2\" --mock-script \"$3\" --workspace \"$1/ws\" -m fill",
        [&disk, &files.config, &files.script],
    );
    let stderr = finished(&out);
    assert!(
        stderr.contains(
            "✗ exec: {\"code\":\"too_large\",\"error\":\"too_large: the command was killed: \
             its writes left the workspace's filesystem"
        ),
        "{stderr}"
    );
    // The clean-up and a small write after it ran.
    assert_eq!(stderr.matches("✓ exec").count(), 2, "{stderr}");
    assert!(!stderr.contains("unknown key"), "{stderr}");
}

/// Root that cannot make a pids cgroup (cgroupfs hidden under a tmpfs,
/// the caller mapped to root, which is root outside only when the tests
/// run as root): `config check` warns that nothing holds a command's
/// process count.
#[test]
fn root_without_a_pids_cgroup_is_warned_about() {
    let home = tempfile::tempdir().unwrap();
    let out = in_mount_namespace(
        home.path(),
        &home.path().join("state"),
        "mount -t tmpfs tmpfs /sys/fs/cgroup && exec \"$0\" \"$@\"",
        ["config", "check"],
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let warned = said.contains("warning[no_process_limit]");
    // Root outside: exempt from RLIMIT_NPROC, so warned; anyone else
    // keeps the process limit (prlimit inside the sandbox).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"));
    assert_eq!(warned, root, "{said}");
}
