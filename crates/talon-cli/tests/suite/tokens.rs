//! `talon token`: tokens are created from presets and scopes (printed
//! alone on stdout), listed without secrets, revoked; `--help` lists every
//! preset and scope; the README's `--preset app` token runs an agent,
//! waits for it and streams its events.

use super::gateway::{body, post, start_gateway, stream_until, talon};

#[test]
fn tokens_are_created_listed_and_revoked() {
    let home = tempfile::tempdir().unwrap();
    let created = talon(
        home.path(),
        &[
            "token",
            "create",
            "--scope",
            "agent.run",
            "--scope",
            "session.read,viewer",
            "--name",
            "app",
            "--expires-in",
            "30d",
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let secret = String::from_utf8(created.stdout).unwrap();
    let listed = talon(home.path(), &["token", "list"]);
    let list = String::from_utf8(listed.stdout).unwrap();
    let fields: Vec<&str> = list.trim().split('\t').collect();
    assert_eq!(
        fields[1..],
        [
            "live",
            "app",
            "agent.read,agent.run,session.read,task.read,schedule.read,artifacts.read",
            "-",
            "-",
            "-"
        ]
    );
    assert!(!list.contains(secret.trim()), "secrets are never listed");
    let id = fields[0].to_owned();
    assert!(
        talon(home.path(), &["token", "revoke", &id])
            .status
            .success()
    );
    let list = String::from_utf8(talon(home.path(), &["token", "list"]).stdout).unwrap();
    assert!(list.contains(&format!("{id}\trevoked")), "{list}");
    // Usage errors.
    for args in [
        &["token", "create", "--scope", "root"][..],
        &["token", "create", "--scope", ","][..],
        &["token", "create", "--preset", "root"][..],
        &["token", "create", "--preset", "agent.run"][..],
        &["token", "create", "--name", "neither"][..],
        &[
            "token",
            "create",
            "--scope",
            "admin",
            "--expires-in",
            "soon",
        ][..],
    ] {
        let out = talon(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty());
    }
    let out = talon(home.path(), &["token", "revoke", "tok_nope"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_token_is_bound_to_a_subject_and_agents_by_the_gateways_rule() {
    let home = tempfile::tempdir().unwrap();
    let created = talon(
        home.path(),
        &[
            "token",
            "create",
            "--scope",
            "app",
            "--name",
            "alice-web",
            "--subject",
            "alice",
            "--agent",
            "main,helper",
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let list = String::from_utf8(talon(home.path(), &["token", "list"]).stdout).unwrap();
    let fields: Vec<&str> = list.trim().split('\t').collect();
    assert_eq!(fields[4..], ["alice", "helper,main", "-"], "{list}");
    for (args, says) in [
        (
            &["token", "create", "--scope", "admin", "--subject", "alice"][..],
            "--subject: an admin token sees every subject",
        ),
        (
            &["token", "create", "--scope", "app", "--subject", ""][..],
            "--subject: it is empty",
        ),
        (
            &["token", "create", "--scope", "app", "--agent", "a\nb"][..],
            "--agent: ",
        ),
    ] {
        let out = talon(home.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn help_lists_every_preset_and_scope() {
    let home = tempfile::tempdir().unwrap();
    let out = talon(home.path(), &["token", "create", "--help"]);
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8(out.stdout).unwrap();
    let listed = &help[help.find("Presets:").expect("a presets section")..];
    assert_eq!(
        listed.trim_end(),
        "Presets:
  app                agent.read, agent.run, session.read, session.write, task.read, schedule.read, approval.respond, artifacts.read
  viewer             agent.read, session.read, task.read, schedule.read, artifacts.read
  observer           agent.read, session.read, task.read, schedule.read, artifacts.read, metrics.read
  admin              admin

Scopes:
  agent.read         see agents, models and tools: agents.list, agents.get, models.list, models.status, tools.list, environments.list, environments.status
  agent.run          start and cancel runs: runs.create, runs.cancel
  session.read       read sessions, runs, approvals, questions and events: sessions.list, sessions.messages, runs.list, usage.summary, runs.get, runs.events, runs.wait, approvals.list, approvals.get, questions.list, events.subscribe, events.unsubscribe, tokens.ticket
  session.write      create, change and delete sessions, and send to them: sessions.create, sessions.resolve, sessions.update, sessions.send, sessions.fork, sessions.compact, sessions.abort, sessions.delete, runs.delete
  task.read          read background tasks: tasks.list, tasks.get, tasks.events
  task.write         cancel background tasks or change how their results are posted: tasks.cancel, tasks.notify
  schedule.read      read schedules: schedules.list, schedules.get
  schedule.write     create, change, pause, run and delete schedules (each firing runs an agent): schedules.create, schedules.update, schedules.run, schedules.delete
  approval.respond   answer approvals and questions: approvals.respond, questions.respond
  tools.invoke       call exposed tools directly: tools.invoke
  artifacts.read     list and download artifacts: artifacts.list, artifacts.get, artifacts.download
  environment.write  create and delete managed environments: environments.create, environments.delete
  metrics.read       read the Prometheus metrics (GET /metrics)
  admin              every method; only admin opens these: agents.create, agents.update, tokens.create, tokens.list, tokens.revoke

Example: talon token create --preset app --name web --expires-in 30d"
    );
}

/// The README's example, as a newcomer types it.
#[test]
fn the_readmes_app_token_runs_waits_and_streams() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "Hello from the mock."}]}"#).unwrap();
    let (_gateway, addr, _stderr) =
        start_gateway(home.path(), &["--mock-script", script.to_str().unwrap()]);
    let created = talon(
        home.path(),
        &[
            "token",
            "create",
            "--preset",
            "app",
            "--name",
            "web",
            "--expires-in",
            "1h",
        ],
    );
    assert!(created.status.success(), "{created:?}");
    let app = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let run = body(&post(
        &addr,
        &app,
        "runs.create",
        r#"{"input": "Say hello."}"#,
    ));
    let run_id = run["runId"].as_str().unwrap_or_else(|| panic!("{run}"));
    let result = body(&post(
        &addr,
        &app,
        "runs.wait",
        &format!(r#"{{"runId": "{run_id}", "timeoutMs": 30000}}"#),
    ));
    insta::assert_json_snapshot!(super::sized(talon_testing::redact::redacted(&result)));
    let ids = stream_until(&addr, &app, run_id, "run.completed");
    assert!(ids.len() >= 3, "{ids:?}");
    // And it cannot mint tokens.
    let refused = post(
        &addr,
        &app,
        "tokens.create",
        r#"{"name": "more", "preset": "admin", "expiresInMs": 60000}"#,
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
}

#[test]
fn dashboard_prints_a_fresh_sign_in_link_under_an_admin_token() {
    let home = tempfile::tempdir().unwrap();
    // No admin token in the store: nothing to mint a link under.
    let none = talon(home.path(), &["dashboard"]);
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no live admin token"),
        "{none:?}"
    );
    assert!(
        talon(home.path(), &["token", "create", "--preset", "admin"])
            .status
            .success()
    );
    let config = home.path().join("talon.json5");
    std::fs::write(&config, "{gateway: {controlUi: {basePath: '/ops'}}}").unwrap();
    let config = config.to_str().unwrap();
    let printed = |args: &[&str]| {
        let out = talon(home.path(), args);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let link = printed(&["dashboard", "--preset", "observer", "--next", "/inbox"]);
    let code: String = link
        .strip_prefix("http://127.0.0.1:7420/login#code=lgn_")
        .unwrap_or_else(|| panic!("{link}"))
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_eq!(code.len(), 64, "{link}");
    assert!(link.ends_with("&next=/inbox\n"), "{link}");
    let under = printed(&["dashboard", "--config", config]);
    assert!(
        under.starts_with("http://127.0.0.1:7420/ops/login#code=lgn_"),
        "{under}"
    );
    let elsewhere = printed(&["dashboard", "--url", "https://talon.example.com/t"]);
    assert!(
        elsewhere.starts_with("https://talon.example.com/t/login#code=lgn_"),
        "{elsewhere}"
    );
    // Two links, two codes; each is a revocable row under the admin token.
    let listed = String::from_utf8(talon(home.path(), &["token", "list"]).stdout).unwrap();
    assert_eq!(listed.matches("dashboard login").count(), 3, "{listed}");
    for args in [
        &["dashboard", "--preset", "root"][..],
        &["dashboard", "--next", "//evil.example"][..],
        &["dashboard", "--url", "http://user:pw@host"][..],
        &["dashboard", "--url", "ftp://host"][..],
        &["dashboard", "--url", "http://host/?q=1"][..],
    ] {
        let out = talon(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}
