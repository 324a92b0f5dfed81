//! A database made by an older build opens in this one: migration 0004
//! files the remembered decisions its approvals granted, and they cover
//! calls as the rules this build files do. Those approvals were stored
//! before `toolId` existed, with the tool's catalog id in `toolName`.

use std::path::Path;
use talon_protocol::gateway::bounded::SessionId;

use sqlx::AnyPool;
use talon_protocol::gateway::ApprovalDecision;

use super::backend::{Kind, config_for};

/// The migrations a database had before `approval_rules` (0004).
const BEFORE_RULES: [&str; 3] = [
    "0001_init.sql",
    "0002_checkpoint.sql",
    "0003_environments.sql",
];

/// A database at migration 0003 holding two approvals stored then
/// (`always`: approve_always; `session`: approve_session in `s1`), then
/// opened by this build.
async fn upgraded(kind: Kind) -> (talon_store::Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(kind, &dir);
    let (url, dialect) = match kind {
        Kind::Sqlite => (
            format!("sqlite:{}?mode=rwc", dir.path().join("talon.db").display()),
            "sqlite",
        ),
        Kind::Postgres => (config.url.clone().unwrap(), "postgres"),
    };
    let old = tempfile::tempdir().unwrap();
    let released = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(dialect);
    for name in BEFORE_RULES {
        std::fs::copy(released.join(name), old.path().join(name)).unwrap();
    }
    sqlx::any::install_default_drivers();
    let pool = AnyPool::connect(&url).await.unwrap();
    let migrator = sqlx::migrate::Migrator::new(old.path()).await.unwrap();
    migrator.run(&pool).await.unwrap();
    for (id, tool, session, decision, at) in [
        (
            "always",
            "openclaw:core:exec",
            "s2",
            ApprovalDecision::ApproveAlways,
            10i64,
        ),
        (
            "session",
            "openclaw:core:write",
            "s1",
            ApprovalDecision::ApproveSession,
            20,
        ),
    ] {
        let doc = serde_json::json!({
            "id": id, "runId": "r1", "sessionId": session, "kind": "tool",
            "summary": "a call", "toolName": tool, "risk": "medium",
            "decisions": ["approve_once", "approve_session", "approve_always", "deny"],
            "reusable": true, "status": "approved", "decision": decision,
            "createdAt": at, "resolvedAt": at + 1,
        });
        let insert = match kind {
            Kind::Sqlite => {
                "INSERT INTO approvals (id, run_id, session_id, status, created_at, doc) \
                 VALUES (?, 'r1', ?, 'approved', ?, ?)"
            }
            Kind::Postgres => {
                "INSERT INTO approvals (id, run_id, session_id, status, created_at, doc) \
                 VALUES ($1, 'r1', $2, 'approved', $3, $4)"
            }
        };
        sqlx::query(insert)
            .bind(id)
            .bind(session)
            .bind(at)
            .bind(doc.to_string())
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    (talon_store::open(&config).await.unwrap(), dir)
}

/// The rules an older database's approvals granted cover calls of their
/// tools by catalog id, and nothing else.
async fn body(kind: Kind) {
    let (store, _dir) = upgraded(kind).await;
    let mut found = Vec::new();
    for (tool, session) in [
        ("openclaw:core:exec", Some("s9")),
        ("openclaw:core:write", Some("s1")),
        ("openclaw:core:write", Some("s2")),
        ("exec", Some("s9")),
        ("write", Some("s1")),
        ("mcp:files:write", Some("s1")),
    ] {
        let rule = store
            .remembered_approval(tool, session.map(SessionId::new).as_ref(), None)
            .await
            .unwrap();
        found.push(rule.map(|a| (a.id.to_string(), a.tool_key().map(str::to_owned))));
    }
    let rule = |id: &str, tool: &str| Some((id.to_owned(), Some(tool.to_owned())));
    assert_eq!(
        found,
        [
            rule("always", "openclaw:core:exec"),
            rule("session", "openclaw:core:write"),
            // approve_session covers its own session only; bare names and
            // another owner's `write` nothing.
            None,
            None,
            None,
            None,
        ]
    );
}

mod older_approvals_keep_their_rules {
    use super::Kind;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::body(Kind::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::body(Kind::Postgres).await;
    }
}
