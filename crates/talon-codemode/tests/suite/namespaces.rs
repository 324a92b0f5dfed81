//! The seed's namespace test checklist, one test per bullet, plus the
//! registration rules.

use std::sync::{Arc, RwLock};
use std::time::Duration;
use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::bounded::SessionKey;

use serde_json::{Value, json};
use talon_codemode::namespaces::InputMapper;
use talon_codemode::{
    NamespaceError, NamespaceRegistration, NamespaceRegistry, ScopeValue,
    create_code_mode_namespace_tool,
};
use talon_tools::{Caller, CatalogBuilder, ToolPolicy};

use super::*;

fn mapper(f: fn(&[Value]) -> Value) -> Option<InputMapper> {
    Some(Arc::new(f))
}

/// The seed's example: `Issues.list(params)`, `Issues.update(number, patch)`.
fn issues(scope: fn() -> ScopeValue) -> NamespaceRegistration {
    NamespaceRegistration {
        id: "github-issues".into(),
        global_name: "Issues".into(),
        description: "GitHub issue helpers for the current repository.".into(),
        required_tool_names: vec!["github_list_issues".into(), "github_update_issue".into()],
        prompt: Some("Use Issues.list(params) and Issues.update(number, patch).".into()),
        create_scope: Arc::new(move |_| scope()),
    }
}

fn issues_scope() -> ScopeValue {
    ScopeValue::Object(vec![
        (
            "repository".into(),
            ScopeValue::Data(json!("openclaw/openclaw")),
        ),
        (
            "list".into(),
            create_code_mode_namespace_tool(
                "github_list_issues",
                mapper(|args| {
                    args.first()
                        .cloned()
                        .filter(|v| !v.is_null())
                        .unwrap_or(json!({}))
                }),
            ),
        ),
        (
            "update".into(),
            create_code_mode_namespace_tool(
                "github_update_issue",
                mapper(|args| json!({"number": args.first(), "patch": args.get(1)})),
            ),
        ),
    ])
}

fn registry_with(registration: NamespaceRegistration) -> Arc<NamespaceRegistry> {
    let registry = Arc::new(NamespaceRegistry::new());
    registry.register("github", registration).unwrap();
    registry
}

#[tokio::test]
async fn namespace_prompt_text_appears_only_when_backing_tools_are_visible() {
    let registry = registry_with(issues(issues_scope));
    let cm = code_mode(memory_store(), registry);
    let visible = start(&cm, RunOptions::default());
    let description = &visible.run.surface().tools[0].description;
    assert!(description.contains("- Issues: GitHub issue helpers for the current repository. Use Issues.list(params) and Issues.update(number, patch)."));
    // One required tool denied: no namespace, no prompt, no global.
    let hidden = start(
        &cm,
        RunOptions {
            policy: ToolPolicy::from_lists(None, &["github_update_issue".into()]),
            ..RunOptions::default()
        },
    );
    assert!(!hidden.run.surface().tools[0].description.contains("Issues"));
    let result = exec(
        &hidden.run,
        "return [typeof Issues, Object.keys(namespaces)];",
    )
    .await;
    assert_eq!(value(&result), json!(["undefined", []]));
}

#[tokio::test]
async fn a_same_named_tool_from_another_source_name_does_not_expose_the_namespace() {
    let registry = registry_with(issues(issues_scope));
    let cm = code_mode(memory_store(), registry);
    let catalog = CatalogBuilder::new(scope("r1"))
        .plugin(
            "impostor",
            [
                tool("github_list_issues", "Not GitHub's."),
                tool("github_update_issue", "Not GitHub's."),
            ],
        )
        .core([tool("github_list_issues", "A core tool of the same name.")])
        .build(&ToolPolicy::new())
        .unwrap();
    let run = start_with(&cm, catalog, RunOptions::default());
    assert!(run.run.namespaces().visible.is_empty());
    let result = exec(&run.run, "return typeof Issues;").await;
    assert_eq!(value(&result), json!("undefined"));
}

#[tokio::test]
async fn raw_scope_functions_are_rejected_before_guest_code_runs() {
    let registry = registry_with(issues(|| {
        ScopeValue::Object(vec![(
            "list".into(),
            ScopeValue::RawFunction(Arc::new(|_| json!("bypassed the catalog"))),
        )])
    }));
    let cm = code_mode(memory_store(), registry);
    let run = start(&cm, RunOptions::default());
    assert_eq!(
        run.run.namespaces().refused,
        vec![NamespaceError::RawFunction(
            "github-issues".into(),
            "list".into()
        )]
    );
    assert!(!run.run.surface().tools[0].description.contains("Issues"));
    let result = exec(&run.run, "return typeof Issues;").await;
    assert_eq!(value(&result), json!("undefined"));
}

#[tokio::test]
async fn fake_namespace_ids_and_fake_paths_are_rejected() {
    let registry = registry_with(issues(issues_scope));
    let cm = code_mode(memory_store(), registry);
    let run = start(&cm, RunOptions::default());
    let result = exec(
        &run.run,
        r#"const out = [];
           // The host function is captured by the prelude; forging calls
           // means reaching it through a namespace member, so try both
           // shapes the guest can produce.
           try { await Issues.nope(); } catch (e) { out.push(e.name); }
           try { await namespaces.Forged.list(); } catch (e) { out.push(e.name); }
           out.push(typeof globalThis.__openclaw_ns);
           return out;"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!(["TypeError", "TypeError", "undefined"])
    );
    // The host refuses unknown ids and paths outright.
    let namespaces = run.run.namespaces();
    assert_eq!(
        namespaces.resolve("forged-id", "list", &[]),
        Err(
            talon_sandbox::HostCallError::new("unknown namespace \"forged-id\"")
                .with_code("not_found")
        )
    );
    assert_eq!(
        namespaces.resolve("github-issues", "repository", &[]),
        Err(talon_sandbox::HostCallError::new(
            "namespace \"Issues\" has no callable \"repository\""
        )
        .with_code("not_found"))
    );
    assert_eq!(
        namespaces.resolve("github-issues", "list", &[json!({"state": "open"})]),
        Ok((
            "plugin:github:github_list_issues".into(),
            json!({"state": "open"})
        ))
    );
}

#[test]
fn callable_paths_cannot_target_undeclared_tools() {
    let registry = registry_with(issues(|| {
        ScopeValue::Object(vec![(
            "delete".into(),
            create_code_mode_namespace_tool("github_delete_repo", None),
        )])
    }));
    let catalog = catalog("r1", &ToolPolicy::new());
    let ns = registry.for_run(&catalog, &ns_ctx());
    assert!(ns.visible.is_empty());
    assert_eq!(
        ns.refused,
        vec![NamespaceError::UndeclaredTool(
            "github-issues".into(),
            "delete".into(),
            "github_delete_repo".into()
        )]
    );
}

fn ns_ctx() -> talon_codemode::NamespaceContext {
    talon_codemode::NamespaceContext {
        agent_id: AgentId::new("main"),
        session_key: SessionKey::new("k"),
        session_id: SessionId::new("s1"),
        run_id: RunId::new("r1"),
        config: json!({}),
        cancel: Default::default(),
    }
}

#[tokio::test]
async fn nested_objects_and_shared_references_serialize_correctly() {
    let registry = registry_with(issues(|| {
        let labels = Arc::new(RwLock::new(ScopeValue::Data(json!(["bug", "p1"]))));
        ScopeValue::Object(vec![
            (
                "meta".into(),
                ScopeValue::Object(vec![
                    ("labels".into(), ScopeValue::Shared(labels.clone())),
                    (
                        "nested".into(),
                        ScopeValue::Array(vec![
                            ScopeValue::Data(json!({"deep": {"deeper": [1, 2]}})),
                            ScopeValue::Object(vec![(
                                "find".into(),
                                create_code_mode_namespace_tool("github_list_issues", None),
                            )]),
                        ]),
                    ),
                ]),
            ),
            ("alsoLabels".into(), ScopeValue::Shared(labels)),
        ])
    }));
    let cm = code_mode(memory_store(), registry.clone());
    let run = start(&cm, RunOptions::default());
    let result = exec(
        &run.run,
        r#"const found = await Issues.meta.nested[1].find({q: 1});
           return {labels: Issues.meta.labels, also: Issues.alsoLabels, same: Issues.meta.labels === Issues.alsoLabels,
                   deep: Issues.meta.nested[0].deep.deeper, found: found.tool, frozen: Object.isFrozen(Issues.meta.nested[0].deep),
                   viaMap: namespaces.Issues === Issues};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"labels": ["bug", "p1"], "also": ["bug", "p1"], "same": false, "deep": [1, 2],
               "found": "plugin:github:github_list_issues", "frozen": true, "viaMap": true})
    );
    // A cycle is refused.
    registry
        .register(
            "github",
            issues(|| {
                let node = Arc::new(RwLock::new(ScopeValue::Data(json!(null))));
                *node.write().unwrap() =
                    ScopeValue::Object(vec![("me".into(), ScopeValue::Shared(node.clone()))]);
                ScopeValue::Object(vec![("loop".into(), ScopeValue::Shared(node))])
            }),
        )
        .unwrap();
    let ns = registry.for_run(&catalog("r1", &ToolPolicy::new()), &ns_ctx());
    assert_eq!(
        ns.refused,
        vec![NamespaceError::Cycle(
            "github-issues".into(),
            "loop.me".into()
        )]
    );
    // Unsafe keys are refused.
    for key in ["__proto__", "constructor", "prototype", "", "a\u{1f}b"] {
        registry
            .register(
                "github",
                NamespaceRegistration {
                    create_scope: Arc::new(move |_| {
                        ScopeValue::Object(vec![(key.into(), ScopeValue::Data(json!(1)))])
                    }),
                    ..issues(issues_scope)
                },
            )
            .unwrap();
        let ns = registry.for_run(&catalog("r1", &ToolPolicy::new()), &ns_ctx());
        assert_eq!(
            ns.refused,
            vec![NamespaceError::UnsafeKey(
                "github-issues".into(),
                key.into()
            )]
        );
    }
}

#[tokio::test]
async fn namespace_calls_execute_through_catalog_tools_and_return_json_safe_details() {
    let registry = registry_with(issues(issues_scope));
    let cm = code_mode(memory_store(), registry);
    let run = start(&cm, RunOptions::default());
    let result = exec(
        &run.run,
        r#"const open = await Issues.list({state: "open"});
           const alsoOpen = await namespaces.Issues.list({state: "open"});
           const updated = await Issues.update(7, {title: "x"});
           return {open, same: JSON.stringify(open) === JSON.stringify(alsoOpen), updated, repo: Issues.repository};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({
            "open": {"tool": "plugin:github:github_list_issues", "input": {"state": "open"}},
            "same": true,
            "updated": {"tool": "plugin:github:github_update_issue", "input": {"number": 7, "patch": {"title": "x"}}},
            "repo": "openclaw/openclaw",
        })
    );
    let records: Vec<_> = run
        .runner
        .records()
        .into_iter()
        .map(|r| (r.caller, r.status))
        .collect();
    assert_eq!(records, vec![(Caller::Parent("call_1".into()), "ok"); 3]);
    assert_eq!(
        result.telemetry().nested_tool_ids,
        [
            "plugin:github:github_list_issues",
            "plugin:github:github_list_issues",
            "plugin:github:github_update_issue"
        ]
    );
}

#[tokio::test]
async fn namespace_failures_are_catchable_by_guest_code() {
    let registry = Arc::new(NamespaceRegistry::new());
    registry
        .register(
            "github",
            NamespaceRegistration {
                required_tool_names: vec!["github_list_issues".into(), "github_fail".into()],
                create_scope: Arc::new(|_| {
                    ScopeValue::Object(vec![
                        (
                            "broken".into(),
                            create_code_mode_namespace_tool("github_fail", None),
                        ),
                        (
                            "list".into(),
                            create_code_mode_namespace_tool("github_list_issues", None),
                        ),
                    ])
                }),
                ..issues(issues_scope)
            },
        )
        .unwrap();
    let cm = code_mode(memory_store(), registry);
    let catalog = CatalogBuilder::new(scope("r1"))
        .plugin(
            "github",
            [
                tool("github_list_issues", "List."),
                tool("github_fail", "Always fails."),
            ],
        )
        .build(&ToolPolicy::new())
        .unwrap();
    let run = start_with(&cm, catalog, RunOptions::default());
    let result = exec(
        &run.run,
        r#"let caught;
           try { await Issues.broken({}); } catch (e) { caught = {code: e.code, message: e.message}; }
           const results = await Promise.allSettled([Issues.broken(), Issues.list()]);
           return {caught, statuses: results.map(r => r.status)};"#,
    )
    .await;
    assert_eq!(
        value(&result),
        json!({"caught": {"code": "nested_tool_failed", "message": "plugin:github:github_fail failed: it failed on purpose"},
               "statuses": ["rejected", "fulfilled"]})
    );
}

#[tokio::test]
async fn suspended_namespace_calls_resume_through_wait() {
    let registry = Arc::new(NamespaceRegistry::new());
    registry
        .register(
            "github",
            NamespaceRegistration {
                required_tool_names: vec!["github_list_issues".into()],
                create_scope: Arc::new(|_| {
                    ScopeValue::Object(vec![(
                        "slowList".into(),
                        create_code_mode_namespace_tool("github_list_issues", None),
                    )])
                }),
                ..issues(issues_scope)
            },
        )
        .unwrap();
    let cm = code_mode(memory_store(), registry);
    let mut config = config();
    config.timeout = Duration::from_millis(100);
    let run = start(
        &cm,
        RunOptions {
            config,
            ..RunOptions::default()
        },
    );
    let first = exec(
        &run.run,
        "await yield_control('let the model look'); const r = await Issues.slowList({page: 2}); return r.input;",
    )
    .await;
    let id = cell_id(&first);
    let done = wait(&run.run, &id).await;
    assert_eq!(value(&done), json!({"page": 2}));
}

#[test]
fn plugin_rollback_removes_the_owners_namespace_registrations() {
    let registry = NamespaceRegistry::new();
    registry.register("github", issues(issues_scope)).unwrap();
    registry
        .register(
            "github",
            NamespaceRegistration {
                id: "github-pulls".into(),
                global_name: "Pulls".into(),
                ..issues(issues_scope)
            },
        )
        .unwrap();
    registry
        .register(
            "calendar",
            NamespaceRegistration {
                id: "calendar".into(),
                global_name: "Calendar".into(),
                required_tool_names: vec!["calendar_list".into()],
                ..issues(issues_scope)
            },
        )
        .unwrap();
    assert_eq!(registry.clear_plugin("github"), 2);
    let left: Vec<String> = registry.list().into_iter().map(|(_, r)| r.id).collect();
    assert_eq!(left, ["calendar"]);
    registry.clear();
    assert!(registry.list().is_empty());
    // The process registry's free functions follow the same rules.
    talon_codemode::clear_code_mode_namespaces_for_test();
    talon_codemode::register_code_mode_namespace_for_plugin("github", issues(issues_scope))
        .unwrap();
    assert_eq!(
        talon_codemode::clear_code_mode_namespaces_for_plugin("github"),
        1
    );
}

#[test]
fn registrations_are_checked() {
    let registry = NamespaceRegistry::new();
    for (name, why) in [
        ("tools", "collides with a Code Mode or JavaScript built-in"),
        (
            "namespaces",
            "collides with a Code Mode or JavaScript built-in",
        ),
        (
            "yield_control",
            "collides with a Code Mode or JavaScript built-in",
        ),
        (
            "__openclawSecret",
            "the __openclaw and __talon prefixes are reserved",
        ),
        ("not-an-identifier", "not a JavaScript identifier"),
        ("1abc", "not a JavaScript identifier"),
        ("class", "not a JavaScript identifier"),
    ] {
        assert_eq!(
            registry.register(
                "github",
                NamespaceRegistration {
                    global_name: name.into(),
                    ..issues(issues_scope)
                }
            ),
            Err(NamespaceError::GlobalName(name.into(), why))
        );
    }
    registry.register("github", issues(issues_scope)).unwrap();
    // Another plugin cannot take the id or the global.
    assert_eq!(
        registry.register("evil", issues(issues_scope)),
        Err(NamespaceError::Id("github-issues".into()))
    );
    assert!(matches!(
        registry.register(
            "evil",
            NamespaceRegistration {
                id: "other".into(),
                ..issues(issues_scope)
            }
        ),
        Err(NamespaceError::GlobalName(
            _,
            "already taken by another namespace"
        ))
    ));
    assert_eq!(
        registry.register(
            "github",
            NamespaceRegistration {
                id: "x".into(),
                global_name: "X".into(),
                required_tool_names: vec![],
                ..issues(issues_scope)
            }
        ),
        Err(NamespaceError::NoTools("x".into()))
    );
}
