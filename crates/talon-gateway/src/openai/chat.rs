//! `POST /v1/chat/completions`: a run on the session the request names
//! ([`super::conversation`]), answered whole or streamed as chunks
//! (`talon_protocol::openai::chat::ChatFold`). The session is, in order:
//! the `x-talon-session-key` header; a key derived from `user` and the
//! token (so two apps' `user: "1"` never meet); else a new session per
//! call. Every answer carries `x-talon-run-id` and `x-talon-session-key`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use talon_protocol::events::Event;
use talon_protocol::openai::chat::{ChatFold, ChatHeader, ChatOut, ChatRequest};
use talon_protocol::openai::{OpenAiError, agent_of, seconds};
use talon_store::EventFilter;

use super::conversation::{self, Extras};
use super::create::{check_model, idempotency_key, stopping, target};
use super::sse::{self, Project};
use super::{Retry, caller, error_response, json_body, run_headers};
use crate::state::Shared;
use crate::transport::stream::{Ends, Follow};

/// `POST /v1/chat/completions`.
pub(crate) async fn create(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    super::answer(start(&shared, &headers, body).await)
}

async fn start(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, (OpenAiError, Retry)> {
    let before = |e| (e, Retry::IfRetryable);
    let caller = caller(shared, headers).await.map_err(before)?;
    let _in_flight = shared
        .limiter
        .request(caller.holder())
        .map_err(|e| before(e.into()))?;
    let request: ChatRequest = json_body(shared, &caller, body).await.map_err(before)?;
    if request.n.unwrap_or(1) != 1 {
        return Err(before(OpenAiError::invalid(
            "only n: 1 is supported",
            Some("n"),
            "unsupported_parameter",
        )));
    }
    let tools_off = super::tools_off(request.tool_choice.as_ref()).map_err(before)?;
    let agent = agent_of(&request.model).to_owned();
    check_model(shared, &caller, &request.model)
        .await
        .map_err(before)?;
    let conversation = super::input::from_messages(&request).map_err(before)?;
    let target = target(headers, request.user.as_deref(), &caller.token_id).map_err(before)?;
    let tools = if tools_off {
        Vec::new()
    } else {
        request
            .tools
            .iter()
            .flatten()
            .map(|t| json!({"name": t.function.name, "description": t.function.description,
                            "parameters": t.function.parameters.clone().unwrap_or(json!({"type": "object"}))}))
            .map(|mut t| {
                if t["description"].is_null() && let Some(map) = t.as_object_mut() {
                    map.remove("description");
                }
                t
            })
            .collect()
    };
    // The stream's place is taken before the run exists: a gateway at
    // `maxStreams` refuses the call (retryable) instead of starting a run
    // the call cannot follow.
    let permit = shared
        .limiter
        .stream(caller.holder())
        .map_err(|e| before(e.into()))?;
    let extras = Extras {
        tools,
        idempotency_key: idempotency_key(headers),
    };
    let started = conversation::start(shared, &caller, &agent, conversation, target, extras)
        .await
        .map_err(before)?;
    let run_id = started.accepted.run_id.to_string();
    super::watch::watch(shared.clone(), run_id.clone());
    let never = |e| (e, Retry::Never);
    let header = ChatHeader {
        id: format!("chatcmpl-{run_id}"),
        created: seconds(started.accepted.run.created_at),
        model: request.model.clone(),
        include_usage: request
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
    };
    let filter = EventFilter {
        run_id: Some(run_id.clone()),
        ..EventFilter::default()
    };
    let mut follow = Follow::start_with(shared, filter, None, Ends::AfterTerminal, Some(permit))
        .await
        .map_err(|e| never(e.into()))?;
    let mut fold = ChatFold::new(header);
    let mut abandon = sse::Abandon::new(shared.clone(), &run_id);
    let mut response = if request.stream.unwrap_or(false) {
        let first = vec![sse::data(&fold.opening())];
        sse::respond(shared, &caller, follow, Chunks(fold), first, Some(abandon))
    } else {
        let ended = sse::drain(&mut follow, |_, event| {
            fold.push(event);
            fold.ended()
        })
        .await
        .map_err(never)?;
        abandon.disarm();
        if !ended {
            return Err(never(stopping(&run_id)));
        }
        match fold.completion() {
            Ok(completion) => axum::Json(completion).into_response(),
            Err(error) => {
                let mut response = error_response(&error, Retry::Never);
                run_headers(&mut response, &run_id, started.session_key.as_deref());
                return Ok(response);
            }
        }
    };
    run_headers(&mut response, &run_id, started.session_key.as_deref());
    Ok(response)
}

struct Chunks(ChatFold);

impl Project for Chunks {
    fn event(&mut self, _: u64, event: &Event) -> Vec<Bytes> {
        self.0
            .push(event)
            .into_iter()
            .map(|out| match out {
                ChatOut::Chunk(chunk) => sse::data(&chunk),
                ChatOut::Error(error) => sse::data(&json!(error.body())),
            })
            .collect()
    }

    fn ended(&self) -> bool {
        self.0.ended()
    }

    fn close(&mut self) -> Vec<Bytes> {
        if self.0.completion().is_ok() {
            vec![Bytes::from_static(b"data: [DONE]\n\n")]
        } else {
            Vec::new()
        }
    }

    fn error(&mut self, error: &OpenAiError) -> Bytes {
        sse::data(&json!(error.body()))
    }
}
