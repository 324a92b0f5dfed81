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

on_both! {
    async fn the_text_filter_matches_summaries_ascii_case_aside_and_literally(t) {
        let store = &t.store;
        let specs = [
            ("r1", Some("Fix the BUILD"), 10),
            ("r2", Some("100% of _the_ tests"), 20),
            ("r3", Some("Grüße an ÄRZTE"), 30),
            ("r4", None, 40),
        ];
        for (id, summary, at) in specs {
            let r = Run { summary: summary.map(str::to_owned), created_at: at, ..run(id) };
            store.create_run(&r, None, "", "node", None).await.unwrap();
        }
        let text = |t: &str| RunFilter { text: Some(t.into()), ..RunFilter::default() };
        let cases: [(&str, &[&str]); 8] = [
            ("build", &["r1"]),
            ("fix THE", &["r1"]),
            ("the", &["r2", "r1"]),
            // `%` and `_` are themselves, not patterns.
            ("100%", &["r2"]),
            ("0%_", &[]),
            ("_the_", &["r2"]),
            // Only ASCII letters fold: the rest is compared as it is.
            ("ärzte", &[]),
            ("ÄRZTE", &["r3"]),
        ];
        for (needle, expected) in cases {
            assert_eq!(ids(&store.list_runs(&text(needle), None, 100).await.unwrap()), expected, "{needle}");
        }
    }
}

on_both! {
    async fn usage_is_tallied_by_day_agent_and_model_over_the_window(t) {
        use talon_protocol::gateway::usage::DAY_MS;
        use talon_protocol::gateway::{Usage, UsageTally};
        let store = &t.store;
        let tokens = |n: u64| Usage { input_tokens: Some(n), output_tokens: Some(1), ..Usage::default() };
        let specs = [
            ("r1", "main", Some("openai/a"), DAY_MS + 1, Some(tokens(10))),
            ("r2", "main", Some("openai/a"), DAY_MS + 2, Some(tokens(5))),
            ("r3", "helper", Some("openai/b"), 2 * DAY_MS, None),
            ("r4", "main", None, 3 * DAY_MS, None),
        ];
        for (id, agent, model, at, usage) in specs {
            let r = Run { agent_id: AgentId::new(agent), created_at: at, usage, ..run(id) };
            store.create_run(&r, None, "", "node", None).await.unwrap();
            store.update_run(&r).await.unwrap();
            if let Some(model) = model {
                assert!(store.set_run_model(&r.id, model).await.unwrap());
            }
        }
        let tally = |filter: talon_store::UsageFilter| async move {
            let mut tally = UsageTally::default();
            store.tally_usage(&filter, &mut tally).await.unwrap();
            let summary = tally.finish((filter.created_after, filter.created_before));
            summary.rows.iter().map(|r| (r.day / DAY_MS, r.agent_id.as_str().to_owned(), r.model.clone(), r.runs, r.usage.input_tokens)).collect::<Vec<_>>()
        };
        let window = talon_store::UsageFilter { created_after: DAY_MS, created_before: 3 * DAY_MS, ..Default::default() };
        assert_eq!(tally(window.clone()).await, [
            (2, "helper".to_owned(), Some("openai/b".to_owned()), 1, None),
            (1, "main".to_owned(), Some("openai/a".to_owned()), 2, Some(15)),
        ]);
        let main = talon_store::UsageFilter { agent_id: Some("main".into()), created_before: 4 * DAY_MS, ..window };
        assert_eq!(tally(main).await, [
            (3, "main".to_owned(), None, 1, None),
            (1, "main".to_owned(), Some("openai/a".to_owned()), 2, Some(15)),
        ]);
        // The model is read back with the run.
        let r1 = store.run(&talon_protocol::gateway::bounded::RunId::new("r1")).await.unwrap().unwrap();
        assert_eq!(r1.model.as_deref(), Some("openai/a"));
    }
}
