//! The session methods with more to them than a lookup: `sessions.fork`
//! (a new session with the parent's messages up to a message) and
//! `sessions.compact` (a compaction record standing for the messages
//! since the last one, and `session.compacted`; `conflict` while a run is
//! in progress).

use talon_protocol::EventData;
use talon_protocol::event_data::SessionCompactedData;
use talon_protocol::gateway::bounded::MessageId;
use talon_protocol::gateway::bounded::SessionKey;
use talon_protocol::gateway::params::{SessionsForkParams, SessionsUpdateParams};
use talon_protocol::gateway::{ApiError, Message, MessageRole, Session};

use super::runs;
use super::state::{Shared, not_found};

pub(crate) fn fork(shared: &Shared, p: SessionsForkParams) -> Result<Session, ApiError> {
    shared.write(|s| {
        let parent = s.session(p.session_id.as_str())?.clone();
        let mut kept = s.messages.get(&parent.id).cloned().unwrap_or_default();
        if let Some(at) = &p.at_message_id {
            let end = kept
                .iter()
                .position(|m| &m.id == at)
                .ok_or_else(|| not_found("message", at.as_str()))?;
            kept.truncate(end + 1);
        }
        let mut session = s.add_session(
            parent.agent_id.as_str(),
            p.key.map(SessionKey::into_string),
            parent.metadata.clone(),
        )?;
        session.parent_id = Some(parent.id.clone());
        session.forked_at_message_id = p.at_message_id;
        for message in &mut kept {
            message.session_id = session.id.clone();
        }
        s.messages.insert(session.id.clone(), kept);
        if let Some(stored) = s.sessions.iter_mut().find(|x| x.id == session.id) {
            *stored = session.clone();
        }
        s.announce_session(&session);
        Ok(session)
    })
}

pub(crate) fn compact(shared: &Shared, session_id: &str) -> Result<Session, ApiError> {
    shared.write(|s| {
        let mut session = s.session(session_id)?.clone();
        if !runs::live_runs(s, session.id.as_str()).is_empty() {
            return Err(talon_protocol::gateway::refuse::compact_busy());
        }
        let replaced = s.messages.get(&session.id).map_or(0, |m| {
            let from = m
                .iter()
                .rposition(|m| m.role == MessageRole::Compaction)
                .map_or(0, |at| at + 1);
            m.len() - from
        });
        if replaced == 0 {
            return Ok(session);
        }
        let now = s.now_ms();
        let record = Message {
            id: MessageId::new(s.new_id("msg")),
            session_id: session.id.clone(),
            run_id: None,
            role: MessageRole::Compaction,
            text: Some(format!("A summary of {replaced} messages.")),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at: now,
        };
        s.messages
            .entry(session.id.clone())
            .or_default()
            .push(record.clone());
        session.updated_at = now;
        if let Some(stored) = s.sessions.iter_mut().find(|x| x.id == session.id) {
            *stored = session.clone();
        }
        s.push(talon_protocol::Event::of_session(
            &session,
            now,
            EventData::SessionCompacted(SessionCompactedData {
                session_id: session.id.clone(),
                replaced_messages: replaced as u32,
                summary_message_id: record.id,
            }),
        ));
        Ok(session)
    })
}

/// `sessions.update`: `metadata` merged in (`null` removes a key), within
/// the protocol's caps, announced as `session.updated`.
pub(crate) fn update(shared: &Shared, p: SessionsUpdateParams) -> Result<Session, ApiError> {
    shared.write(|s| {
        let mut session = s.session(p.session_id.as_str())?.clone();
        for (key, value) in p.metadata {
            if value.is_null() {
                session.metadata.remove(&key);
            } else {
                session.metadata.insert(key, value);
            }
        }
        session.metadata = talon_protocol::gateway::resources::check_metadata(session.metadata)?;
        session.updated_at = s.now_ms().max(session.updated_at);
        if let Some(stored) = s.sessions.iter_mut().find(|x| x.id == session.id) {
            *stored = session.clone();
        }
        s.push(talon_protocol::Event::of_session(
            &session,
            session.updated_at,
            EventData::SessionUpdated(session.clone()),
        ));
        Ok(session)
    })
}
