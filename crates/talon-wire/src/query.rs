//! The query of a stream route (`GET /v1/runs/{runId}/events`,
//! `GET /v1/events`, `GET /v1/ws`), as every server reads it: its fields
//! capped as the protocol's ids are, an unknown or repeated field refused,
//! and a bad query answered `invalid_request` (`refuse::bad_query`).

use axum::extract::Query;
use axum::http::Uri;
use serde::Deserialize;
use talon_protocol::gateway::bounded::{AgentId, Cursor, SessionKey, Text};
use talon_protocol::gateway::{ApiError, refuse};

/// The query of an SSE stream.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamQuery {
    /// The cursor to resume after (`Last-Event-ID` wins).
    pub after: Option<Cursor>,
    /// `GET /v1/events`: one session's events, by key.
    pub session_key: Option<SessionKey>,
    /// `GET /v1/events`: one agent's events.
    pub agent_id: Option<AgentId>,
    /// The event types asked for, comma-separated.
    pub types: Option<Text<2048>>,
    /// A stream ticket (`tokens.ticket`), instead of a bearer token.
    pub ticket: Option<Text<128>>,
}

/// The query of `GET /v1/ws`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketQuery {
    /// A stream ticket (`tokens.ticket`), instead of a bearer token.
    pub ticket: Option<Text<128>>,
}

/// Decodes a route's query, refusing a bad one in the protocol's shape.
pub fn query<T: serde::de::DeserializeOwned + Default>(uri: &Uri) -> Result<T, ApiError> {
    if uri.query().is_none() {
        return Ok(T::default());
    }
    Query::<T>::try_from_uri(uri)
        .map(|Query(q)| q)
        .map_err(|e| refuse::bad_query(&e.body_text()))
}
