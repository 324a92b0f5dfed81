//! Sessions, their messages, forks.

use talon_protocol::gateway::bounded::AgentId;
use talon_protocol::gateway::bounded::{MessageId, RunId, SessionId, SessionKey, Subject};
use talon_protocol::gateway::{Message, MessageRole, Session};
use talon_store::StoreError;

pub fn session(id: &str, key: &str, created_at: u64) -> Session {
    Session {
        subject: None,
        id: SessionId::new(id),
        key: SessionKey::new(key),
        agent_id: AgentId::new("main"),
        parent_id: None,
        forked_at_message_id: None,
        metadata: Default::default(),
        created_at,
        updated_at: created_at,
    }
}

pub fn message(session_id: &str, id: &str, role: MessageRole, text: &str) -> Message {
    Message {
        id: MessageId::new(id),
        session_id: SessionId::new(session_id),
        run_id: Some(RunId::new("r1")),
        role,
        text: Some(text.into()),
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at: 1,
    }
}

on_both! {
    async fn a_key_names_one_session_per_subject_and_lists_keep_to_their_owner(t) {
        let store = &t.store;
        let of = |subject: Option<&str>, id: &str, agent: &str, at: u64| Session {
            subject: subject.map(Subject::new),
            agent_id: AgentId::new(agent),
            ..session(id, "user-chat", at)
        };
        let free = of(None, "s0", "main", 1);
        let a = of(Some("alice"), "sa", "main", 2);
        let b = of(Some("bob"), "sb", "helper", 3);
        for s in [&free, &a, &b] {
            store.create_session(s).await.unwrap();
        }
        // The same key again within one subject is taken.
        assert!(matches!(
            store.create_session(&of(Some("alice"), "sa2", "main", 4)).await,
            Err(StoreError::Exists { kind: "session", .. })
        ));
        assert_eq!(
            (
                store.session_by_key(None, "user-chat").await.unwrap(),
                store.session_by_key(Some("alice"), "user-chat").await.unwrap(),
                store.session_by_key(Some("bob"), "user-chat").await.unwrap(),
                store.session_by_key(Some("carol"), "user-chat").await.unwrap(),
            ),
            (Some(free.clone()), Some(a.clone()), Some(b.clone()), None)
        );
        let owner = |subject: Option<&str>, agents: Option<&[&str]>| talon_store::Owner {
            subject: subject.map(Into::into),
            agents: agents.map(|a| a.iter().map(|s| s.to_string()).collect()),
        };
        assert_eq!(
            (
                store.sessions(None, &owner(None, None), None, 10).await.unwrap(),
                store.sessions(None, &owner(Some("alice"), None), None, 10).await.unwrap(),
                store.sessions(None, &owner(None, Some(&["helper"])), None, 10).await.unwrap(),
                store.sessions(None, &owner(Some("bob"), Some(&["main"])), None, 10).await.unwrap(),
            ),
            (vec![free.clone(), a.clone(), b.clone()], vec![a.clone()], vec![b.clone()], vec![])
        );
    }
}

on_both! {
    async fn sessions_are_found_by_id_and_key_and_paged(t) {
        let store = &t.store;
        let a = session("s1", "main:alpha", 1);
        let b = Session { agent_id: AgentId::new("other"), ..session("s2", "other:beta", 2) };
        let c = session("s3", "main:gamma", 3);
        for s in [&a, &b, &c] {
            store.create_session(s).await.unwrap();
        }
        assert!(matches!(
            store.create_session(&session("s9", "main:alpha", 9)).await,
            Err(StoreError::Exists { kind: "session", .. })
        ));
        assert!(matches!(store.create_session(&a).await, Err(StoreError::Exists { .. })));
        assert_eq!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s2")).await.unwrap(), Some(b.clone()));
        assert_eq!(store.session_by_key(None,"main:gamma").await.unwrap(), Some(c.clone()));
        assert_eq!(store.session_by_key(None,"nope").await.unwrap(), None);
        assert_eq!(store.sessions(None, &talon_store::Owner::default(), None, 10).await.unwrap(), vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(store.sessions(None, &talon_store::Owner::default(), None, 2).await.unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(store.sessions(None, &talon_store::Owner::default(), Some("s2"), 2).await.unwrap(), vec![c.clone()]);
        assert_eq!(store.sessions(Some(&AgentId::new("main")), &talon_store::Owner::default(), None, 10).await.unwrap(), vec![a.clone(), c.clone()]);
        let mut meta = a.clone();
        meta.metadata.insert("topic".into(), serde_json::json!("billing"));
        meta.updated_at = 50;
        meta.key = SessionKey::new("ignored:new-key");
        assert!(store.update_session(&meta).await.unwrap());
        let stored = store.session(&talon_protocol::gateway::bounded::SessionId::new("s1")).await.unwrap().unwrap();
        assert_eq!(stored, Session { key: a.key.clone(), ..meta });
        assert!(!store.update_session(&session("ghost", "g", 1)).await.unwrap());
    }
}

on_both! {
    async fn messages_keep_their_order_and_page_by_id(t) {
        let store = &t.store;
        store.create_session(&session("s1", "k1", 1)).await.unwrap();
        let first = vec![
            message("s1", "m1", MessageRole::User, "hello"),
            message("s1", "m2", MessageRole::Assistant, "hi"),
        ];
        assert_eq!(store.append_messages(&SessionId::new("s1"), &first).await.unwrap(), vec![1, 2]);
        let compaction = message("s1", "m3", MessageRole::Compaction, "summary of m1..m2");
        assert_eq!(store.append_messages(&SessionId::new("s1"), std::slice::from_ref(&compaction)).await.unwrap(), vec![3]);
        let all = store.messages(&SessionId::new("s1"), None, 10).await.unwrap();
        let texts: Vec<_> = all.iter().map(|m| (m.seq, m.message.id.as_str())).collect();
        assert_eq!(texts, [(1, "m1"), (2, "m2"), (3, "m3")]);
        assert_eq!(all[2].message, compaction);
        let after = store.messages(&SessionId::new("s1"), Some("m1"), 1).await.unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].message.id, MessageId::new("m2"));
        assert!(matches!(
            store.messages(&SessionId::new("s1"), Some("zz"), 1).await,
            Err(StoreError::NotFound { kind: "message", .. })
        ));
        // A message id is unique: the whole append fails, nothing is kept.
        let dup = vec![message("s1", "m4", MessageRole::User, "x"), message("s1", "m1", MessageRole::User, "y")];
        assert!(store.append_messages(&SessionId::new("s1"), &dup).await.is_err());
        assert_eq!(store.messages(&SessionId::new("s1"), None, 10).await.unwrap().len(), 3);
    }
}

on_both! {
    async fn concurrent_appends_to_one_session_take_distinct_positions(t) {
        t.store.create_session(&session("s1", "k1", 1)).await.unwrap();
        let mut tasks = Vec::new();
        for n in 0..12 {
            let store = t.store.clone();
            tasks.push(tokio::spawn(async move {
                let m = message("s1", &format!("m{n}"), MessageRole::User, "x");
                store.append_messages(&SessionId::new("s1"), &[m]).await.unwrap()
            }));
        }
        let mut seqs = Vec::new();
        for task in tasks {
            seqs.extend(task.await.unwrap());
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=12).collect::<Vec<u64>>());
    }
}

on_both! {
    async fn a_fork_copies_the_parent_up_to_a_message(t) {
        let store = &t.store;
        store.create_session(&session("s1", "k1", 1)).await.unwrap();
        let msgs: Vec<Message> = (1..=4)
            .map(|n| message("s1", &format!("m{n}"), MessageRole::User, &format!("turn {n}")))
            .collect();
        store.append_messages(&SessionId::new("s1"), &msgs).await.unwrap();
        let fork = Session {
            parent_id: Some(SessionId::new("s1")),
            forked_at_message_id: Some(MessageId::new("m2")),
            ..session("s2", "k2", 5)
        };
        assert_eq!(store.fork_session(&fork).await.unwrap(), 2);
        assert_eq!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s2")).await.unwrap(), Some(fork.clone()));
        let copied = store.messages(&SessionId::new("s2"), None, 10).await.unwrap();
        let got: Vec<_> = copied.iter().map(|m| (m.message.id.as_str(), m.message.session_id.as_str(), m.message.text.as_deref())).collect();
        assert_eq!(got, [("s2.1", "s2", Some("turn 1")), ("s2.2", "s2", Some("turn 2"))]);
        // The fork goes on by itself; the parent is untouched.
        store.append_messages(&SessionId::new("s2"), &[message("s2", "f3", MessageRole::User, "new")]).await.unwrap();
        assert_eq!(store.messages(&SessionId::new("s1"), None, 10).await.unwrap().len(), 4);
        // A whole-session fork, and the failures.
        let whole = Session { parent_id: Some(SessionId::new("s1")), ..session("s3", "k3", 6) };
        assert_eq!(store.fork_session(&whole).await.unwrap(), 4);
        let bad_message = Session { parent_id: Some(SessionId::new("s1")), forked_at_message_id: Some(MessageId::new("nope")), ..session("s4", "k4", 7) };
        assert!(matches!(store.fork_session(&bad_message).await, Err(StoreError::NotFound { kind: "message", .. })));
        let no_parent = Session { parent_id: Some(SessionId::new("ghost")), ..session("s5", "k5", 7) };
        assert!(matches!(store.fork_session(&no_parent).await, Err(StoreError::NotFound { kind: "session", .. })));
        let taken_key = Session { parent_id: Some(SessionId::new("s1")), ..session("s6", "k1", 7) };
        assert!(matches!(store.fork_session(&taken_key).await, Err(StoreError::Exists { .. })));
        assert_eq!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s4")).await.unwrap(), None);
        assert_eq!(store.session(&talon_protocol::gateway::bounded::SessionId::new("s6")).await.unwrap(), None);
    }
}
