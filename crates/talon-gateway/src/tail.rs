//! The node's live tail of the event log: one reader follows the store
//! and keeps the most recently committed envelopes in memory, so that a
//! thousand live subscribers of one run cost one store read per commit,
//! not a thousand. Every event in the tail was read from the store, so a
//! subscriber still never sees an uncommitted event; the tail holds every
//! event after its `base` cursor, in order, so a subscriber whose cursor is
//! at or after `base` reads from it with no gap and no duplicate, and one
//! whose cursor is older reads the store as before. Each entry keeps its
//! envelope rendered as a ready-to-send [`Delivery`] without `raw`, and a
//! second one with `raw` up to [`RAW_CAP`] (for `admin` readers); a reader
//! that wants a `raw` the tail dropped reads the store.

use std::collections::VecDeque;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Deserialize;
use talon_store::{EventFilter, RawEvent, Store};

use crate::frame::Delivery;

/// Envelopes the tail keeps, at most.
const CAPACITY: usize = 4_096;
/// Bytes of envelopes the tail keeps, at most (beyond one): the tail only
/// has to cover how far live subscribers lag, and a node's memory must
/// stay flat however many events pass through it.
const BYTES: usize = 2 * 1024 * 1024;
/// Events read from the store per page.
const PAGE: u32 = 1_000;
/// The largest `raw` payload the tail keeps; larger ones are read from
/// the store by the readers that want them.
const RAW_CAP: usize = 64 * 1024;
/// How often the tail looks for events other nodes committed, on a store
/// that does not announce every commit; also how long it waits before
/// trying again after a failed read.
const POLL: Duration = Duration::from_millis(250);

/// How an entry serves readers with and without `raw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// No `raw`: the text serves every reader.
    Plain,
    /// `raw` was kept: readers with and without it get their own frames.
    WithRaw,
    /// The text is the envelope without `raw`, which was over [`RAW_CAP`]:
    /// a reader that wants it reads the store.
    RawDropped,
    /// The envelope's keys could not be read: every reader covering it
    /// reads the store.
    Unreadable,
}

/// One envelope, rendered for readers with and without `raw`, and the
/// fields subscribers filter on.
#[derive(Debug)]
struct Entry {
    id: u64,
    kind: String,
    form: Form,
    /// The envelope without `raw` (`None` when unreadable).
    plain: Option<Delivery>,
    /// The envelope with `raw`, when it has one the tail kept.
    with_raw: Option<Delivery>,
    run_id: Option<String>,
    session_key: Option<String>,
    agent_id: Option<String>,
    subject: Option<String>,
}

/// The envelope fields a filter reads, and `raw`'s exact text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Keys<'a> {
    run_id: Option<String>,
    session_key: Option<String>,
    agent_id: Option<String>,
    subject: Option<String>,
    #[serde(borrow)]
    raw: Option<&'a serde_json::value::RawValue>,
}

impl Entry {
    /// Reads an envelope the store gave with `raw`. The store appends
    /// `raw` last (`...,"raw":<raw>}`), so the form without it is the text
    /// before that suffix, closed.
    fn new(event: RawEvent) -> Self {
        let Ok(keys) = serde_json::from_str::<Keys<'_>>(&event.json) else {
            return Self {
                id: event.id,
                kind: event.kind,
                form: Form::Unreadable,
                plain: None,
                with_raw: None,
                run_id: None,
                session_key: None,
                agent_id: None,
                subject: None,
            };
        };
        let render = |json: &str| Delivery::new(event.id, &event.kind, json);
        let (form, plain, with_raw) = match keys.raw.map(|raw| raw.get()) {
            None => (Form::Plain, render(&event.json), None),
            Some(raw) => {
                let suffix = format!(",\"raw\":{raw}}}");
                match event.json.strip_suffix(&suffix) {
                    Some(head) if raw.len() <= RAW_CAP => (
                        Form::WithRaw,
                        render(&format!("{head}}}")),
                        Some(render(&event.json)),
                    ),
                    Some(head) => (Form::RawDropped, render(&format!("{head}}}")), None),
                    None => (Form::RawDropped, render(&without_raw(&event.json)), None),
                }
            }
        };
        Self {
            id: event.id,
            kind: event.kind,
            form,
            plain: Some(plain),
            with_raw,
            run_id: keys.run_id,
            session_key: keys.session_key,
            agent_id: keys.agent_id,
            subject: keys.subject,
        }
    }

    /// The memory the entry holds, roughly.
    fn size(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        std::mem::size_of::<Self>()
            + self.kind.len()
            + self.plain.as_ref().map_or(0, Delivery::size)
            + self.with_raw.as_ref().map_or(0, Delivery::size)
            + text(&self.run_id)
            + text(&self.session_key)
            + text(&self.agent_id)
            + text(&self.subject)
    }

    /// The envelope for a reader, `None` when the tail cannot give it.
    fn for_reader(&self, raw: bool) -> Option<Delivery> {
        match (self.form, raw) {
            (Form::Unreadable, _) | (Form::RawDropped, true) => None,
            (Form::WithRaw, true) => self.with_raw.clone(),
            _ => self.plain.clone(),
        }
    }
}

/// The envelope re-encoded without `raw` (only for an envelope not in the
/// store's own layout).
fn without_raw(json: &str) -> String {
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(json) {
        Ok(mut envelope) => {
            envelope.remove("raw");
            serde_json::to_string(&envelope).unwrap_or_default()
        }
        Err(_) => String::new(),
    }
}

#[derive(Debug, Default)]
struct Buffer {
    /// Every event after this id is in `entries` (up to the last one).
    base: u64,
    entries: VecDeque<Entry>,
    /// The entries' size, as [`Entry::size`] counts it.
    bytes: usize,
    /// Whether the tail is following the store. It sleeps (and serves no
    /// one) while no stream is open, so an idle node spends nothing on it.
    awake: bool,
}

impl Buffer {
    fn push(&mut self, entry: Entry) {
        self.bytes += entry.size();
        self.entries.push_back(entry);
        while self.entries.len() > CAPACITY || (self.bytes > BYTES && self.entries.len() > 1) {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.size();
                self.base = old.id;
            }
        }
    }
}

/// The node's tail (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    buffer: Arc<RwLock<Buffer>>,
    latest: tokio::sync::watch::Receiver<u64>,
    /// How many streams follow the tail.
    followers: Arc<tokio::sync::watch::Sender<usize>>,
}

/// One stream's hold on the tail: the tail follows the store while any
/// exists.
#[derive(Debug)]
pub(crate) struct Follower {
    tail: Tail,
}

impl std::ops::Deref for Follower {
    type Target = Tail;
    fn deref(&self) -> &Tail {
        &self.tail
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.tail
            .followers
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Waits for a commit, or until `deadline` when there is one.
async fn commit_or(
    deadline: Option<tokio::time::Instant>,
    committed: &mut tokio::sync::watch::Receiver<u64>,
) {
    match deadline {
        Some(deadline) => {
            let _ = tokio::time::timeout_at(deadline, committed.changed()).await;
        }
        None => {
            // A closed channel (the store gone) never wakes: closing ends
            // the tail.
            if committed.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Tail {
    /// Starts the tail over `store`: it follows the store while a stream
    /// holds a [`Follower`], from the last event committed when the first
    /// one came, until `closing` turns true.
    pub(crate) fn start(store: Store, mut closing: tokio::sync::watch::Receiver<bool>) -> Self {
        let buffer = Arc::new(RwLock::new(Buffer::default()));
        let (latest_tx, latest) = tokio::sync::watch::channel(0);
        let (followers, mut followed) = tokio::sync::watch::channel(0usize);
        let writer = buffer.clone();
        let reset = move |base: u64, awake: bool| {
            let mut buffer = writer
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *buffer = Buffer {
                base,
                awake,
                ..Buffer::default()
            };
            drop(buffer);
        };
        let writer = buffer.clone();
        tokio::spawn(async move {
            let mut committed = store.committed();
            // Told of every commit (SQLite): the tail reads the store only
            // when one was made, and an idle gateway's tail sleeps.
            let polls = !store.announces_every_commit();
            let mut cursor = 0;
            let all = EventFilter {
                raw: true,
                ..EventFilter::default()
            };
            loop {
                if *followed.borrow_and_update() == 0 {
                    reset(0, false);
                    tokio::select! {
                        _ = followed.wait_for(|n| *n > 0) => {}
                        _ = closing.wait_for(|closing| *closing) => return,
                    }
                    committed.borrow_and_update();
                    match store.last_event_id().await {
                        Ok(last) => {
                            cursor = last;
                            reset(last, true);
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the live tail cannot start; streams read the store");
                            tokio::time::sleep(POLL).await;
                            continue;
                        }
                    }
                }
                committed.borrow_and_update();
                match store.after_json(Some(cursor), &all, PAGE).await {
                    Ok(page) if !page.is_empty() => {
                        let full = page.len() as u32 >= PAGE;
                        cursor = page.last().map_or(cursor, |e| e.id);
                        let mut buffer = writer
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        for event in page {
                            buffer.push(Entry::new(event));
                        }
                        drop(buffer);
                        latest_tx.send_replace(cursor);
                        if full {
                            continue;
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        // A pruned range or a store outage: start the tail
                        // again after the last committed event; older
                        // cursors read the store.
                        tracing::warn!(%error, "the live tail lost the log; restarting it");
                        if let Ok(last) = store.last_event_id().await {
                            reset(last, true);
                            cursor = last;
                        }
                    }
                }
                // Wait for a commit (or the poll), or for the last stream
                // to go: streams coming and going do not read the store.
                let deadline = polls.then(|| tokio::time::Instant::now() + POLL);
                loop {
                    tokio::select! {
                        _ = commit_or(deadline, &mut committed) => break,
                        _ = followed.changed() => {
                            if *followed.borrow() == 0 {
                                break;
                            }
                        }
                        _ = closing.wait_for(|closing| *closing) => return,
                    }
                }
            }
        });
        Self {
            buffer,
            latest,
            followers: Arc::new(followers),
        }
    }

    /// A hold on the tail for one stream.
    pub(crate) fn follow(&self) -> Follower {
        self.followers.send_modify(|n| *n += 1);
        Follower { tail: self.clone() }
    }

    /// Events after `cursor` matching `filter`, at most `limit` and,
    /// past the first, while those before hold less than `max_bytes`, and
    /// the id up to which the tail was looked through (the cursor to go on
    /// from), when the tail covers that cursor (`None`: read the store).
    pub(crate) fn after(
        &self,
        cursor: Option<u64>,
        filter: &EventFilter,
        limit: usize,
        max_bytes: usize,
    ) -> Option<(Vec<Delivery>, u64)> {
        let cursor = cursor.unwrap_or(0);
        let buffer = self
            .buffer
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !buffer.awake || cursor < buffer.base {
            return None;
        }
        let skip = buffer.entries.partition_point(|entry| entry.id <= cursor);
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let mut events = Vec::new();
        let mut through = cursor;
        let mut bytes = 0;
        for entry in buffer.entries.range(skip..) {
            if events.len() >= limit || bytes >= max_bytes {
                break;
            }
            through = entry.id;
            let wanted = (filter.run_id.is_none() || entry.run_id == filter.run_id)
                && (filter.session_key.is_none() || entry.session_key == filter.session_key)
                && (filter.agent_id.is_none() || entry.agent_id == filter.agent_id)
                && (types.is_empty() || types.contains(&entry.kind.as_str()))
                && filter.before.is_none_or(|before| entry.id < before)
                // The store's rule (`Owner`): a subject's events are its
                // sessions' (the envelope's `subject`), an agent's name it.
                && (filter.owner.subject.is_none() || entry.subject == filter.owner.subject)
                && filter.owner.agents.as_ref().is_none_or(|agents| {
                    entry
                        .agent_id
                        .as_ref()
                        .is_some_and(|agent| agents.contains(agent))
                });
            if entry.form == Form::Unreadable {
                return None;
            }
            if wanted {
                let delivery = entry.for_reader(filter.raw)?;
                bytes += delivery.size();
                events.push(delivery);
            }
        }
        Some((events, through))
    }

    /// The id of the last event in the tail, watched.
    /// Drops every envelope it holds (after `sessions.delete` or
    /// `runs.delete` removed some from the store): readers before its new
    /// base read the store, which no longer has them. Deletes are rare;
    /// the tail refills as events commit.
    pub(crate) fn forget(&self) {
        let mut buffer = self
            .buffer
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(last) = buffer.entries.back().map(|e| e.id) {
            buffer.base = last;
        }
        buffer.entries.clear();
        buffer.bytes = 0;
    }

    /// The id after which the tail holds every event, while it follows
    /// the store (`None`: it sleeps). A stream whose cursor is below it
    /// reads the store; once that read finds nothing of its own, nothing of
    /// its own lies up to it either, and the stream goes on from it.
    pub(crate) fn base(&self) -> Option<u64> {
        let buffer = self
            .buffer
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        buffer.awake.then_some(buffer.base)
    }

    pub(crate) fn latest(&self) -> tokio::sync::watch::Receiver<u64> {
        self.latest.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: &str) -> Entry {
        entry_at(7, json)
    }

    fn entry_at(id: u64, json: &str) -> Entry {
        Entry::new(RawEvent {
            id,
            kind: "run.started".into(),
            json: json.into(),
        })
    }

    #[test]
    fn an_envelope_is_split_into_its_forms_with_and_without_raw() {
        let head = r#"{"version":1,"id":"7","ts":1,"type":"run.started","runId":"r","sessionKey":"k","agentId":"a","data":{"raw":"not this one"}"#;
        let with = entry(&format!(r#"{head},"raw":{{"x":[1,"}}"]}}}}"#));
        assert_eq!(with.for_reader(false).unwrap().json(), format!("{head}}}"));
        assert_eq!(
            with.for_reader(true).unwrap().json(),
            format!(r#"{head},"raw":{{"x":[1,"}}"]}}}}"#)
        );
        assert_eq!(
            (
                with.run_id.as_deref(),
                with.session_key.as_deref(),
                with.agent_id.as_deref()
            ),
            (Some("r"), Some("k"), Some("a"))
        );
        let without = entry(&format!("{head}}}"));
        assert_eq!(
            without.for_reader(false).unwrap().json(),
            format!("{head}}}")
        );
        assert_eq!(
            without.for_reader(true).unwrap().json(),
            format!("{head}}}")
        );
        let large = entry(&format!(r#"{head},"raw":"{}"}}"#, "y".repeat(RAW_CAP + 1)));
        assert_eq!(large.for_reader(false).unwrap().json(), format!("{head}}}"));
        assert!(large.for_reader(true).is_none());
        let junk = entry("{not json");
        assert_eq!(
            (junk.form, junk.for_reader(false).is_none()),
            (Form::Unreadable, true)
        );
    }

    #[test]
    fn the_tail_keeps_a_bounded_window_and_moves_its_base() {
        let mut buffer = Buffer::default();
        for id in 1..=(CAPACITY as u64 + 10) {
            buffer.push(entry_at(id, r#"{"version":1,"runId":"r"}"#));
        }
        assert_eq!((buffer.entries.len(), buffer.base), (CAPACITY, 10));
        let big = format!(
            r#"{{"version":1,"runId":"r","data":"{}"}}"#,
            "b".repeat(BYTES / 3)
        );
        for id in 0..5 {
            buffer.push(entry_at(10_000 + id, &big));
        }
        assert_eq!((buffer.entries.len(), buffer.base), (2, 10_002));
        assert!(buffer.bytes <= BYTES, "{}", buffer.bytes);
        buffer.push(entry_at(
            20_000,
            &format!(r#"{{"data":"{}"}}"#, "h".repeat(BYTES * 2)),
        ));
        assert_eq!((buffer.entries.len(), buffer.base), (1, 10_004));
    }

    #[test]
    fn the_tail_answers_only_cursors_it_covers_and_never_drops_raw_silently() {
        let buffer = Buffer {
            base: 6,
            bytes: 0,
            awake: true,
            entries: [
                entry_at(7, r#"{"version":1,"id":"7","runId":"r","raw":1}"#),
                entry_at(
                    8,
                    &format!(
                        r#"{{"version":1,"id":"8","runId":"q","raw":"{}"}}"#,
                        "z".repeat(RAW_CAP + 1)
                    ),
                ),
            ]
            .into(),
        };
        let (_tx, latest) = tokio::sync::watch::channel(8);
        let tail = Tail {
            buffer: Arc::new(RwLock::new(buffer)),
            latest,
            followers: Arc::new(tokio::sync::watch::channel(0).0),
        };
        let r = EventFilter {
            run_id: Some("r".into()),
            ..EventFilter::default()
        };
        let ids = |page: Option<(Vec<Delivery>, u64)>| {
            page.map(|(events, through)| {
                (events.iter().map(Delivery::id).collect::<Vec<_>>(), through)
            })
        };
        assert_eq!(
            ids(tail.after(Some(5), &r, 10, usize::MAX)),
            None,
            "older than the tail"
        );
        assert_eq!(
            ids(tail.after(Some(6), &r, 10, usize::MAX)),
            Some((vec![7], 8))
        );
        assert_eq!(
            ids(tail.after(Some(6), &r, 1, usize::MAX)),
            Some((vec![7], 7))
        );
        assert_eq!(
            ids(tail.after(Some(8), &r, 10, usize::MAX)),
            Some((vec![], 8))
        );
        // Bounded in bytes: the first event always, then none past the
        // budget.
        assert_eq!(ids(tail.after(Some(6), &r, 10, 1)), Some((vec![7], 7)));
        assert_eq!(
            ids(tail.after(Some(5), &EventFilter::default(), 10, 1)),
            None
        );
        let admin = EventFilter {
            raw: true,
            ..EventFilter::default()
        };
        assert_eq!(
            ids(tail.after(Some(6), &admin, 1, usize::MAX)),
            Some((vec![7], 7))
        );
        assert_eq!(
            ids(tail.after(Some(6), &admin, 10, usize::MAX)),
            None,
            "raw over the cap"
        );
        assert_eq!(
            ids(tail.after(Some(7), &EventFilter::default(), 10, usize::MAX)),
            Some((vec![8], 8))
        );
    }
}
