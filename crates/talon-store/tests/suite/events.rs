//! The event log: ids in order, filters, pages, the JSON form, retention
//! and expired cursors, reopening, group commit, and the cursor under
//! concurrent writers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use talon_protocol::gateway::bounded::{AgentId, EventId, RunId, SessionId, SessionKey, TaskId};

use serde_json::json;
use talon_protocol::{Event, EventType};
use talon_store::{EventFilter, Retention, StoreError};

use super::backend::Kind;

pub fn event(run: &str, kind: EventType, ts: u64, n: u64) -> Event {
    Event {
        subject: None,
        version: 1,
        id: Default::default(),
        ts,
        kind,
        run_id: Some(RunId::new(run)),
        session_id: Some(SessionId::new("s1")),
        session_key: Some(SessionKey::new(format!("key-{run}"))),
        task_id: None,
        agent_id: Some(AgentId::new("main")),
        request_id: None,
        data: json!({"text": format!("delta {n}")}),
        raw: None,
    }
}

/// Every event after `cursor`, page by page.
pub async fn everything(store: &talon_store::Store, mut cursor: Option<u64>) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let page = store
            .after(cursor, &EventFilter::default(), 10_000)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        cursor = Some(last.id.as_str().parse().unwrap());
        events.extend(page);
    }
    events
}

on_both! {
    async fn appended_events_come_back_in_order_after_any_cursor(t) {
        let store = &t.store;
        let batch: Vec<Event> = (0..5)
            .map(|n| event("r1", EventType::AssistantDelta, 1000 + n, n))
            .collect();
        let stored = store.append(batch.clone()).await.unwrap();
        let ids: Vec<&str> = stored.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3", "4", "5"]);
        assert_eq!(store.after(None, &EventFilter::default(), 100).await.unwrap(), stored);
        assert_eq!(
            store.after(Some(3), &EventFilter::default(), 100).await.unwrap(),
            stored[3..].to_vec()
        );
        assert_eq!(
            store.after(Some(1), &EventFilter::default(), 2).await.unwrap(),
            stored[1..3].to_vec()
        );
        assert!(store.after(Some(5), &EventFilter::default(), 100).await.unwrap().is_empty());
        assert_eq!(store.last_event_id().await.unwrap(), 5);
        assert!(store.append(Vec::new()).await.unwrap().is_empty());
    }
}

on_both! {
    async fn filters_select_by_run_session_agent_and_type(t) {
        let store = &t.store;
        let stored = store
            .append(vec![
                event("r1", EventType::RunStarted, 1, 0),
                event("r2", EventType::RunStarted, 2, 1),
                event("r1", EventType::AssistantDelta, 3, 2),
                event("r1", EventType::RunCompleted, 4, 3),
            ])
            .await
            .unwrap();
        let by_run = EventFilter { run_id: Some("r1".into()), ..Default::default() };
        assert_eq!(
            store.after(None, &by_run, 100).await.unwrap(),
            vec![stored[0].clone(), stored[2].clone(), stored[3].clone()]
        );
        let by_key_and_type = EventFilter {
            session_key: Some("key-r1".into()),
            types: vec![EventType::RunStarted, EventType::RunCompleted],
            ..Default::default()
        };
        assert_eq!(
            store.after(None, &by_key_and_type, 100).await.unwrap(),
            vec![stored[0].clone(), stored[3].clone()]
        );
        let nobody = EventFilter { agent_id: Some("other".into()), ..Default::default() };
        assert!(store.after(None, &nobody, 100).await.unwrap().is_empty());
    }
}

on_both! {
    /// The JSON form is byte for byte the envelope's serialization, for
    /// hostile text too.
    async fn the_json_form_is_the_envelope(t) {
        // Ids refuse ASCII control characters when decoded; free text
        // (the request id, the payload) keeps them.
        let mut odd = event("r\"1\\\u{2028}", EventType::ToolCallCompleted, 7, 0);
        odd.request_id = Some("req \"\\\n\u{2028}".into());
        odd.data = json!({"text": "quote \" backslash \\ nul \u{0} emoji 🦀", "n": [1, 2.5, null]});
        odd.raw = Some(json!({"native": {"deep": true}}));
        odd.task_id = Some(TaskId::new("task-1"));
        odd.session_id = None;
        let stored = t.store.append(vec![odd, event("r2", EventType::RunStarted, 8, 1)]).await.unwrap();
        let with_raw = EventFilter { raw: true, ..Default::default() };
        let raw = t.store.after_json(None, &with_raw, 10).await.unwrap();
        assert_eq!(raw.len(), 2);
        for (raw, event) in raw.iter().zip(&stored) {
            assert_eq!(raw.json, serde_json::to_string(event).unwrap());
            assert_eq!(raw.id.to_string(), event.id.as_str());
            assert_eq!(raw.kind, event.kind.as_str());
        }
        assert_eq!(t.store.after(None, &with_raw, 10).await.unwrap(), stored);
        // Readers not allowed the runtime payload never get it.
        let plain = t.store.after(None, &EventFilter::default(), 10).await.unwrap();
        assert_eq!(plain[0], talon_protocol::Event { raw: None, ..stored[0].clone() });
        let json = t.store.after_json(None, &EventFilter::default(), 10).await.unwrap();
        assert!(!json[0].json.contains("native"), "{}", json[0].json);
    }
}

on_both! {
    /// A page bounded in bytes keeps events while those before hold less
    /// than the budget (the first always, whatever its size), counted in
    /// bytes, not characters, with `raw` only for readers who get it; the
    /// filter still applies, and paging on reaches every event once.
    async fn a_page_bounded_in_bytes_keeps_what_fits_and_always_one(t) {
        let big = |n: u64, text: String| {
            let mut e = event("r1", EventType::AssistantDelta, n, n);
            e.data = json!({"text": text});
            e
        };
        let mut events = vec![
            big(0, "é".repeat(6_000)),
            big(1, "a".repeat(100)),
            big(2, "b".repeat(100)),
            event("r2", EventType::RunStarted, 3, 3),
            big(4, "c".repeat(30_000)),
            big(5, "d".repeat(100)),
        ];
        events[2].raw = Some(json!({"native": "x".repeat(20_000)}));
        let stored = t.store.append(events).await.unwrap();
        let ids = |page: &[talon_store::RawEvent]| page.iter().map(|e| e.id).collect::<Vec<_>>();
        let id = |i: usize| stored[i].id.as_str().parse::<u64>().unwrap();
        let all = EventFilter::default();
        // 12,000 bytes of "é" (6,000 characters) alone fill a 10 KB budget.
        let page = t.store.after_json_within(None, &all, 100, 10_000).await.unwrap();
        assert_eq!(ids(&page), [id(0)]);
        // A generous budget: the limit still applies.
        let page = t.store.after_json_within(None, &all, 3, 1 << 20).await.unwrap();
        assert_eq!(ids(&page), [id(0), id(1), id(2)]);
        // `raw` counts only for a reader that gets it.
        let after = Some(id(0));
        let page = t.store.after_json_within(after, &all, 100, 10_000).await.unwrap();
        assert_eq!(ids(&page), [id(1), id(2), id(3), id(4)]);
        let with_raw = EventFilter { raw: true, ..Default::default() };
        let page = t.store.after_json_within(after, &with_raw, 100, 10_000).await.unwrap();
        assert_eq!(ids(&page), [id(1), id(2)]);
        // Filtered: r2's event is neither counted nor sent.
        let by_run = EventFilter { run_id: Some("r1".into()), ..Default::default() };
        let page = t.store.after_json_within(Some(id(2)), &by_run, 100, 100).await.unwrap();
        assert_eq!(ids(&page), [id(4)]);
        // Paging by a tiny budget reaches every event once, as the
        // unbounded page has them.
        let mut cursor = None;
        let mut seen = Vec::new();
        loop {
            let page = t.store.after_json_within(cursor, &with_raw, 100, 1).await.unwrap();
            let Some(last) = page.last() else { break };
            assert_eq!(page.len(), 1);
            cursor = Some(last.id);
            seen.extend(page.into_iter().map(|e| e.json));
        }
        let unbounded: Vec<String> = t.store.after_json(None, &with_raw, 100).await.unwrap().into_iter().map(|e| e.json).collect();
        assert_eq!(seen, unbounded);
    }
}

on_both! {
    async fn retention_expires_old_cursors_instead_of_shortening_streams(t) {
        let store = &t.store;
        let stored = store
            .append((0..10).map(|n| event("r1", EventType::AssistantDelta, 1_000 * n, n)).collect())
            .await
            .unwrap();
        // Keep the newest 6: events 1..=4 go.
        let keep_six = Retention { max_age: None, max_events: Some(6) };
        assert_eq!(store.prune(keep_six, 10_000).await.unwrap(), 4);
        for (cursor, asked) in [(Some(2), 2), (None, 0)] {
            match store.after(cursor, &EventFilter::default(), 100).await {
                Err(StoreError::CursorExpired { cursor, oldest: 5 }) => assert_eq!(cursor, asked),
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                store.after_json(cursor, &EventFilter::default(), 100).await,
                Err(StoreError::CursorExpired { oldest: 5, .. })
            ));
        }
        // A cursor at the floor still reads everything kept.
        assert_eq!(
            store.after(Some(4), &EventFilter::default(), 100).await.unwrap(),
            stored[4..].to_vec()
        );
        // By age: older than 3 s at t = 10 s removes ts < 7000.
        let three_seconds = Retention { max_age: Some(Duration::from_secs(3)), max_events: None };
        assert_eq!(store.prune(three_seconds, 10_000).await.unwrap(), 3);
        assert!(matches!(
            store.after(Some(4), &EventFilter::default(), 100).await,
            Err(StoreError::CursorExpired { oldest: 8, .. })
        ));
        // Ids keep growing after pruning everything.
        store.prune(Retention { max_age: None, max_events: Some(0) }, 10_000).await.unwrap();
        assert_eq!(store.last_event_id().await.unwrap(), 10);
        let next = store.append(vec![event("r3", EventType::RunStarted, 20_000, 0)]).await.unwrap();
        assert_eq!(next[0].id, EventId::new("11"));
        assert_eq!(store.prune(Retention::default(), 10_000).await.unwrap(), 0);
    }
}

on_both! {
    async fn the_log_survives_reopening_and_migrations_run_once(t) {
        let stored = t.store.append(vec![event("r1", EventType::RunStarted, 1, 0)]).await.unwrap();
        t.store.close().await;
        let again = t.reopen().await;
        assert_eq!(again.after(None, &EventFilter::default(), 10).await.unwrap(), stored);
        let next = again.append(vec![event("r1", EventType::RunCompleted, 2, 1)]).await.unwrap();
        assert_eq!(next[0].id, EventId::new("2"));
        if t.kind == Kind::Sqlite {
            assert!(t.dir.path().join("talon.db").is_file());
        }
    }
}

on_both! {
    /// Many small appends at once share commits, and each gets its own
    /// contiguous ids.
    async fn concurrent_appends_share_commits_and_keep_their_order(t) {
        let mut tasks = Vec::new();
        for task in 0..64u64 {
            let store = t.store.clone();
            tasks.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for n in 0..8 {
                    let batch = (0..1 + n % 3)
                        .map(|i| event(&format!("r{task}"), EventType::AssistantDelta, n, i))
                        .collect();
                    let stored = store.append(batch).await.unwrap();
                    let first: u64 = stored[0].id.as_str().parse().unwrap();
                    for (i, e) in stored.iter().enumerate() {
                        assert_eq!(e.id.as_str().parse::<u64>().unwrap(), first + i as u64);
                    }
                    ids.extend(stored.into_iter().map(|e| e.id.as_str().parse::<u64>().unwrap()));
                }
                ids
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            let ids = task.await.unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "one appender's ids go up");
            all.extend(ids);
        }
        all.sort_unstable();
        let expected: Vec<u64> = (1..=all.len() as u64).collect();
        assert_eq!(all, expected);
        assert_eq!(everything(&t.store, None).await.len(), all.len());
    }
}

on_both! {
    /// Two stores on one database (two gateway nodes) append while a reader
    /// follows with its cursor: the reader sees every event exactly once,
    /// and never an id below one it has already seen.
    async fn a_following_reader_never_skips_an_event_committed_later(t) {
        let nodes = [t.store.clone(), t.reopen().await];
        let mut writers = Vec::new();
        for (n, store) in nodes.iter().enumerate() {
            for w in 0..4 {
                let store = store.clone();
                writers.push(tokio::spawn(async move {
                    let mut count = 0;
                    for i in 0..40u64 {
                        let batch = (0..1 + i % 4)
                            .map(|k| event(&format!("n{n}w{w}"), EventType::AssistantDelta, i, k))
                            .collect::<Vec<_>>();
                        count += store.append(batch).await.unwrap().len();
                    }
                    count
                }));
            }
        }
        // Set once every append returned: the reader stops at the end of
        // the log after that.
        let written_all = Arc::new(AtomicBool::new(false));
        let reader = {
            let store = t.store.clone();
            let written_all = written_all.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut cursor = None;
                loop {
                    // Read before the page: when set, the page holds the end.
                    let all_written = written_all.load(Ordering::SeqCst);
                    let page = store.after(cursor, &EventFilter::default(), 97).await.unwrap();
                    match page.last() {
                        Some(last) => {
                            cursor = Some(last.id.as_str().parse::<u64>().unwrap());
                            seen.extend(page.iter().map(|e| e.id.as_str().parse::<u64>().unwrap()));
                        }
                        // Nothing is left to come.
                        None if all_written => break,
                        // Not a wait on a condition: a following reader's
                        // poll interval (what it follows is the test).
                        None => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
                seen
            })
        };
        let mut written = 0;
        for w in writers {
            written += w.await.unwrap();
        }
        written_all.store(true, Ordering::SeqCst);
        let seen = reader.await.unwrap();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "ids only go up");
        let unique: BTreeSet<u64> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len(), "no event twice");
        let stored: BTreeSet<u64> = everything(&t.store, None)
            .await
            .iter()
            .map(|e| e.id.as_str().parse().unwrap())
            .collect();
        assert_eq!(stored.len(), written);
        assert_eq!(unique, stored, "the reader saw every event");
    }
}

on_both! {
    /// A session's key lives with the session: 2,000 events under a
    /// 256-character key take no more room than under a 1-character one,
    /// and still read back with it; an event whose session is not stored
    /// under its key keeps the key itself.
    async fn a_session_key_is_stored_with_its_session_not_with_each_event(t) {
        let store = &t.store;
        let long = "k".repeat(256);
        let session = crate::suite::sessions::session;
        store.create_session(&session("s-long", &long, 1)).await.unwrap();
        store.create_session(&session("s-short", "k", 1)).await.unwrap();
        let batch = |sid: &str, key: &str| -> Vec<Event> {
            (0..2_000)
                .map(|n| Event {
                    session_id: Some(SessionId::new(sid)),
                    session_key: Some(SessionKey::new(key)),
                    ..event("r1", EventType::AssistantDelta, n, n)
                })
                .collect()
        };
        let before = store.stored_bytes().await.unwrap();
        store.append(batch("s-short", "k")).await.unwrap();
        let middle = store.stored_bytes().await.unwrap();
        store.append(batch("s-long", &long)).await.unwrap();
        let after = store.stored_bytes().await.unwrap();
        let (short, long_growth) = (middle - before, after - middle);
        assert!(
            long_growth <= short + short / 5,
            "2,000 events took {long_growth} bytes under a long key, {short} under a short one"
        );
        let filter = EventFilter { session_key: Some(long.clone()), ..EventFilter::default() };
        let read = store.after(None, &filter, 10_000).await.unwrap();
        assert_eq!(read.len(), 2_000);
        assert!(read.iter().all(|e| e.session_key.as_ref().map(SessionKey::as_str) == Some(long.as_str())));
        // No such session: the event keeps its key.
        let orphan = Event { session_id: Some(SessionId::new("s-none")), ..event("r9", EventType::RunStarted, 1, 1) };
        let stored = store.append(vec![orphan.clone()]).await.unwrap();
        let filter = EventFilter { run_id: Some("r9".into()), ..EventFilter::default() };
        assert_eq!(
            store.after(None, &filter, 10).await.unwrap(),
            vec![Event { id: stored[0].id.clone(), ..orphan }]
        );
    }
}

on_both! {
    async fn a_page_counted_from_the_end_is_the_windows_tail_in_order(t) {
        let store = &t.store;
        // Run a's events interleaved with run b's: ids 1..=20, a's odd.
        let batch: Vec<Event> = (0..20)
            .map(|n| event(if n % 2 == 0 { "a" } else { "b" }, EventType::AssistantDelta, n, n))
            .collect();
        store.append(batch).await.unwrap();
        let a = EventFilter { run_id: Some("a".into()), ..EventFilter::default() };
        let ids = |events: Vec<Event>| -> Vec<u64> {
            events.iter().map(|e| e.id.as_str().parse().unwrap()).collect()
        };
        // (after, before, last) and the ids read.
        type Case = (Option<u64>, Option<u64>, u32, &'static [u64]);
        let cases: [Case; 6] = [
            (None, None, 3, &[15, 17, 19]),
            (None, Some(15), 3, &[9, 11, 13]),
            (None, Some(6), 3, &[1, 3, 5]),
            (None, Some(4), 3, &[1, 3]),
            (Some(4), Some(12), 10, &[5, 7, 9, 11]),
            (None, Some(1), 3, &[]),
        ];
        for (after, before, last, expected) in cases {
            let window = EventFilter { before, ..a.clone() };
            let got = ids(store.last_before(after, &window, last).await.unwrap());
            assert_eq!(got, expected, "after {after:?} before {before:?} last {last}");
        }
        // Read forward, the window ends at `before` too, in the query (a
        // page of 3 is 3 events of the window, not 3 cut at its end).
        let window = EventFilter { before: Some(12), ..a.clone() };
        assert_eq!(ids(store.after(Some(4), &window, 3).await.unwrap()), [5, 7, 9]);
        assert_eq!(ids(store.after(Some(8), &window, 3).await.unwrap()), [9, 11]);
        let raw = store.after_json_within(Some(4), &window, 10, u64::MAX).await.unwrap();
        assert_eq!(raw.iter().map(|e| e.id).collect::<Vec<u64>>(), [5, 7, 9, 11]);
        // Paging back from the end reads every event of the run once.
        let mut pages = Vec::new();
        let mut before = None;
        loop {
            let window = EventFilter { before, ..a.clone() };
            let page = ids(store.last_before(None, &window, 4).await.unwrap());
            let Some(&first) = page.first() else { break };
            pages.splice(0..0, page);
            before = Some(first);
        }
        assert_eq!(pages, (0..10).map(|n| 2 * n + 1).collect::<Vec<u64>>());
    }
}
