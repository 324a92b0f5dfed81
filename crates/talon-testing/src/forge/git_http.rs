//! The forge's git smart HTTP: each request to `/{owner}/{repo}.git/...`
//! runs `git http-backend` as a CGI (RFC 3875) over the forge's project
//! root, after the forge's own authentication (the token as the basic-auth
//! password; needed to push, checked whenever sent). The request body is
//! streamed into the CGI's stdin (and kept for the record) while its
//! stdout is read; the CGI's header lines (`Status:`, `Content-Type:`,
//! ...) become the response's status and headers, the rest its body.

use std::future::poll_fn;
use std::pin::Pin;
use std::process::Stdio;

use axum::body::{Body, HttpBody};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Shared;
use super::auth::basic_credentials;

/// Serves one git request; returns the response and the request body.
pub(super) async fn serve(shared: &Shared, parts: &Parts, body: Body) -> (Response, Vec<u8>) {
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or_default();
    let push = path.ends_with("/git-receive-pack")
        || query
            .split('&')
            .any(|pair| pair == "service=git-receive-pack");
    let credentials = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(|value| basic_credentials(&String::from_utf8_lossy(value.as_bytes())));
    let remote_user = match credentials {
        Some(Some((user, password))) if password == shared.token => Some(user),
        Some(_) => return (unauthorized("Invalid username or token."), Vec::new()),
        None if push => return (unauthorized("Authentication required to push."), Vec::new()),
        None => None,
    };
    match run_backend(shared, parts, remote_user, body).await {
        Ok(done) => done,
        Err(message) => {
            tracing::warn!(%message, "the forge's git http-backend failed");
            (
                (StatusCode::INTERNAL_SERVER_ERROR, message).into_response(),
                Vec::new(),
            )
        }
    }
}

/// 401 with the challenge that makes git send (or ask for) credentials.
fn unauthorized(message: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Basic realm=\"GitHub\"")],
        format!("{message}\n"),
    )
        .into_response()
}

async fn run_backend(
    shared: &Shared,
    parts: &Parts,
    remote_user: Option<String>,
    mut body: Body,
) -> Result<(Response, Vec<u8>), String> {
    let mut command = tokio::process::Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &shared.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", &shared.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("SERVER_SOFTWARE", "talon-testing-forge")
        .env("SERVER_NAME", "127.0.0.1")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("REQUEST_URI", parts.uri.to_string())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or_default());
    if let Some(user) = &remote_user {
        // The pusher's identity in the reflog; enables receive-pack too
        // (the repository's http.receivepack also does).
        command.env("REMOTE_USER", user).env("AUTH_TYPE", "Basic");
    }
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == header::CONTENT_TYPE {
            command.env("CONTENT_TYPE", value);
        } else if name == header::CONTENT_LENGTH {
            command.env("CONTENT_LENGTH", value);
        } else if name != header::AUTHORIZATION {
            // HTTP_CONTENT_ENCODING (gzip'd requests), HTTP_GIT_PROTOCOL
            // (protocol v2), ...
            let var = format!(
                "HTTP_{}",
                name.as_str().to_ascii_uppercase().replace('-', "_")
            );
            command.env(var, value);
        }
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|error| format!("spawning git http-backend: {error}"))?;
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("git http-backend's pipes are missing".to_owned());
    };
    let feed = async {
        let mut received = Vec::new();
        let mut open = true;
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let Ok(frame) = frame else { break };
            if let Ok(data) = frame.into_data() {
                received.extend_from_slice(&data);
                // A backend that stopped reading (an error) still answers:
                // keep reading the body for the record, stop writing.
                if open && stdin.write_all(&data).await.is_err() {
                    open = false;
                }
            }
        }
        drop(stdin);
        received
    };
    let read_out = async {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out).await;
        out
    };
    let read_err = async {
        let mut err = Vec::new();
        let _ = stderr.read_to_end(&mut err).await;
        err
    };
    let (received, out, err) = tokio::join!(feed, read_out, read_err);
    let status = child
        .wait()
        .await
        .map_err(|error| format!("waiting for git http-backend: {error}"))?;
    if !err.is_empty() {
        tracing::debug!(stderr = %String::from_utf8_lossy(&err), "git http-backend");
    }
    if out.is_empty() {
        return Err(format!(
            "git http-backend ({status}) wrote nothing: {}",
            String::from_utf8_lossy(&err).trim()
        ));
    }
    Ok((cgi_response(&out)?, received))
}

/// Parses a CGI response: header lines, a blank line, the body.
fn cgi_response(out: &[u8]) -> Result<Response, String> {
    let crlf = find(out, b"\r\n\r\n").map(|at| (at, at + 4));
    let lf = find(out, b"\n\n").map(|at| (at, at + 2));
    let (head_end, body_start) = match (crlf, lf) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => (out.len(), out.len()),
    };
    let head = String::from_utf8_lossy(&out[..head_end]);
    let mut response = Response::new(Body::from(out[body_start..].to_vec()));
    for line in head.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("not a CGI header line: {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or_default();
            *response.status_mut() = code
                .parse::<u16>()
                .ok()
                .and_then(|code| StatusCode::from_u16(code).ok())
                .ok_or_else(|| format!("not a CGI status: {value:?}"))?;
            continue;
        }
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|error| format!("CGI header {name:?}: {error}"))?;
        let value =
            HeaderValue::from_str(value).map_err(|error| format!("CGI header {name}: {error}"))?;
        response.headers_mut().append(name, value);
    }
    Ok(response)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
