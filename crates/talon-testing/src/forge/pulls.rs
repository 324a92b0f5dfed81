//! The forge's REST API (under `/api/v3`): the calls a gateway makes to
//! open a pull request, answered as GitHub answers them, against the bare
//! repository's branches.
//!
//! - `GET /repos/{owner}/{repo}`: the repository (`default_branch`).
//! - `POST /repos/{owner}/{repo}/pulls` (`{title, head, base, body?,
//!   draft?}`, `head` being `branch` or `owner:branch`): 201 with the pull
//!   request and a `Location`; 422 `Validation Failed` when one is already
//!   open for that head and base, when the head or base branch does not
//!   exist, when the head has no commits the base lacks, or when a field
//!   is missing.
//! - `GET /repos/{owner}/{repo}/pulls?state=&head=&base=`: the matches,
//!   newest first (`state` open by default; `head` as `owner:branch`).
//! - `GET` / `PATCH /repos/{owner}/{repo}/pulls/{number}` (`title`,
//!   `body`, `state`, `base`).
//!
//! Every call needs `Authorization: Bearer TOKEN` or `token TOKEN` (401
//! `Bad credentials` otherwise). An `Accept` header must admit JSON
//! (`application/vnd.github+json`, `application/json`, `*/*`; 415
//! otherwise); `X-GitHub-Api-Version`, when sent, must be a version GitHub
//! serves (400 otherwise). A pull request's `head.sha` and `base.sha` follow
//! its branches while it is open. Errors carry GitHub's shape:
//! `{message, documentation_url, status}` (and `errors` for 422).

use std::collections::BTreeMap;

use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::{DEFAULT_BRANCH, Shared};

/// The API versions accepted in `X-GitHub-Api-Version`.
const API_VERSIONS: &[&str] = &["2022-11-28", "2026-03-10"];
const DOCS: &str = "https://docs.github.com/rest";
const DOCS_CREATE: &str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request";
const DOCS_UPDATE: &str = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request";

/// A pull request as the forge holds it ([`super::Forge::pulls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Its number (from 1).
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its description.
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    /// Whether it was opened as a draft.
    pub draft: bool,
    /// The head branch (`ref`, no owner).
    pub head: String,
    /// The head branch's commit (the latest seen while open).
    pub head_sha: String,
    /// The base branch.
    pub base: String,
    /// The base branch's commit (the latest seen while open).
    pub base_sha: String,
}

/// Answers one API call; `path` is what follows `/api/v3`.
pub(super) async fn api(shared: &Shared, parts: &Parts, path: &str, body: &[u8]) -> Response {
    let failure = shared.inner().failures.pop_front();
    if let Some(failure) = &failure
        && !failure.apply
    {
        return failure_response(failure);
    }
    let response = checked(shared, parts, path, body).await;
    match failure {
        Some(failure) => failure_response(&failure),
        None => response,
    }
}

fn failure_response(failure: &super::Failure) -> Response {
    let status = StatusCode::from_u16(failure.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, &failure.body);
    for (name, value) in &failure.headers {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Authentication, media type and version, then the route.
async fn checked(shared: &Shared, parts: &Parts, path: &str, body: &[u8]) -> Response {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).trim().to_owned())
    };
    let authorized = header("authorization").is_some_and(|value| {
        value.split_once(' ').is_some_and(|(scheme, token)| {
            (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
                && token.trim() == shared.token
        })
    });
    if !authorized {
        return error(StatusCode::UNAUTHORIZED, "Bad credentials");
    }
    if let Some(accept) = header("accept") {
        let accept = accept.to_ascii_lowercase();
        if !(accept.is_empty()
            || accept.contains("json")
            || accept.contains("*/*")
            || accept.contains("application/vnd.github"))
        {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!(
                    "Unsupported 'Accept' header: {accept:?}. Must accept 'application/json'."
                ),
            );
        }
    }
    if let Some(version) = header("x-github-api-version")
        && !API_VERSIONS.contains(&version.as_str())
    {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Unsupported API version: {version}"),
        );
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (owner, repo, rest) = match segments.as_slice() {
        ["repos", owner, repo, rest @ ..] => (*owner, *repo, rest),
        _ => return not_found(),
    };
    if !owner.eq_ignore_ascii_case(&shared.owner) || !repo.eq_ignore_ascii_case(&shared.repo) {
        return not_found();
    }
    let method = &parts.method;
    match rest {
        [] if method == Method::GET => repository(shared),
        ["pulls"] if method == Method::GET => list(shared, parts.uri.query()).await,
        ["pulls"] if method == Method::POST => create(shared, body).await,
        ["pulls", number] => match number.parse::<u64>() {
            Ok(number) if method == Method::GET => get(shared, number).await,
            Ok(number) if method == Method::PATCH => update(shared, number, body).await,
            _ => not_found(),
        },
        _ => not_found(),
    }
}

fn repository(shared: &Shared) -> Response {
    let full_name = format!("{}/{}", shared.owner, shared.repo);
    json_response(
        StatusCode::OK,
        &json!({
            "id": 1,
            "name": shared.repo,
            "full_name": full_name,
            "owner": { "login": shared.owner },
            "private": true,
            "html_url": format!("{}/{full_name}", shared.base_url),
            "url": format!("{}/repos/{full_name}", shared.api_url()),
            "clone_url": format!("{}/{full_name}.git", shared.base_url),
            "default_branch": DEFAULT_BRANCH,
        }),
    )
}

async fn list(shared: &Shared, query: Option<&str>) -> Response {
    let query = parse_query(query.unwrap_or_default());
    let state = query.get("state").map_or("open", String::as_str);
    if !matches!(state, "open" | "closed" | "all") {
        return validation_failed(
            json!([{ "resource": "PullRequest", "field": "state", "code": "invalid" }]),
            DOCS,
        );
    }
    // `owner:branch`; a bare branch name matches too.
    let head = query.get("head").map(|head| match head.split_once(':') {
        Some((owner, branch)) => (Some(owner.to_owned()), branch.to_owned()),
        None => (None, head.clone()),
    });
    let base = query.get("base");
    refresh(shared).await;
    let inner = shared.inner();
    let pulls: Vec<Value> = inner
        .pulls
        .iter()
        .rev()
        .filter(|pull| state == "all" || pull.state == state)
        .filter(|pull| {
            head.as_ref().is_none_or(|(owner, branch)| {
                owner
                    .as_ref()
                    .is_none_or(|owner| owner.eq_ignore_ascii_case(&shared.owner))
                    && *branch == pull.head
            })
        })
        .filter(|pull| base.is_none_or(|base| *base == pull.base))
        .map(|pull| render(shared, pull))
        .collect();
    json_response(StatusCode::OK, &Value::Array(pulls))
}

async fn get(shared: &Shared, number: u64) -> Response {
    refresh(shared).await;
    let inner = shared.inner();
    match inner.pulls.iter().find(|pull| pull.number == number) {
        Some(pull) => json_response(StatusCode::OK, &render(shared, pull)),
        None => not_found(),
    }
}

async fn create(shared: &Shared, body: &[u8]) -> Response {
    let fields = match parse_object(body) {
        Ok(fields) => fields,
        Err(response) => return *response,
    };
    let mut missing = Vec::new();
    let mut text = |name: &str| match fields.get(name) {
        Some(Value::String(value)) if !value.is_empty() => Some(value.clone()),
        _ => {
            missing
                .push(json!({ "resource": "PullRequest", "field": name, "code": "missing_field" }));
            None
        }
    };
    let (title, head, base) = (text("title"), text("head"), text("base"));
    let (Some(title), Some(head), Some(base)) = (title, head, base) else {
        return validation_failed(Value::Array(missing), DOCS_CREATE);
    };
    let body = fields
        .get("body")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let draft = fields
        .get("draft")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let head = match head.split_once(':') {
        Some((owner, branch)) if owner.eq_ignore_ascii_case(&shared.owner) => branch.to_owned(),
        Some(_) => return invalid_field("head", DOCS_CREATE),
        None => head,
    };
    let tips = match branch_tips(shared).await {
        Ok(tips) => tips,
        Err(message) => return error(StatusCode::INTERNAL_SERVER_ERROR, &message),
    };
    let (Some(head_sha), Some(base_sha)) = (tips.get(&head), tips.get(&base)) else {
        let field = if tips.contains_key(&head) {
            "base"
        } else {
            "head"
        };
        return invalid_field(field, DOCS_CREATE);
    };
    if let Some(response) = duplicate(shared, &head, &base, None) {
        return response;
    }
    let ahead = git(
        shared,
        &["rev-list", "--count", &format!("{base_sha}..{head_sha}")],
    )
    .await;
    if ahead.as_deref().map(str::trim) == Ok("0") {
        return validation_failed(
            json!([{
                "resource": "PullRequest",
                "code": "custom",
                "message": format!("No commits between {base} and {head}"),
            }]),
            DOCS_CREATE,
        );
    }
    let mut inner = shared.inner();
    // Checked again under the lock: two concurrent creates make one.
    if inner
        .pulls
        .iter()
        .any(|pull| pull.state == "open" && pull.head == head && pull.base == base)
    {
        drop(inner);
        return duplicate(shared, &head, &base, None).unwrap_or_else(not_found);
    }
    let pull = PullRequest {
        number: inner.pulls.len() as u64 + 1,
        title,
        body,
        state: "open".to_owned(),
        draft,
        head_sha: head_sha.clone(),
        head,
        base_sha: base_sha.clone(),
        base,
    };
    let rendered = render(shared, &pull);
    inner.pulls.push(pull);
    drop(inner);
    let mut response = json_response(StatusCode::CREATED, &rendered);
    if let Some(location) = rendered["url"].as_str()
        && let Ok(location) = HeaderValue::from_str(location)
    {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

async fn update(shared: &Shared, number: u64, body: &[u8]) -> Response {
    let fields = match parse_object(body) {
        Ok(fields) => fields,
        Err(response) => return *response,
    };
    let tips = match branch_tips(shared).await {
        Ok(tips) => tips,
        Err(message) => return error(StatusCode::INTERNAL_SERVER_ERROR, &message),
    };
    let Some(current) = shared
        .inner()
        .pulls
        .iter()
        .find(|pull| pull.number == number)
        .cloned()
    else {
        return not_found();
    };
    let mut pull = current.clone();
    if let Some(title) = fields.get("title") {
        match title.as_str() {
            Some(title) if !title.is_empty() => pull.title = title.to_owned(),
            _ => return invalid_field("title", DOCS_UPDATE),
        }
    }
    if let Some(body) = fields.get("body") {
        match body {
            Value::String(body) => pull.body = Some(body.clone()),
            Value::Null => pull.body = None,
            _ => return invalid_field("body", DOCS_UPDATE),
        }
    }
    if let Some(state) = fields.get("state") {
        match state.as_str() {
            Some(state @ ("open" | "closed")) => pull.state = state.to_owned(),
            _ => return invalid_field("state", DOCS_UPDATE),
        }
    }
    if let Some(base) = fields.get("base") {
        match base.as_str() {
            Some(base) if tips.contains_key(base) => pull.base = base.to_owned(),
            _ => return invalid_field("base", DOCS_UPDATE),
        }
    }
    if pull.state == "open"
        && (current.state != "open" || current.base != pull.base)
        && let Some(response) = duplicate(shared, &pull.head, &pull.base, Some(number))
    {
        return response;
    }
    if pull.state == "open" {
        update_shas(&mut pull, &tips);
    }
    let rendered = render(shared, &pull);
    let mut inner = shared.inner();
    if let Some(slot) = inner.pulls.iter_mut().find(|p| p.number == number) {
        *slot = pull;
    }
    drop(inner);
    json_response(StatusCode::OK, &rendered)
}

/// 422 when another open pull request has this head and base.
fn duplicate(shared: &Shared, head: &str, base: &str, except: Option<u64>) -> Option<Response> {
    let exists = shared.inner().pulls.iter().any(|pull| {
        pull.state == "open"
            && pull.head == head
            && pull.base == base
            && Some(pull.number) != except
    });
    exists.then(|| {
        validation_failed(
            json!([{
                "resource": "PullRequest",
                "code": "custom",
                "message": format!("A pull request already exists for {}:{head}.", shared.owner),
            }]),
            DOCS_CREATE,
        )
    })
}

/// Updates the open pull requests' commits from their branches.
async fn refresh(shared: &Shared) {
    if let Ok(tips) = branch_tips(shared).await {
        for pull in shared.inner().pulls.iter_mut() {
            if pull.state == "open" {
                update_shas(pull, &tips);
            }
        }
    }
}

fn update_shas(pull: &mut PullRequest, tips: &BTreeMap<String, String>) {
    if let Some(sha) = tips.get(&pull.head) {
        pull.head_sha.clone_from(sha);
    }
    if let Some(sha) = tips.get(&pull.base) {
        pull.base_sha.clone_from(sha);
    }
}

/// A pull request as GitHub renders it (the fields gateways read).
fn render(shared: &Shared, pull: &PullRequest) -> Value {
    let full_name = format!("{}/{}", shared.owner, shared.repo);
    json!({
        "url": format!("{}/repos/{full_name}/pulls/{}", shared.api_url(), pull.number),
        "html_url": format!("{}/{full_name}/pull/{}", shared.base_url, pull.number),
        "number": pull.number,
        "state": pull.state,
        "title": pull.title,
        "body": pull.body,
        "draft": pull.draft,
        "merged": false,
        "head": {
            "label": format!("{}:{}", shared.owner, pull.head),
            "ref": pull.head,
            "sha": pull.head_sha,
        },
        "base": {
            "label": format!("{}:{}", shared.owner, pull.base),
            "ref": pull.base,
            "sha": pull.base_sha,
        },
    })
}

/// Each branch's commit.
async fn branch_tips(shared: &Shared) -> Result<BTreeMap<String, String>, String> {
    let out = git(
        shared,
        &[
            "for-each-ref",
            "--format=%(refname:short) %(objectname)",
            "refs/heads/",
        ],
    )
    .await?;
    Ok(out
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(branch, sha)| (branch.to_owned(), sha.to_owned()))
        .collect())
}

async fn git(shared: &Shared, args: &[&str]) -> Result<String, String> {
    let output = tokio::process::Command::new("git")
        .arg("-C")
        .arg(&shared.git_dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|error| format!("git {}: {error}", args.join(" ")))?;
    if !output.status.success() {
        return Err(format!(
            "git {} ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The body as a JSON object, or GitHub's 400.
fn parse_object(body: &[u8]) -> Result<Map<String, Value>, Box<Response>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        _ => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "Problems parsing JSON",
        ))),
    }
}

/// `a=b&c=d`, percent-decoded (`+` is a space).
fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.extend(u8::try_from(high * 16 + low).ok());
                i += 3;
                continue;
            }
            (b'+', _, _) => out.push(b' '),
            (byte, _, _) => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn invalid_field(field: &str, docs: &str) -> Response {
    validation_failed(
        json!([{ "resource": "PullRequest", "field": field, "code": "invalid" }]),
        docs,
    )
}

fn validation_failed(errors: Value, docs: &str) -> Response {
    json_response(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({
            "message": "Validation Failed",
            "errors": errors,
            "documentation_url": docs,
            "status": "422",
        }),
    )
}

fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "Not Found")
}

/// GitHub's error body: `{message, documentation_url, status}`.
pub(super) fn error(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        &json!({
            "message": message,
            "documentation_url": DOCS,
            "status": status.as_u16().to_string(),
        }),
    )
}

/// A JSON answer with GitHub's headers.
fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (
                header::HeaderName::from_static("x-github-media-type"),
                "github.v3; format=json",
            ),
            (
                header::HeaderName::from_static("x-github-api-version-selected"),
                API_VERSIONS[0],
            ),
            (header::HeaderName::from_static("x-ratelimit-limit"), "5000"),
            (
                header::HeaderName::from_static("x-ratelimit-remaining"),
                "4999",
            ),
            (
                header::HeaderName::from_static("x-ratelimit-resource"),
                "core",
            ),
        ],
        value.to_string(),
    )
        .into_response()
}
