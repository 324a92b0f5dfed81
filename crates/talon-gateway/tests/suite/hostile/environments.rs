//! Environments against a hostile caller and a hostile repository: only
//! an admin's sources become workspaces, no git channel a repository, a
//! run or the machine controls runs anything, and only secrets an admin
//! named can be bound (their encoded forms redacted, too).

use std::path::{Path, PathBuf};

use serde_json::json;
use talon_testing::redact::Redactor;

use super::super::artifacts::sized;
use super::super::env_support::{
    DEPLOY_TOKEN_VAR, Sources, call, completed_call, create_checkout, create_environment, git,
    read, run_events, run_to_end_in, workspace_of,
};
use super::super::{Options, TestGateway, call_then_say, calls_then_say, tool_turn};

/// A script that, run by git through any channel, leaves `marks/<name>`.
fn planted(dir: &Path, name: &str) -> PathBuf {
    let marks = dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let script = dir.join(format!("plant-{name}.sh"));
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marks.join(name).display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// A hooks directory whose every hook is planted as `name`.
fn hooks(dir: &Path, name: &str) -> PathBuf {
    let hooks = dir.join(format!("hooks-{name}"));
    std::fs::create_dir_all(&hooks).unwrap();
    let script = planted(dir, name);
    for hook in [
        "post-checkout",
        "post-merge",
        "post-rewrite",
        "reference-transaction",
        "pre-commit",
        "post-index-change",
        "fsmonitor-watchman",
    ] {
        std::fs::copy(&script, hooks.join(hook)).unwrap();
    }
    hooks
}

/// A git config that runs `script` through every key that runs a program.
fn config_running(script: &Path, hooks: &Path) -> String {
    let s = script.display();
    format!(
        "[core]\n\tfsmonitor = {s}\n\thooksPath = {h}\n\tsshCommand = {s}\n\tpager = {s}\n\teditor = {s}\n\
         [filter \"evil\"]\n\tsmudge = {s}\n\tclean = {s}\n\tprocess = {s}\n\trequired = true\n\
         [diff \"evil\"]\n\ttextconv = {s}\n\tcommand = {s}\n\
         [alias]\n\tcheckout = !{s}\n\tclone = !{s}\n\trev-parse = !{s}\n\
         [credential]\n\thelper = !{s}\n\
         [init]\n\ttemplateDir = {t}\n\
         [include]\n\tpath = {s}.inc\n",
        h = hooks.display(),
        t = hooks.parent().unwrap().display(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_git_channel_of_a_repository_a_run_or_the_machine_runs_anything() {
    let sources = Sources::new();
    let planting = sources.dir.path().join("planting");
    std::fs::create_dir_all(&planting).unwrap();
    // The admin's repository itself: its config, its hooks, and content
    // that names a filter.
    let repo = sources.repo();
    std::fs::write(repo.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "attributes"]);
    let repo_hooks = hooks(&planting, "repository-hook");
    let repo_config = config_running(&planted(&planting, "repository-config"), &repo_hooks);
    let mut config = read(&repo, ".git/config");
    config.push_str(&repo_config);
    std::fs::write(repo.join(".git/config"), config).unwrap();
    for hook in std::fs::read_dir(&repo_hooks).unwrap() {
        let hook = hook.unwrap();
        std::fs::copy(hook.path(), repo.join(".git/hooks").join(hook.file_name())).unwrap();
    }
    // The machine's: global (HOME, XDG), system, and the environment's
    // own config channels.
    let home = planting.join("home");
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    let global = config_running(
        &planted(&planting, "global"),
        &hooks(&planting, "global-hook"),
    );
    std::fs::write(home.join(".gitconfig"), &global).unwrap();
    let xdg = config_running(&planted(&planting, "xdg"), &hooks(&planting, "xdg-hook"));
    std::fs::write(home.join(".config/git/config"), &xdg).unwrap();
    let system = planting.join("system-gitconfig");
    std::fs::write(
        &system,
        config_running(
            &planted(&planting, "system"),
            &hooks(&planting, "system-hook"),
        ),
    )
    .unwrap();
    let env_script = planted(&planting, "environment");
    let template = hooks(&planting, "template-hook");
    #[allow(
        unsafe_code,
        reason = "set before the gateway starts any thread that reads the environment; each test is its own process under nextest"
    )]
    // SAFETY: see the reason above.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("XDG_CONFIG_HOME", home.join(".config"));
        std::env::set_var("GIT_CONFIG_SYSTEM", &system);
        std::env::set_var("GIT_CONFIG_COUNT", "1");
        std::env::set_var("GIT_CONFIG_KEY_0", "core.fsmonitor");
        std::env::set_var("GIT_CONFIG_VALUE_0", &env_script);
        std::env::set_var(
            "GIT_CONFIG_PARAMETERS",
            format!("'core.pager={}'", env_script.display()),
        );
        std::env::set_var("GIT_TEMPLATE_DIR", template.parent().unwrap());
        std::env::set_var("GIT_SSH_COMMAND", &env_script);
        std::env::set_var("GIT_EXTERNAL_DIFF", &env_script);
        std::env::set_var("GIT_PAGER", &env_script);
    }

    // The run writes its own `.git/config` and hooks (one approved write
    // each), then changes a file: the post-run diff must not run them.
    let run_script = planted(&planting, "run-written");
    let run_hooks = hooks(&planting, "run-hook");
    let script = calls_then_say(
        vec![
            tool_turn(
                "write",
                json!({"path": ".git/config", "content": config_running(&run_script, &run_hooks)}),
            ),
            tool_turn(
                "write",
                json!({"path": ".git/hooks/post-checkout", "content": format!("#!/bin/sh\ntouch {}\n", planting.join("marks/run-hook-direct").display())}),
            ),
            tool_turn(
                "write",
                json!({"path": ".gitattributes", "content": "* filter=evil diff=evil\n"}),
            ),
            tool_turn(
                "edit",
                json!({"path": "a.txt", "old": "hello", "new": "changed"}),
            ),
        ],
        "Done.",
    );
    let g = sources
        .gateway(script, json!({"tools": {"approvals": "allow"}}))
        .await;
    let created = create_checkout(&g, "main").await.unwrap();
    let mut redactor = sources.redactor(&g);
    insta::assert_json_snapshot!("channels_created", redactor.value(&created));
    let workspace = workspace_of(&created);
    assert_eq!(read(&workspace, "a.txt"), "hello\n");
    // No hook was copied into the clone, and its config is git's own.
    assert_eq!(
        std::fs::read_dir(workspace.join(".git/hooks"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
    let (_run, result) = run_to_end_in(&g, &created["id"], "go").await;
    // Completed, with the workspace's diff.
    insta::assert_json_snapshot!("channels_result", sized(redactor.value(&result)));
    // Another environment from the same repository, after the run.
    let again = create_checkout(&g, "main").await.unwrap();
    insta::assert_json_snapshot!("channels_again", redactor.value(&again));
    let marks: Vec<String> = std::fs::read_dir(planting.join("marks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(marks, Vec::<String>::new(), "planted channels that ran");
}

#[tokio::test]
async fn only_an_admins_sources_become_workspaces() {
    // No sources configured: no directory and no repository.
    let g = TestGateway::start().await;
    let mut refusals = Vec::new();
    for settings in [
        json!({"source": {"path": "/etc"}}),
        json!({"source": {"path": g.dir.path()}}),
        json!({"source": {"git": "/etc", "ref": "main"}}),
    ] {
        let refused = create_environment(&g, "local", settings).await.unwrap_err();
        refusals.push(refused);
    }
    // Forbidden, naming `gateway.environments`.
    insta::assert_json_snapshot!(
        "no_sources",
        Redactor::new()
            .with(g.dir.path().to_str().unwrap(), "<state>")
            .value(&json!(refusals))
    );

    let sources = Sources::new();
    let root = sources.root("ok");
    std::fs::write(root.join("f.txt"), "x").unwrap();
    // Ways out of the root: a link to /etc, `..`, a link to the root's
    // parent, the state directory.
    std::os::unix::fs::symlink("/etc", sources.root("").join("etc-link")).unwrap();
    std::os::unix::fs::symlink(sources.dir.path(), sources.root("").join("up")).unwrap();
    let g = TestGateway::start_opts(Options {
        environments: talon_gateway::EnvironmentPolicy {
            source_roots: vec![sources.root("")],
            ..sources.policy.clone()
        },
        ..Options::default()
    })
    .await;
    let root_dir = sources.root("");
    let mut redactor = sources.redactor(&g);
    let mut refusals = Vec::new();
    // Forbidden outside the root; not a directory or not absolute, an
    // invalid request.
    for path in [
        PathBuf::from("/etc"),
        PathBuf::from("/"),
        root_dir.join("etc-link"),
        root_dir.join("up"),
        root_dir.join("ok/../../repo"),
        root_dir.join("missing"),
        PathBuf::from("relative/ok"),
        root_dir.join("ok/f.txt"),
    ] {
        let refused = create_environment(&g, "local", json!({"source": {"path": path}}))
            .await
            .unwrap_err();
        refusals.push(json!({"path": path, "error": refused}));
    }
    insta::assert_json_snapshot!("out_of_the_root", redactor.value(&json!(refusals)));
    // A repository not configured, by name or by path (forbidden); a ref
    // that is an option or holds a line break (an invalid request).
    let mut refusals = Vec::new();
    for (git, reference) in [
        ("other", "main"),
        ("/etc", "main"),
        ("../repo", "main"),
        ("app", "--upload-pack=touch /tmp/x"),
        ("app", "main\nother"),
    ] {
        let refused = create_environment(
            &g,
            "local",
            json!({"source": {"git": git, "ref": reference}}),
        )
        .await
        .unwrap_err();
        refusals.push(json!({"git": git, "ref": reference, "error": refused}));
    }
    insta::assert_json_snapshot!("repositories", redactor.value(&json!(refusals)));
    let ok = create_environment(&g, "local", json!({"source": {"path": root.join(".")}}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("root_ok", redactor.value(&ok));
    let by_path = create_environment(
        &g,
        "local",
        json!({"source": {"git": sources.repo(), "ref": "main"}}),
    )
    .await
    .unwrap();
    insta::assert_json_snapshot!("repository_by_path", redactor.value(&by_path));

    // A root that holds the state directory: neither it nor anything
    // around the state directory is a source.
    let g = TestGateway::start_opts(Options {
        environments: talon_gateway::EnvironmentPolicy {
            source_roots: vec![std::env::temp_dir()],
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    let mut refusals = Vec::new();
    for path in [
        g.dir.path().to_path_buf(),
        g.dir.path().join("talon.db"),
        std::env::temp_dir(),
    ] {
        let refused = create_environment(&g, "local", json!({"source": {"path": path}}))
            .await
            .unwrap_err();
        refusals.push(json!({"path": path, "error": refused}));
    }
    // All forbidden.
    let around = Redactor::new()
        .with(g.dir.path().to_str().unwrap(), "<state>")
        .with(std::env::temp_dir().to_str().unwrap(), "<tmp>")
        .value(&json!(refusals));
    insta::assert_json_snapshot!("around_the_state", around);
}

/// Standard base64, padded.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const SECRET: &str = "s3cr3t-deploy-value-8c1f";
const PROVIDER_VAR: &str = "TALON_TEST_PROVIDER_KEY";

#[tokio::test]
async fn only_secrets_an_admin_named_are_bound_and_their_encodings_are_redacted() {
    #[allow(
        unsafe_code,
        reason = "set before the gateway starts any thread that reads the environment; each test is its own process under nextest"
    )]
    // SAFETY: see the reason above.
    unsafe {
        std::env::set_var(DEPLOY_TOKEN_VAR, SECRET);
        std::env::set_var(PROVIDER_VAR, "sk-provider-key-never-bound");
    }
    let reversed: String = SECRET.chars().rev().collect();
    let b64 = base64(SECRET.as_bytes());
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    let command = "printf 'plain=%s\\n' \"$DEPLOY_TOKEN\"; printf %s \"$DEPLOY_TOKEN\" | rev; echo; \
                   printf %s \"$DEPLOY_TOKEN\" | base64; printf %s \"$DEPLOY_TOKEN\" | od -An -tx1 | tr -d ' \\n'; echo; \
                   printf 'provider=%s\\n' \"${TALON_TEST_PROVIDER_KEY:-unset}\"";
    // The model says the secret too: streamed in pieces of 8 characters,
    // no piece holds it whole.
    let said = format!("Done: the token is {SECRET}.");
    let script = call_then_say("exec", json!({"command": command}), &said);
    let sources = Sources::new();
    let g = sources
        .gateway(script, json!({"tools": {"approvals": "allow"}}))
        .await;
    let source = sources.root("work");
    let mut refusals = Vec::new();
    for secrets in [
        json!([PROVIDER_VAR]),
        json!(["PATH"]),
        json!(["deploy_token"]),
        json!({"DEPLOY_TOKEN": {"env": PROVIDER_VAR}}),
        json!({"X": {"file": "/etc/shadow"}}),
    ] {
        let refused = create_environment(
            &g,
            "local",
            json!({"source": {"path": source}, "secrets": secrets}),
        )
        .await
        .unwrap_err();
        refusals.push(json!({"secrets": secrets, "error": refused}));
    }
    let mut redactor = sources.redactor(&g);
    // Each forbidden or an invalid request.
    insta::assert_json_snapshot!("secrets_refused", redactor.value(&json!(refusals)));
    let created = create_environment(
        &g,
        "local",
        json!({"source": {"path": source}, "secrets": ["DEPLOY_TOKEN"]}),
    )
    .await
    .unwrap();
    let (run, result) = run_to_end_in(&g, &created["id"], "go").await;
    insta::assert_json_snapshot!("secrets_result", sized(redactor.value(&result)));
    let events = run_events(&g, &run).await;
    let completed = completed_call(&events);
    // Every encoding of the secret redacted; the provider's key unset.
    insta::assert_json_snapshot!("secrets_exec", redactor.value(completed));
    // The streamed text is redacted across its pieces, and the reply's
    // native payload (whose chunks split the secret) is withheld.
    let deltas: String = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "assistant.delta")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Done: the token is [redacted].");
    let reply = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["type"] == "assistant.message")
        .unwrap();
    assert_eq!(
        (&reply["data"]["text"], &reply["raw"]),
        (
            &json!("Done: the token is [redacted]."),
            &json!({"withheld": "a secret the gateway knows spans its events"})
        )
    );
    let stored = g
        .running
        .store
        .after(
            None,
            &talon_store::EventFilter {
                raw: true,
                ..talon_store::EventFilter::default()
            },
            10_000,
        )
        .await
        .unwrap();
    let pieces: String = stored
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let everything = format!("{events}{pieces}");
    for form in [SECRET, &reversed, &b64, &hex] {
        assert!(!everything.contains(form), "{form} was stored");
    }
}

/// A writer inside a source root swaps the directory being copied for a
/// link to outside every root while environments are made from it: no
/// workspace ever holds what is outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_swapped_for_a_link_while_it_is_copied_brings_in_nothing_from_outside() {
    let sources = Sources::new();
    let g = TestGateway::start_opts(Options {
        environments: sources.policy.clone(),
        ..Options::default()
    })
    .await;
    let outside = sources.dir.path().join("outside");
    std::fs::create_dir_all(outside.join("nested")).unwrap();
    std::fs::write(outside.join("SECRET"), "outside").unwrap();
    std::fs::write(outside.join("nested/SECRET"), "outside").unwrap();
    let source = sources.root("project");
    std::fs::create_dir_all(source.join("sub/nested")).unwrap();
    for n in 0..20 {
        std::fs::write(source.join(format!("sub/f{n}")), "inside").unwrap();
    }
    std::fs::write(source.join("sub/nested/g"), "inside").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (source, outside) = (source.clone(), outside.clone());
        std::thread::spawn(move || {
            let (sub, aside) = (source.join("sub"), source.join("aside"));
            // The real directory and the link take turns, each for a
            // moment, so that some creates find the directory and are
            // copied while it is being swapped.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(&sub, &aside);
                let _ = std::os::unix::fs::symlink(&outside, &sub);
                std::thread::sleep(std::time::Duration::from_micros(200));
                let _ = std::fs::remove_file(&sub);
                let _ = std::fs::rename(&aside, &sub);
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        })
    };
    let mut made = 0;
    for n in 0..400 {
        if made >= 20 {
            break;
        }
        let created = call(
            &g,
            "environments.create",
            json!({"provider": "local", "idempotencyKey": format!("swap-{n}"),
                   "settings": {"source": {"path": source.join("sub")}}}),
        )
        .await;
        // Refused, or failed while copying (the link was there): fine.
        let Ok(created) = created else { continue };
        let Some(workspace) = created["workspace"].as_str() else {
            assert_eq!(created["status"], "failed", "{created}");
            continue;
        };
        made += 1;
        let mut stack = vec![PathBuf::from(workspace)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    let text = std::fs::read_to_string(entry.path()).unwrap();
                    assert_ne!(text, "outside", "{}", entry.path().display());
                }
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(made > 0, "no environment was made at all");
}
