//! Every refusal the protocol's servers share, worded once: its code, its
//! message (a template over its arguments) and the details it carries.
//! The gateway and the Rust fake (`talon-sdk-testing`) call the functions
//! of [`refuse`]; the TypeScript fake calls the same functions generated
//! into `@talon/sdk`'s `generated/refusals.ts` from [`REFUSALS`]
//! ([`crate::codegen::typescript`]). A message is never typed a second
//! time: a new refusal is a new row here.
//!
//! A template names its arguments in braces. An argument is `text`
//! (inserted as it is), `quoted` (as a JSON string: `"run_1"`), or
//! `count` (a whole number). `{{` and `}}` are literal braces. An
//! argument marked `=> "key"` is also `details.key`; `[key = "word"]`
//! sets a fixed detail.

use serde_json::{Map, Value};

use super::{ApiError, ErrorCode, ErrorDetails};

/// How an argument is written into a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// As it is.
    Text,
    /// As a JSON string.
    Quoted,
    /// A whole number.
    Count,
}

/// One argument of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusalArg {
    /// Its name, as the template names it (snake_case).
    pub name: &'static str,
    /// How it is written.
    pub kind: ArgKind,
    /// The `details` key it also fills, if any.
    pub detail: Option<&'static str>,
}

/// One refusal: what every server of the protocol answers in one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Its name (snake_case; camelCase in TypeScript).
    pub name: &'static str,
    /// When it is given.
    pub doc: &'static str,
    /// Its error code.
    pub code: ErrorCode,
    /// Its message, over its arguments.
    pub template: &'static str,
    /// Its arguments, in order.
    pub args: &'static [RefusalArg],
    /// Details it always carries (`reason`, `outcome`).
    pub fixed: &'static [(&'static str, &'static str)],
}

/// An argument's value.
#[derive(Debug, Clone, Copy)]
#[doc(hidden)]
pub enum Arg<'a> {
    Text(&'a str),
    Count(u64),
}

/// A piece of a template: literal text, or the name of an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text as it is (`{{` and `}}` already made single).
    Text(&'a str),
    /// An argument, by name.
    Arg(&'a str),
}

/// The pieces of `template`, in order.
pub fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push(Piece::Text(&tail[..1]));
            rest = &tail[2..];
            continue;
        }
        let end = tail.find('}').unwrap_or(tail.len() - 1);
        out.push(Piece::Arg(&tail[1..end]));
        rest = &tail[(end + 1).min(tail.len())..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// The message of `template` over `args` (name, how, value).
#[doc(hidden)]
pub fn fill(template: &str, args: &[(&str, ArgKind, Arg<'_>)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    for piece in pieces(template) {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Arg(name) => match args.iter().find(|(n, _, _)| *n == name) {
                Some((_, ArgKind::Quoted, Arg::Text(text))) => {
                    out.push_str(&serde_json::to_string(text).unwrap_or_default());
                }
                Some((_, _, Arg::Text(text))) => out.push_str(text),
                Some((_, _, Arg::Count(n))) => out.push_str(&n.to_string()),
                None => {}
            },
        }
    }
    out
}

/// The error: `code`, `message`, and the details named (none: no details).
#[doc(hidden)]
pub fn finish(code: ErrorCode, message: String, details: Map<String, Value>) -> ApiError {
    let error = ApiError::new(code, message);
    if details.is_empty() {
        return error;
    }
    match serde_json::from_value::<ErrorDetails>(Value::Object(details)) {
        Ok(details) => error.with_details(details),
        Err(_) => error,
    }
}

macro_rules! arg_type {
    (text) => {
        &str
    };
    (quoted) => {
        &str
    };
    (count) => {
        u64
    };
}

macro_rules! arg_kind {
    (text) => {
        ArgKind::Text
    };
    (quoted) => {
        ArgKind::Quoted
    };
    (count) => {
        ArgKind::Count
    };
}

macro_rules! arg_value {
    (text, $v:expr) => {
        Arg::Text($v)
    };
    (quoted, $v:expr) => {
        Arg::Text($v)
    };
    (count, $v:expr) => {
        Arg::Count($v)
    };
}

macro_rules! opt_detail {
    () => {
        None
    };
    ($d:literal) => {
        Some($d)
    };
}

macro_rules! refusals {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident($($arg:ident: $kind:ident $(=> $detail:literal)?),* $(,)?) -> $code:ident
            $([$($key:literal = $word:literal),+])?: $template:literal;
    )*) => {
        /// The refusals' constructors, one per row of [`REFUSALS`].
        pub mod refuse {
            #![allow(clippy::too_many_arguments, reason = "one argument per placeholder")]
            use super::*;
            $(
                $(#[doc = $doc])+
                pub fn $name($($arg: arg_type!($kind)),*) -> ApiError {
                    let message = fill($template, &[$((stringify!($arg), arg_kind!($kind), arg_value!($kind, $arg))),*]);
                    #[allow(unused_mut, reason = "a row without details")]
                    let mut details = Map::new();
                    $($(details.insert($detail.to_owned(), Value::from($arg));)?)*
                    $($(details.insert($key.to_owned(), Value::from($word));)+)?
                    finish(ErrorCode::$code, message, details)
                }
            )*
        }

        /// Every refusal, in the order declared.
        pub const REFUSALS: &[Refusal] = &[$(
            Refusal {
                name: stringify!($name),
                doc: concat!($($doc, "\n"),+),
                code: ErrorCode::$code,
                template: $template,
                args: &[$(RefusalArg { name: stringify!($arg), kind: arg_kind!($kind), detail: opt_detail!($($detail)?) }),*],
                fixed: &[$($(($key, $word)),+)?],
            },
        )*];
    };
}

refusals! {
    // --- Any method -------------------------------------------------------
    /// A named resource does not exist (or the caller may not see it).
    not_found(kind: text, id: quoted) -> NotFound: "{kind} {id} not found";
    /// A resource with that id or key exists already.
    already_exists(kind: text, id: quoted) -> Conflict: "{kind} {id} already exists";
    /// No method of the table has that name.
    no_method(method: text => "method") -> NotFound: "no method `{method}`";
    /// A method the table declares that this gateway does not implement.
    unsupported(method: text => "method") -> Unsupported: "`{method}` is not supported by this gateway yet";
    /// The token lacks the scope the method needs.
    forbidden(scope: text => "scope") -> Forbidden: "this token lacks the `{scope}` scope";
    /// An error the server does not explain (its cause is logged).
    internal() -> Internal: "internal error";
    /// A method served only on the WebSocket transport, called over HTTP.
    websocket_only(method: text) -> InvalidRequest: "{method} is served on the WebSocket transport (GET /v1/ws)";
    /// An idempotency key used again with other parameters.
    idempotency_reused(key: quoted) -> Conflict: "idempotency key {key} was used with other parameters";

    // --- Authentication ----------------------------------------------------
    /// No `Authorization` header.
    no_token() -> Unauthenticated ["reason" = "missing"]: "no token: send Authorization: Bearer <token> (`talon token create` makes one)";
    /// An `Authorization` header that is not `Bearer talon_...`.
    malformed_token() -> Unauthenticated ["reason" = "malformed"]: "the Authorization header is not `Bearer talon_<secret>`";
    /// A well-formed token the gateway does not know.
    unknown_token() -> Unauthenticated ["reason" = "unknown"]: "this token is not known to this gateway";
    /// A revoked token.
    revoked_token() -> Unauthenticated ["reason" = "revoked"]: "this token was revoked";
    /// A token past its lifetime.
    expired_token() -> Unauthenticated ["reason" = "expired"]: "this token has expired";
    /// A stream ticket that is unknown, used or expired.
    bad_ticket() -> Unauthenticated ["reason" = "ticket"]: "the stream ticket is unknown, used or expired: mint a new one with tokens.ticket";
    /// A stream ticket used for anything but its stream.
    ticket_calls(what: text) -> Forbidden ["reason" = "ticket"]: "{what}: a stream ticket opens the one stream it was minted for and calls nothing";
    /// A dashboard sign-in code that is unknown, used or expired.
    bad_login_code() -> Unauthenticated ["reason" = "login"]: "this sign-in link is unknown, used or expired: run `talon dashboard` for a new one";
    /// A dashboard sign-in or sign-out that did not come from the gateway's own page.
    login_not_own_origin() -> Forbidden ["reason" = "origin"]: "signing in and out takes the gateway's own page: open the link in a browser";
    /// A dashboard request without its sign-in cookie.
    not_signed_in() -> Unauthenticated ["reason" = "missing"]: "not signed in: open the link `talon dashboard` prints";
    /// A WebSocket request before the socket authenticated (the
    /// TypeScript fake's socket, which authenticates in a frame).
    socket_unauthenticated() -> Unauthenticated: "the socket is not authenticated";

    // --- Transport ---------------------------------------------------------
    /// A body that is not JSON.
    body_not_json(error: text) -> InvalidRequest: "the body is not JSON: {error}";
    /// Params that are not a JSON object.
    params_not_object(method: text) -> InvalidRequest: "{method}: params must be a JSON object";
    /// Params that do not fit the method's schema.
    bad_params(method: text, problem: text) -> InvalidRequest: "{method}: {problem}";
    /// One field of the params that does not fit the method's schema.
    bad_param(method: text, field: text => "field", problem: text) -> InvalidRequest: "{method}: {field}: {problem}";
    /// A stream's query that does not decode.
    bad_query(problem: text) -> InvalidRequest: "the query: {problem}";
    /// A stream's run id that is not one (`problem`: the id type's own words).
    bad_run_id(problem: text) -> InvalidRequest: "runId: {problem}";
    /// A body over the gateway's cap.
    body_too_large(max: count) -> InvalidRequest ["reason" = "body_too_large"]: "the body exceeds {max} bytes (or was cut off)";
    /// A path no route serves.
    no_route() -> NotFound: "no such route: methods are POST /v1/<method>, described by /v1/openapi.json and readable at /docs";
    /// A route called with a method it does not take.
    method_not_allowed(allow: text) -> MethodNotAllowed: "this path takes {allow} only";
    /// A request with no `Host` header.
    host_missing() -> InvalidRequest ["reason" = "host"]: "a request must name its Host";
    /// A request with several `Host` headers.
    host_several() -> InvalidRequest ["reason" = "host"]: "a request must name one Host, not several";
    /// A `Host` header that is not a host.
    host_malformed() -> InvalidRequest ["reason" = "host"]: "the Host header is malformed";
    /// A request whose target names another host than its `Host` header.
    host_ambiguous() -> InvalidRequest ["reason" = "host"]: "the request's target names another host than its Host header";
    /// A `Host` the gateway does not answer to.
    host_refused(host: quoted) -> InvalidRequest ["reason" = "host"]: "this gateway does not answer to the host {host}; list it in gateway.security.allowedHosts";
    /// A browser `Origin` the gateway does not allow.
    origin_refused(origin: text) -> Forbidden ["reason" = "origin"]: "requests from the origin {origin} are not allowed; list it in gateway.security.allowedOrigins";
    /// A `Range` outside the content.
    range_outside(size: count => "size") -> InvalidRequest: "the range is outside the content ({size} bytes)";

    // --- WebSocket ---------------------------------------------------------
    /// A text frame that is not JSON.
    frame_not_json(error: text) -> InvalidRequest: "not JSON: {error}";
    /// A JSON frame that is not a request.
    frame_not_request() -> InvalidRequest: "a request is {{\"type\":\"req\",\"id\":..,\"method\":..,\"params\":{{..}}}}";
    /// A binary frame.
    binary_frame() -> InvalidRequest: "binary frames are not requests";
    /// One subscription too many on a socket.
    too_many_subscriptions(max: count) -> RateLimited: "at most {max} subscriptions per connection";
    /// `events.unsubscribe` of a subscription the socket does not have.
    no_subscription(id: quoted) -> NotFound: "no subscription {id}";

    // --- Streams and pages -------------------------------------------------
    /// A cursor older than the oldest event kept.
    cursor_expired(cursor: text => "cursor", oldest: text => "oldestId") -> CursorExpired: "cursor {cursor} has expired; the oldest event kept is {oldest}";
    /// A page cursor whose item is gone.
    cursor_item_gone() -> CursorExpired: "the cursor's item is gone; list again from the start";
    /// A text that is not an event id.
    not_an_event_id(text: quoted) -> InvalidRequest: "{text} is not an event id";
    /// An `after` that is not an event id.
    after_not_an_event_id(text: quoted) -> InvalidRequest: "after: {text} is not an event id";
    /// A `before` that is not an event id.
    before_not_an_event_id(text: quoted) -> InvalidRequest ["field" = "before"]: "before: {text} is not an event id";
    /// `runs.events` given both ends to count from.
    last_and_limit() -> InvalidRequest ["field" = "last"]: "last and limit both given: last counts from the window's end, limit from its start";
    /// A `Last-Event-ID` that is not visible ASCII.
    last_event_id_unreadable() -> InvalidRequest: "Last-Event-ID is not an event id (it is not visible ASCII)";
    /// An event type the protocol does not have.
    unknown_event_type(name: quoted) -> InvalidRequest: "unknown event type {name}";

    // --- Runs --------------------------------------------------------------
    /// `runs.create` in a session with a live run, under `multitaskStrategy: reject`.
    session_busy() -> Conflict: "the session already has an active run (multitaskStrategy: reject)";
    /// A delete of something a live run still uses.
    has_live_run(kind: text, id: quoted) -> Conflict: "{kind} {id} has a run that has not ended: cancel it (or wait for its end) first";
    /// `sessions.compact` while a run is live.
    compact_busy() -> Conflict: "the session has a run in progress; compact it once the run ends";
    /// A session named by id and by key that are not the same one.
    session_id_and_key_differ() -> InvalidRequest: "sessionId and sessionKey name different sessions";
    /// A session that belongs to another agent than the one named.
    session_of_other_agent(key: quoted, own: quoted, asked: quoted) -> InvalidRequest: "session {key} belongs to agent {own}, not {asked}";
    /// `runs.list`'s `status` is not a run status.
    unknown_run_status() -> InvalidRequest ["field" = "status"]: "status: an unknown run status";
    /// `runs.list`'s time window is empty.
    empty_time_window(after: count, before: count) -> InvalidRequest ["field" = "createdAfter"]: "createdAfter ({after}) must be before createdBefore ({before})";
    /// `usage.summary`'s time window is longer than it answers.
    usage_window_too_long(days: count, max: count) -> InvalidRequest ["field" = "createdAfter"]: "createdAfter: a window of {days} days, longer than the {max} days usage.summary answers";
    /// `runs.list`'s cursor is not a run id.
    cursor_not_a_run(cursor: quoted) -> InvalidRequest ["field" = "cursor"]: "cursor {cursor} is not a run: pass the previous page's nextCursor";

    /// More client tools than a run takes.
    too_many_client_tools(count: count, max: count) -> InvalidRequest: "tools: {count} client tools, more than the {max} a run takes";
    /// A client tool's name that is not 1 to 64 ASCII letters, digits, `_` or `-`.
    client_tool_name(index: count, name: quoted) -> InvalidRequest: "tools[{index}].name {name}: 1 to 64 ASCII letters, digits, `_` or `-`";
    /// Two client tools of one name.
    client_tool_twice(index: count, name: quoted) -> InvalidRequest: "tools[{index}].name {name}: named twice";
    /// A client tool whose parameters are not an object schema.
    client_tool_parameters(index: count) -> InvalidRequest: "tools[{index}].parameters: a JSON Schema of type \"object\"";
    /// A run's text input that is empty.
    input_empty() -> InvalidRequest: "input: the message is empty";
    /// A leading `tool` message without its `toolCallId`.
    input_tool_message_without_call(index: count) -> InvalidRequest: "input: input[{index}]: a tool message needs its toolCallId";
    /// Two answers to one client tool call.
    input_call_answered_twice(index: count, call: quoted) -> InvalidRequest: "input: input[{index}]: call {call} is answered twice";
    /// A `tool` message after another kind of message.
    input_tool_message_late(index: count) -> InvalidRequest: "input: input[{index}]: tool messages come first, before any other message";
    /// A `toolCallId` on a message that is not a `tool` message.
    input_call_id_off_tool(index: count) -> InvalidRequest: "input: input[{index}]: only a tool message has a toolCallId";
    /// A messages input with no message.
    input_no_message() -> InvalidRequest: "input: the input has no message";
    /// A messages input whose last message is not the user's.
    input_last_not_user() -> InvalidRequest: "input: the last message must be the user's (or the input only answers tool calls)";
    /// A run's input over its cap.
    input_too_large(size: count, max: count) -> InvalidRequest: "input: {size} bytes, more than the {max} a run takes";
    /// A `timeoutMs` of 0.
    timeout_zero() -> InvalidRequest: "timeoutMs: must be more than 0";
    /// Session metadata over its caps.
    metadata_too_large(keys: count, bytes: count, max_keys: count, max_bytes: count) -> InvalidRequest ["field" = "metadata"]: "metadata: {keys} keys, {bytes} bytes as JSON; the caps are {max_keys} keys and {max_bytes} bytes";
    /// A session metadata key over 128 characters (its first 32 shown).
    metadata_key_too_long(key: quoted, max: count) -> InvalidRequest ["field" = "metadata"]: "metadata: the key {key}... is longer than {max} characters";
    /// An environment asked to act while it is not `ready` (`details.environment`: as it is).
    environment_not_ready(id: text, status: text) -> Conflict: "environment {id} is {status}, not ready";
    /// An environment a run names that is not `ready` (or is being deleted).
    environment_unready_for_run(id: text) -> Conflict: "environment {id} is not ready (it may have been deleted)";

    // --- Tokens --------------------------------------------------------------
    /// `tokens.create` with a scope the protocol does not have.
    unknown_scope() -> InvalidRequest ["field" = "scopes"]: "scopes: an unknown scope";
    /// `tokens.create` granting nothing.
    no_scopes() -> InvalidRequest ["field" = "scopes"]: "scopes: give scopes, a preset, or both";
    /// A token lifetime out of range.
    token_lifetime(ms: count, max: count) -> InvalidRequest ["field" = "expiresInMs"]: "expiresInMs: {ms} is out of range: 1000 to {max} (30 days)";
    /// A scope the minting token does not have.
    scope_beyond_minter(scope: text) -> InvalidRequest ["field" = "scopes"]: "scopes: {scope} is beyond the minting token's scopes";
    /// A token that would outlive the token minting it.
    token_outlives_minter(left_ms: count) -> InvalidRequest ["field" = "expiresInMs"]: "expiresInMs: the token would outlive the one minting it (which expires in {left_ms} ms)";
    /// An empty subject.
    subject_empty() -> InvalidRequest ["field" = "subject"]: "subject: it is empty";
    /// A subject on an admin token.
    subject_on_admin() -> InvalidRequest ["field" = "subject"]: "subject: an admin token sees every subject; it cannot be bound";
    /// A subject other than the minting token's.
    subject_not_minters() -> InvalidRequest ["field" = "subject"]: "subject: it is not the minting token's subject";
    /// Agents on an admin token.
    agents_on_admin() -> InvalidRequest ["field" = "agents"]: "agents: an admin token runs every agent; it cannot be bound";
    /// No agents, or too many.
    agents_count(max: count) -> InvalidRequest ["field" = "agents"]: "agents: give 1 to {max} agents, or none for every agent";
    /// An agent the minting token is not bound to.
    agent_not_minters() -> InvalidRequest ["field" = "agents"]: "agents: an agent the minting token is not bound to";
    /// A bound token minting an admin token.
    bound_minting_admin() -> InvalidRequest ["field" = "scopes"]: "scopes: a bound token minting an admin token";
    /// A ticket asked with scopes other than `session.read`.
    ticket_scopes() -> InvalidRequest ["field" = "scopes"]: "scopes: a ticket reads one stream: it takes session.read and nothing else";
    /// An idempotency key that minted a token with other params.
    token_key_reused(key: quoted, id: text => "tokenId", why: text) -> Conflict: "idempotency key {key} minted token {id}, which {why}: use a new key";

    /// A run past its `timeoutMs` (its `RunResult.error`).
    run_timed_out(ms: count) -> Timeout: "the run exceeded its time limit of {ms} ms";

    // --- Tasks --------------------------------------------------------------
    /// `tasks.list`'s `status` is not a task status.
    unknown_task_status() -> InvalidRequest ["field" = "status"]: "status: an unknown task status";
    /// `tasks.list`'s `kind` is not a task kind.
    unknown_task_kind() -> InvalidRequest ["field" = "kind"]: "kind: an unknown task kind";
    /// `tasks.list`'s cursor is not a task id.
    cursor_not_a_task(cursor: quoted) -> InvalidRequest ["field" = "cursor"]: "cursor {cursor} is not a task: pass the previous page's nextCursor";
    /// A change to a task that has ended.
    task_ended(id: quoted, status: text) -> Conflict: "task {id} has ended ({status})";
    /// A task that kept changing under a cancel.
    task_busy(id: quoted) -> Conflict: "task {id} kept changing; cancel it again";
    /// A task whose work is gone without an ending (its `error` when `lost`).
    task_lost(why: text) -> Unavailable: "the task's work is gone: {why}";
    /// A background process that ended with a non-zero exit code or a signal.
    process_failed(how: text) -> Internal: "the process {how}";
    /// A background process killed at its time limit.
    process_timed_out(seconds: count) -> Timeout: "the process ran past its {seconds} s limit and was killed";
    /// `tasks.notify`'s policy is not one this side knows.
    unknown_notify_policy() -> InvalidRequest ["field" = "notifyPolicy"]: "notifyPolicy: one of done_only, state_changes, silent";

    // --- Schedules ----------------------------------------------------------
    /// A `schedule` the clock cannot follow (a bad expression, time zone,
    /// interval or time).
    bad_schedule(why: text) -> InvalidRequest ["field" = "schedule"]: "schedule: {why}";
    /// `catchUp` is not a policy this side knows.
    unknown_catch_up() -> InvalidRequest ["field" = "catchUp"]: "catchUp: one of run_once, skip";
    /// `deleteAfterRun` on a schedule that fires more than once.
    delete_after_run_not_at() -> InvalidRequest ["field" = "deleteAfterRun"]: "deleteAfterRun: only an at schedule (which fires once) is deleted after its run";
    /// `schedules.list`'s cursor is not a schedule id.
    cursor_not_a_schedule(cursor: quoted) -> InvalidRequest ["field" = "cursor"]: "cursor {cursor} is not a schedule: pass the previous page's nextCursor";
    /// `schedules.run` while the schedule's last firing is still live.
    schedule_firing(id: quoted, task: quoted) -> Conflict: "schedule {id} is still running its last firing (task {task}); wait for it or cancel it";
    /// A token past the schedules it may keep.
    too_many_schedules(max: count) -> QuotaExceeded: "at most {max} schedules per token: delete one first";
    /// A schedule that changed under an update.
    schedule_busy(id: quoted) -> Conflict: "schedule {id} kept changing; update it again";

    // --- Approvals, questions, tools ----------------------------------------
    /// A decision the approval does not offer.
    decision_not_offered(offered: text) -> InvalidRequest: "decision not offered for this approval; offered: {offered}";
    /// A second answer to an approval.
    approval_resolved() -> Conflict: "this approval was already resolved";
    /// A second answer to a question.
    question_answered() -> Conflict: "this question was already answered";
    /// An answer that does not fit the question's schema.
    answer_unfit(errors: text) -> InvalidRequest: "the answer does not fit the question: {errors}";
    /// `tools.invoke`'s `tool` out of bounds.
    tool_ref_invalid(max: count) -> InvalidRequest: "tool: a catalog id or name of 1 to {max} bytes";
    /// `tools.invoke`'s `arguments` not an object.
    arguments_not_object() -> InvalidRequest: "arguments: an object";
    /// A tool the agent may not call directly (or that does not exist).
    no_direct_tool(tool: quoted) -> NotFound ["outcome" = "not_found"]: "no tool {tool} this agent may call directly";

    // --- Agents and environments -------------------------------------------
    /// `agents.create` of an id the config declares.
    agent_in_config(id: quoted) -> Conflict: "agent {id} is declared in the config file";
    /// `agents.update` or `agents.delete` of an agent the config declares.
    agent_edit_in_config(id: quoted) -> Conflict: "agent {id} is declared in the config file; edit it there";
    /// An environment provider the gateway does not have.
    no_environment_provider(id: quoted, have: text) -> NotFound: "no environment provider {id}; this gateway has {have}";
    /// `environments.create`'s `settings` not an object.
    settings_not_object() -> InvalidRequest: "settings: an object";

    // --- The fakes' injected faults -----------------------------------------
    /// A fake gateway's scripted `rate_limited` fault.
    injected_rate_limit() -> RateLimited: "this token is over its rate (injected by the fake gateway)";
    /// A fake gateway's scripted `unavailable` fault.
    injected_unavailable() -> Unavailable: "the gateway is unavailable (injected by the fake gateway)";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_fill_the_template_and_the_details() {
        let error = refuse::cursor_expired("12", "40");
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            serde_json::json!({"code": "cursor_expired",
                "message": "cursor 12 has expired; the oldest event kept is 40",
                "retryable": false, "details": {"cursor": "12", "oldestId": "40"}})
        );
        assert_eq!(
            refuse::not_found("run", "a\"b\n").message,
            "run \"a\\\"b\\n\" not found"
        );
        assert_eq!(
            refuse::frame_not_request().message,
            "a request is {\"type\":\"req\",\"id\":..,\"method\":..,\"params\":{..}}"
        );
        assert_eq!(
            serde_json::to_value(refuse::no_token().details).unwrap(),
            serde_json::json!({"reason": "missing"})
        );
    }

    #[test]
    fn every_placeholder_is_an_argument_and_every_argument_is_used() {
        for refusal in REFUSALS {
            let named: Vec<&str> = pieces(refusal.template)
                .into_iter()
                .filter_map(|p| match p {
                    Piece::Arg(name) => Some(name),
                    Piece::Text(_) => None,
                })
                .collect();
            let args: Vec<&str> = refusal.args.iter().map(|a| a.name).collect();
            assert_eq!(named, args, "{}", refusal.name);
        }
    }
}
