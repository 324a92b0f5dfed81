//! `/v1/responses`: create (whole, streamed, or in the background),
//! retrieve (a snapshot, or the stream from any point the event log still
//! keeps: `?stream=true&starting_after=N`, also after a restart, since the
//! numbers come from the log), and cancel. A response is a run: its id is
//! `resp_<runId>`. `previous_response_id` continues that run's session
//! (forking it after that run when later runs followed), or is refused
//! with 404 `previous_response_not_found`: never ignored.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};
use talon_protocol::events::Event;
use talon_protocol::gateway::Run;
use talon_protocol::openai::responses::{
    ResponseFold, ResponseHeader, ResponseRequest, SEQ_STRIDE, response_id, run_of,
};
use talon_protocol::openai::{OpenAiError, agent_of, model_id, seconds};
use talon_store::EventFilter;

use super::conversation::{self, Extras, Target};
use super::create::{check_model, idempotency_key, stopping, target};
use super::sse::{self, Project};
use super::{Retry, call, caller, error_response, json_body, run_headers};
use crate::auth::identity::Caller;
use crate::state::Shared;
use crate::transport::stream::{Ends, Follow};

/// How long `cancel` waits for the run's end before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// `POST /v1/responses`.
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
    let request: ResponseRequest = json_body(shared, &caller, body).await.map_err(before)?;
    if request.conversation.is_some() {
        return Err(before(OpenAiError::invalid(
            "conversation is not supported: name the session with previous_response_id or the x-talon-session-key header",
            Some("conversation"),
            "unsupported_parameter",
        )));
    }
    // Every run is kept (the durable log is the contract): refused rather
    // than ignored.
    if request.store == Some(false) {
        return Err(before(OpenAiError::invalid(
            "store: false is not supported: Talon keeps every response in its durable log (store.retention bounds how long)",
            Some("store"),
            "unsupported_parameter",
        )));
    }
    let tools_off = super::tools_off(request.tool_choice.as_ref()).map_err(before)?;
    check_model(shared, &caller, &request.model)
        .await
        .map_err(before)?;
    let agent = agent_of(&request.model).to_owned();
    let mut conversation = super::input::from_items(&request.input).map_err(before)?;
    if let Some(instructions) = request.instructions.as_ref().filter(|i| !i.is_empty()) {
        conversation.system.insert(0, instructions.clone());
    }
    let target = match &request.previous_response_id {
        Some(previous) => {
            let run = previous_run(shared, &caller, previous)
                .await
                .map_err(before)?;
            match run.session_id {
                Some(session_id) => Target::After {
                    session_id: session_id.to_string(),
                    run_id: run.id.to_string(),
                },
                None => return Err(before(previous_not_found(previous))),
            }
        }
        None => target(headers, request.user.as_deref(), &caller.token_id).map_err(before)?,
    };
    let mut tools = Vec::new();
    for tool in request.tools.iter().flatten().filter(|_| !tools_off) {
        if tool["type"] != "function" {
            return Err(before(OpenAiError::invalid(
                format!(
                    "tools: only function tools are supported, not {}",
                    talon_protocol::openai::cut(&tool["type"].to_string(), 40)
                ),
                Some("tools"),
                "unsupported_parameter",
            )));
        }
        let mut t = json!({"name": tool["name"], "parameters": tool.get("parameters").cloned().unwrap_or(json!({"type": "object"}))});
        if let Some(d) = tool.get("description").filter(|d| d.is_string()) {
            t["description"] = d.clone();
        }
        tools.push(t);
    }
    // The stream's place is taken before the run exists (see chat.rs).
    let background = request.background.unwrap_or(false);
    let streamed = request.stream.unwrap_or(false);
    let permit = if streamed || !background {
        Some(
            shared
                .limiter
                .stream(caller.holder())
                .map_err(|e| before(e.into()))?,
        )
    } else {
        None
    };
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
    // Stream events carry only what the log tells (so every replay is the
    // same stream); the created response's own body adds the request's
    // echoes.
    let header = ResponseHeader {
        id: response_id(&run_id),
        created_at: seconds(started.accepted.run.created_at),
        model: model_id(&agent),
        background: None,
        previous_response_id: None,
        instructions: None,
        metadata: json!({}),
    };
    let echo = |mut body: Value| {
        body["background"] = json!(request.background.unwrap_or(false));
        body["previous_response_id"] = json!(request.previous_response_id);
        body["instructions"] = json!(request.instructions);
        body["metadata"] = request.metadata.clone().unwrap_or(json!({}));
        axum::Json(body).into_response()
    };
    // A call in the background outlives its connection; any other is
    // cancelled if its client leaves first.
    let abandon = (!background).then(|| sse::Abandon::new(shared.clone(), &run_id));
    let mut response = if streamed {
        let follow = follow(shared, &caller, &run_id, permit)
            .await
            .map_err(never)?;
        let events = Events {
            fold: ResponseFold::new(header),
            after: None,
        };
        sse::respond(shared, &caller, follow, events, Vec::new(), abandon)
    } else if background {
        let (fold, _) = committed(shared, &run_id, header).await.map_err(never)?;
        echo(fold.response())
    } else {
        let mut follow = follow(shared, &caller, &run_id, permit)
            .await
            .map_err(never)?;
        let mut fold = ResponseFold::new(header);
        let ended = sse::drain(&mut follow, |id, event| {
            fold.push(id, event);
            fold.ended()
        })
        .await
        .map_err(never)?;
        if let Some(mut abandon) = abandon {
            abandon.disarm();
        }
        if !ended {
            return Err(never(stopping(&run_id)));
        }
        echo(fold.response())
    };
    run_headers(&mut response, &run_id, started.session_key.as_deref());
    Ok(response)
}

/// A run's events from its first, with a stream's place (taken now when
/// not given).
async fn follow(
    shared: &Shared,
    caller: &Caller,
    run_id: &str,
    permit: Option<crate::limits::StreamPermit>,
) -> Result<Follow, OpenAiError> {
    let filter = EventFilter {
        run_id: Some(run_id.to_owned()),
        ..EventFilter::default()
    };
    let permit = match permit {
        Some(permit) => permit,
        None => shared
            .limiter
            .stream(caller.holder())
            .map_err(OpenAiError::from)?,
    };
    Follow::start_with(shared, filter, None, Ends::AfterTerminal, Some(permit))
        .await
        .map_err(OpenAiError::from)
}

/// The fold of the run's events committed so far, and whether they
/// reached its end.
async fn committed(
    shared: &Shared,
    run_id: &str,
    header: ResponseHeader,
) -> Result<(ResponseFold, bool), OpenAiError> {
    let filter = EventFilter {
        run_id: Some(run_id.to_owned()),
        ..EventFilter::default()
    };
    let mut fold = ResponseFold::new(header);
    let mut cursor = None;
    let mut first = true;
    loop {
        let page = shared
            .store
            .after_json(cursor, &filter, 500)
            .await
            .map_err(|e| OpenAiError::from(crate::error::api_error(e)))?;
        if page.is_empty() {
            if first {
                // A run has its `run.created` from its first moment: none
                // means retention removed every event of it.
                return Err(expired());
            }
            return Ok((fold, false));
        }
        for raw in page {
            let delivery = crate::frame::Delivery::from(raw);
            cursor = Some(delivery.id());
            let event = sse::decode(delivery.json())?;
            if first {
                check_first(&event)?;
                first = false;
            }
            fold.push(delivery.id(), &event);
            if fold.ended() {
                return Ok((fold, true));
            }
        }
    }
}

/// A run's stream must start at its `run.created`: otherwise retention
/// removed its beginning and the response can no longer be rebuilt.
fn check_first(event: &Event) -> Result<(), OpenAiError> {
    if event.kind == talon_protocol::events::EventType::RunCreated {
        return Ok(());
    }
    Err(expired())
}

fn expired() -> OpenAiError {
    OpenAiError::invalid(
        "this response's first events are no longer kept (store.retention): it can no longer be streamed",
        None,
        "stream_cursor_expired",
    )
}

fn previous_not_found(id: &str) -> OpenAiError {
    OpenAiError::not_found(
        format!(
            "previous response {:?} not found",
            talon_protocol::openai::cut(id, 64)
        ),
        Some("previous_response_id"),
        "previous_response_not_found",
    )
}

async fn previous_run(
    shared: &Shared,
    caller: &crate::auth::identity::Caller,
    id: &str,
) -> Result<Run, OpenAiError> {
    let run_id = run_of(id).ok_or_else(|| previous_not_found(id))?;
    match call::<Run>(shared, caller, "runs.get", json!({"runId": run_id})).await {
        Err(error) if error.status == 404 || error.status == 400 => Err(previous_not_found(id)),
        other => other,
    }
}

/// A response's run, or 404 `response_not_found`.
async fn run_of_response(
    shared: &Shared,
    caller: &crate::auth::identity::Caller,
    id: &str,
) -> Result<Run, OpenAiError> {
    let missing = || {
        OpenAiError::not_found(
            format!(
                "response {:?} not found",
                talon_protocol::openai::cut(id, 64)
            ),
            None,
            "response_not_found",
        )
    };
    let run_id = run_of(id).ok_or_else(missing)?;
    match call::<Run>(shared, caller, "runs.get", json!({"runId": run_id})).await {
        Err(error) if error.status == 404 || error.status == 400 => Err(missing()),
        other => other,
    }
}

fn header_of(run: &Run) -> ResponseHeader {
    ResponseHeader {
        id: response_id(run.id.as_str()),
        created_at: seconds(run.created_at),
        model: model_id(run.agent_id.as_str()),
        background: None,
        previous_response_id: None,
        instructions: None,
        metadata: json!({}),
    }
}

/// The query of `GET /v1/responses/{id}`.
#[derive(Debug, Default, Deserialize)]
struct RetrieveQuery {
    stream: Option<bool>,
    starting_after: Option<u64>,
    #[serde(rename = "include[]")]
    _include: Option<String>,
    include_obfuscation: Option<bool>,
}

/// `GET /v1/responses/{id}`.
pub(crate) async fn retrieve(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let caller = caller(&shared, &headers).await?;
        let query: RetrieveQuery =
            crate::transport::stream::query(&uri).map_err(OpenAiError::from)?;
        let _ = query.include_obfuscation;
        let run = run_of_response(&shared, &caller, &id).await?;
        let run_id = run.id.to_string();
        if query.stream.unwrap_or(false) {
            // Checked before following: a run none of whose events are kept
            // would otherwise be waited on for ever.
            let kept = EventFilter {
                run_id: Some(run_id.clone()),
                ..EventFilter::default()
            };
            let oldest = shared
                .store
                .after_json(None, &kept, 1)
                .await
                .map_err(|e| OpenAiError::from(crate::error::api_error(e)))?;
            match oldest.into_iter().next() {
                Some(raw) => check_first(&sse::decode(crate::frame::Delivery::from(raw).json())?)?,
                None => return Err(expired()),
            }
            let mut follow = follow(&shared, &caller, &run_id, None).await?;
            // The first event decides whether the response can be rebuilt.
            let mut events = Events {
                fold: ResponseFold::new(header_of(&run)),
                after: query.starting_after,
            };
            let mut first = Vec::new();
            match follow.next().await {
                Some(Ok(delivery)) => {
                    let event = sse::decode(delivery.json())?;
                    check_first(&event)?;
                    first = events.event(delivery.id(), &event);
                    if events.fold.ended() {
                        first.extend(events.close());
                    }
                }
                Some(Err(error)) => return Err(error.into()),
                None => {}
            }
            return Ok(sse::respond(&shared, &caller, follow, events, first, None));
        }
        let (fold, _) = committed(&shared, &run_id, header_of(&run)).await?;
        Ok(axum::Json(fold.response()).into_response())
    };
    match answer.await {
        Ok(response) => response,
        Err(error) => error_response(&error, Retry::IfRetryable),
    }
}

/// `POST /v1/responses/{id}/cancel`: cancels the run (a no-op once it
/// ended) and answers the response as it then stands, waiting briefly for
/// the run's end.
pub(crate) async fn cancel(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let answer = async {
        let caller = caller(&shared, &headers).await?;
        let run = run_of_response(&shared, &caller, &id).await?;
        let run_id = run.id.to_string();
        if !run.status.is_terminal() {
            match call::<Run>(
                &shared,
                &caller,
                "runs.cancel",
                json!({"runId": run_id, "reason": "cancelled through /v1/responses"}),
            )
            .await
            {
                Ok(_) => {}
                // Ended meanwhile.
                Err(error) if error.status == 409 => {}
                Err(error) => return Err(error),
            }
        }
        let mut follow = follow(&shared, &caller, &run_id, None).await?;
        let mut fold = ResponseFold::new(header_of(&run));
        let _ = tokio::time::timeout(
            CANCEL_WAIT,
            sse::drain(&mut follow, |id, event| {
                fold.push(id, event);
                fold.ended()
            }),
        )
        .await;
        Ok(axum::Json(fold.response()).into_response())
    };
    match answer.await {
        Ok(response) => response,
        Err(error) => error_response(&error, Retry::Never),
    }
}

/// Responses stream events, skipping those numbered `<= after`.
struct Events {
    fold: ResponseFold,
    after: Option<u64>,
}

impl Project for Events {
    fn event(&mut self, id: u64, event: &Event) -> Vec<Bytes> {
        let after = self.after;
        if let Some(after) = after
            && id < after / SEQ_STRIDE
        {
            // Wholly before the cursor: folded, not sent.
            self.fold.push(id, event);
            return Vec::new();
        }
        self.fold
            .push(id, event)
            .into_iter()
            .filter(|(seq, _)| after.is_none_or(|after| *seq > after))
            .map(|(_, event)| sse::event(event["type"].as_str().unwrap_or("unknown"), &event))
            .collect()
    }

    fn ended(&self) -> bool {
        self.fold.ended()
    }

    fn close(&mut self) -> Vec<Bytes> {
        Vec::new()
    }

    fn error(&mut self, error: &OpenAiError) -> Bytes {
        sse::event(
            "error",
            &json!({"type": "error", "code": error.code, "message": error.message, "param": error.param}),
        )
    }
}
