//! `list_runs`: newest first, every filter, pages that neither skip nor
//! repeat a run when several share a creation time.

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::SessionId;
use talon_protocol::gateway::{Run, RunStatus};
use talon_store::{RunCursor, RunFilter};

use super::runs::run;

fn ids(runs: &[Run]) -> Vec<&str> {
    runs.iter().map(|r| r.id.as_str()).collect()
}

on_both! {
    async fn runs_are_listed_newest_first_filtered_and_paged(t) {
        let store = &t.store;
        // r1..r6: two agents, two sessions, times 10, 20, 20, 20, 30, 40.
        let specs = [
            ("r1", "main", "s1", 10, RunStatus::Completed),
            ("r2", "main", "s2", 20, RunStatus::Failed),
            ("r3", "helper", "s1", 20, RunStatus::Completed),
            ("r4", "main", "s1", 20, RunStatus::Queued),
            ("r5", "helper", "s2", 30, RunStatus::Running),
            ("r6", "main", "s1", 40, RunStatus::Completed),
        ];
        for (id, agent, session, at, status) in specs {
            let r = Run { agent_id: AgentId::new(agent), session_id: Some(SessionId::new(session)), created_at: at, status, ..run(id) };
            store.create_run(&r, None, "", "node", None).await.unwrap();
            store.update_run(&r).await.unwrap();
        }
        let all = RunFilter::default();
        assert_eq!(ids(&store.list_runs(&all, None, 100).await.unwrap()), ["r6", "r5", "r4", "r3", "r2", "r1"]);
        // Pages of two, through the tie at 20.
        let mut seen = Vec::new();
        let mut cursor: Option<(String, u64)> = None;
        loop {
            let after = cursor.as_ref().map(|(id, at)| RunCursor { id, created_at: *at });
            let page = store.list_runs(&all, after, 2).await.unwrap();
            if page.is_empty() {
                break;
            }
            seen.extend(page.iter().map(|r| r.id.as_str().to_owned()));
            let last = page.last().unwrap();
            cursor = Some((last.id.clone().into_string(), last.created_at));
        }
        assert_eq!(seen, ["r6", "r5", "r4", "r3", "r2", "r1"]);
        let cases: [(RunFilter, &[&str]); 6] = [
            (RunFilter { statuses: vec![RunStatus::Completed], ..all.clone() }, &["r6", "r3", "r1"]),
            (RunFilter { statuses: vec![RunStatus::Queued, RunStatus::Running], ..all.clone() }, &["r5", "r4"]),
            (RunFilter { agent_id: Some("helper".into()), ..all.clone() }, &["r5", "r3"]),
            (RunFilter { session_id: Some("s1".into()), agent_id: Some("main".into()), ..all.clone() }, &["r6", "r4", "r1"]),
            (RunFilter { created_after: Some(20), created_before: Some(40), ..all.clone() }, &["r5", "r4", "r3", "r2"]),
            (RunFilter { created_after: Some(u64::MAX), ..all.clone() }, &[]),
        ];
        for (filter, expected) in cases {
            assert_eq!(ids(&store.list_runs(&filter, None, 100).await.unwrap()), expected, "{filter:?}");
        }
        // A cursor with a filter: after r4 (at 20), main's runs.
        let main = RunFilter { agent_id: Some("main".into()), ..all };
        let page = store.list_runs(&main, Some(RunCursor { id: "r4", created_at: 20 }), 100).await.unwrap();
        assert_eq!(ids(&page), ["r2", "r1"]);
    }
}
