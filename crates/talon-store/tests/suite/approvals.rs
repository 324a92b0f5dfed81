//! Approvals and questions: listed by status, run and session; resolved
//! exactly once, also by concurrent responders on two nodes.

use talon_protocol::gateway::bounded::ApprovalId;
use talon_protocol::gateway::bounded::{QuestionId, RunId, SessionId};
use talon_protocol::gateway::{
    Approval, ApprovalDecision, ApprovalKind, ApprovalStatus, Question, QuestionStatus, RiskLevel,
};
use talon_store::{PendingFilter, Resolution, StoreError};

/// The core shell tool's catalog id.
const EXEC: &str = "openclaw:core:exec";

pub fn approval(id: &str, run: &str, expires_at: Option<u64>) -> Approval {
    Approval {
        id: ApprovalId::new(id),
        run_id: RunId::new(run),
        session_id: Some(SessionId::new("s1")),
        kind: ApprovalKind::Tool,
        summary: "run `rm -rf build/`".into(),
        tool_name: Some("exec".into()),
        tool_id: Some(EXEC.into()),
        tool_call_id: None,
        arguments: None,
        environment_action: None,
        risk: RiskLevel::High,
        decisions: vec![ApprovalDecision::ApproveOnce, ApprovalDecision::Deny],
        expires_at,
        reusable: false,
        status: ApprovalStatus::Pending,
        decision: None,
        reason: None,
        created_at: 10,
        resolved_at: None,
    }
}

fn decide(decision: ApprovalDecision, at: u64) -> impl FnOnce(&mut Approval) {
    move |a: &mut Approval| {
        a.status = if decision == ApprovalDecision::Deny {
            ApprovalStatus::Denied
        } else {
            ApprovalStatus::Approved
        };
        a.decision = Some(decision);
        a.resolved_at = Some(at);
    }
}

on_both! {
    async fn approvals_are_listed_and_resolved_once(t) {
        let store = &t.store;
        store.create_approval(&approval("a1", "r1", Some(100))).await.unwrap();
        store.create_approval(&approval("a2", "r2", None)).await.unwrap();
        assert!(matches!(store.create_approval(&approval("a1", "r1", None)).await, Err(StoreError::Exists { .. })));
        let pending = PendingFilter { status: Some("pending".into()), ..Default::default() };
        assert_eq!(store.approvals(&pending).await.unwrap().len(), 2);
        let of_r2 = PendingFilter { run_id: Some("r2".into()), ..Default::default() };
        assert_eq!(store.approvals(&of_r2).await.unwrap(), vec![approval("a2", "r2", None)]);
        // Pages in creation order, each after the last one's id; an
        // unknown id is past the end.
        let page = |after: Option<&str>| PendingFilter {
            page: Some(talon_store::Page { after: after.map(str::to_owned), limit: 1 }),
            ..Default::default()
        };
        let ids = |list: Vec<talon_protocol::gateway::Approval>| {
            list.into_iter().map(|a| a.id.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(ids(store.approvals(&page(None)).await.unwrap()), ["a1"]);
        assert_eq!(ids(store.approvals(&page(Some("a1"))).await.unwrap()), ["a2"]);
        assert!(store.approvals(&page(Some("a2"))).await.unwrap().is_empty());
        assert!(store.approvals(&page(Some("ghost"))).await.unwrap().is_empty());
        let resolved = store.resolve_approval("a1", decide(ApprovalDecision::ApproveOnce, 20)).await.unwrap();
        let Resolution::Resolved(won) = resolved else { panic!("{resolved:?}") };
        assert_eq!(won.status, ApprovalStatus::Approved);
        assert_eq!(store.approval("a1").await.unwrap(), Some(won.clone()));
        // A later responder learns what won.
        assert_eq!(
            store.resolve_approval("a1", decide(ApprovalDecision::Deny, 30)).await.unwrap(),
            Resolution::AlreadyResolved(won)
        );
        assert_eq!(store.approvals(&pending).await.unwrap(), vec![approval("a2", "r2", None)]);
        assert!(matches!(
            store.resolve_approval("ghost", decide(ApprovalDecision::Deny, 30)).await,
            Err(StoreError::NotFound { kind: "approval", .. })
        ));
        // A resolution that leaves it pending is refused.
        assert!(matches!(store.resolve_approval("a2", |_| {}).await, Err(StoreError::Corrupt(_))));
        // Expiry: what is due at 100.
        assert!(store.due_approvals(99).await.unwrap().is_empty());
        store.create_approval(&approval("a3", "r3", Some(100))).await.unwrap();
        let due = store.due_approvals(100).await.unwrap();
        assert_eq!(due.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["a3"]);
    }
}

on_both! {
    async fn of_concurrent_responders_on_two_nodes_exactly_one_wins(t) {
        let nodes = [t.store.clone(), t.reopen().await];
        for round in 0..5 {
            let id = format!("a{round}");
            nodes[0].create_approval(&approval(&id, "r1", None)).await.unwrap();
            let mut tasks = Vec::new();
            for n in 0..8u64 {
                let store = nodes[(n % 2) as usize].clone();
                let id = id.clone();
                tasks.push(tokio::spawn(async move {
                    let decision = if n % 3 == 0 { ApprovalDecision::Deny } else { ApprovalDecision::ApproveOnce };
                    store.resolve_approval(&id, decide(decision, n)).await.unwrap()
                }));
            }
            let mut winners = Vec::new();
            let mut told = Vec::new();
            for task in tasks {
                match task.await.unwrap() {
                    Resolution::Resolved(a) => winners.push(a),
                    Resolution::AlreadyResolved(a) => told.push(a),
                }
            }
            assert_eq!(winners.len(), 1, "round {round}");
            assert!(told.iter().all(|a| *a == winners[0]), "the losers see the winner");
            assert_eq!(nodes[1].approval(&id).await.unwrap().as_ref(), Some(&winners[0]));
        }
    }
}

on_both! {
    async fn remembered_decisions_are_found_by_tool_and_scope(t) {
        let store = &t.store;
        let with = |id: &str, session: Option<&str>, tool: &str| Approval {
            session_id: session.map(str::to_owned).map(SessionId::new),
            ..of_tool(approval(id, "r1", None), tool)
        };
        assert_eq!(store.remembered_approval(EXEC, Some(&SessionId::new("s1")), None).await.unwrap(), None);
        // Approved once: nothing to remember; denied: nothing either.
        store.create_approval(&with("once", Some("s1"), EXEC)).await.unwrap();
        store.resolve_approval("once", decide(ApprovalDecision::ApproveOnce, 11)).await.unwrap();
        store.create_approval(&with("no", Some("s1"), EXEC)).await.unwrap();
        store.resolve_approval("no", decide(ApprovalDecision::Deny, 12)).await.unwrap();
        assert_eq!(store.remembered_approval(EXEC, Some(&SessionId::new("s1")), None).await.unwrap(), None);
        // For the session: that session only, that tool only.
        store.create_approval(&with("sess", Some("s1"), EXEC)).await.unwrap();
        store.resolve_approval("sess", decide(ApprovalDecision::ApproveSession, 13)).await.unwrap();
        let found = store.remembered_approval(EXEC, Some(&SessionId::new("s1")), None).await.unwrap().unwrap();
        assert_eq!((found.id.as_str(), found.decision), ("sess", Some(ApprovalDecision::ApproveSession)));
        assert_eq!(store.remembered_approval(EXEC, Some(&SessionId::new("s2")), None).await.unwrap(), None);
        assert_eq!(store.remembered_approval(EXEC, None, None).await.unwrap(), None);
        assert_eq!(store.remembered_approval("openclaw:core:write", Some(&SessionId::new("s1")), None).await.unwrap(), None);
        // Always: every session, and the latest rule wins where both hold.
        store.create_approval(&with("always", Some("s2"), EXEC)).await.unwrap();
        store.resolve_approval("always", decide(ApprovalDecision::ApproveAlways, 14)).await.unwrap();
        for session in [Some("s1"), Some("s3"), None] {
            let found = store.remembered_approval(EXEC, session.map(SessionId::new).as_ref(), None).await.unwrap().unwrap();
            assert_eq!(found.id, ApprovalId::new("always"), "{session:?}");
        }
        store.create_approval(&with("sess2", Some("s1"), EXEC)).await.unwrap();
        store.resolve_approval("sess2", decide(ApprovalDecision::ApproveSession, 15)).await.unwrap();
        assert_eq!(store.remembered_approval(EXEC, Some(&SessionId::new("s1")), None).await.unwrap().unwrap().id, ApprovalId::new("sess2"));
        // Another node sees the same rules.
        let other = t.reopen().await;
        assert_eq!(other.remembered_approval(EXEC, Some(&SessionId::new("s3")), None).await.unwrap().unwrap().id, ApprovalId::new("always"));
    }
}

/// `approval` for the tool of catalog id `id`, named as the gateway
/// names it (the id's last segment).
fn of_tool(approval: Approval, id: &str) -> Approval {
    Approval {
        tool_name: id.rsplit(':').next().map(str::to_owned),
        tool_id: Some(id.to_owned()),
        ..approval
    }
}

/// Which approval (by id) the rules give for each of `tools` in session
/// `s1`.
async fn covering(store: &talon_store::Store, tools: &[&str]) -> Vec<Option<String>> {
    let mut found = Vec::new();
    for tool in tools {
        let rule = store
            .remembered_approval(tool, Some(&SessionId::new("s1")), None)
            .await
            .unwrap();
        found.push(rule.map(|a| a.id.to_string()));
    }
    found
}

on_both! {
    async fn a_rule_never_covers_another_tool_of_the_same_name(t) {
        let store = &t.store;
        const CORE: &str = "openclaw:core:write";
        const MCP: &str = "mcp:files:write";
        // Both tools are named `write`; always approving the core one
        // covers it alone, by id (a bare name finds nothing).
        store.create_approval(&of_tool(approval("core", "r1", None), CORE)).await.unwrap();
        store.resolve_approval("core", decide(ApprovalDecision::ApproveAlways, 11)).await.unwrap();
        assert_eq!(
            covering(store, &[CORE, MCP, "write"]).await,
            [Some("core".to_owned()), None, None]
        );
        // An approval naming its tool without an id (no gateway writes
        // one) identifies no tool, and grants nothing.
        let bare = Approval { tool_id: None, ..of_tool(approval("bare", "r1", None), MCP) };
        assert_eq!(bare.tool_name.as_deref(), Some("write"));
        store.create_approval(&bare).await.unwrap();
        store.resolve_approval("bare", decide(ApprovalDecision::ApproveAlways, 12)).await.unwrap();
        assert_eq!(
            covering(store, &[CORE, MCP, "write"]).await,
            [Some("core".to_owned()), None, None]
        );
        // The MCP tool's own rule covers it, and still not the core one.
        store.create_approval(&of_tool(approval("mcp", "r1", None), MCP)).await.unwrap();
        store.resolve_approval("mcp", decide(ApprovalDecision::ApproveSession, 13)).await.unwrap();
        assert_eq!(
            covering(store, &[CORE, MCP, "write"]).await,
            [Some("core".to_owned()), Some("mcp".to_owned()), None]
        );
    }
}

on_both! {
    async fn an_approval_stored_before_tool_id_still_matches_its_rule(t) {
        let store = &t.store;
        // As stored before `toolId`: the catalog id in `toolName`.
        let legacy: Approval = serde_json::from_value(serde_json::json!({
            "id": "old", "runId": "r1", "sessionId": "s1", "kind": "tool",
            "summary": "write {}", "toolName": "openclaw:core:write", "risk": "medium",
            "decisions": ["approve_once", "approve_session", "approve_always", "deny"],
            "reusable": true, "status": "pending", "createdAt": 10,
        }))
        .unwrap();
        assert_eq!((legacy.tool_id.as_deref(), legacy.tool_key()), (None, Some("openclaw:core:write")));
        store.create_approval(&legacy).await.unwrap();
        store.resolve_approval("old", decide(ApprovalDecision::ApproveSession, 11)).await.unwrap();
        // A call of that tool (looked up by catalog id) is covered by it;
        // the bare name and another tool are not.
        assert_eq!(
            covering(store, &["openclaw:core:write", "write", "mcp:files:write"]).await,
            [Some("old".to_owned()), None, None]
        );
        // A later approval in the new shape replaces the rule for the
        // same tool: both shapes are one key.
        store.create_approval(&of_tool(approval("new", "r1", None), "openclaw:core:write")).await.unwrap();
        store.resolve_approval("new", decide(ApprovalDecision::ApproveSession, 12)).await.unwrap();
        assert_eq!(covering(store, &["openclaw:core:write"]).await, [Some("new".to_owned())]);
    }
}

on_both! {
    async fn questions_are_answered_once(t) {
        let store = &t.store;
        let question = Question {
            id: QuestionId::new("q1"),
            run_id: RunId::new("r1"),
            session_id: None,
            tool_call_id: None,
            prompt: "Which branch?".into(),
            choices: Some(vec!["main".into(), "dev".into()]),
            answer_schema: None,
            expires_at: Some(50),
            status: QuestionStatus::Pending,
            answer: None,
            created_at: 1,
            answered_at: None,
        };
        store.create_question(&question).await.unwrap();
        assert_eq!(store.questions(&PendingFilter::default()).await.unwrap(), vec![question.clone()]);
        assert_eq!(store.due_questions(50).await.unwrap(), vec![question.clone()]);
        let answer = |text: &'static str| move |q: &mut Question| {
            q.status = QuestionStatus::Answered;
            q.answer = Some(serde_json::json!(text));
            q.answered_at = Some(5);
        };
        let Resolution::Resolved(answered) = store.resolve_question("q1", answer("dev")).await.unwrap() else { panic!() };
        assert_eq!(answered.answer, Some(serde_json::json!("dev")));
        assert_eq!(store.resolve_question("q1", answer("main")).await.unwrap(), Resolution::AlreadyResolved(answered.clone()));
        assert_eq!(store.question("q1").await.unwrap(), Some(answered));
        assert!(store.due_questions(50).await.unwrap().is_empty());
    }
}
