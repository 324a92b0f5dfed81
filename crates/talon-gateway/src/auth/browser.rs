//! A person's browser on the dashboard: how it signs in, what it holds,
//! when it is believed.
//!
//! - **The sign-in link** (`talon gateway` prints one at start, `talon
//!   dashboard` prints another) carries a one-time code, `lgn_` and 64 hex
//!   digits, in its fragment (never sent to a server, so never in an access
//!   log or a proxy's). The code is a token row named [`LOGIN_NAME`] whose
//!   hash is the code's, with the scopes it signs in with, for
//!   [`LOGIN_TTL`]. It is not a bearer token: [`super::tokens::authenticate`]
//!   takes `talon_` secrets only.
//! - **The exchange** ([`exchange`]): the gateway's own page posts the code;
//!   the row is consumed once ([`talon_store::Store::consume_token`], a
//!   compare-and-set, so of two exchanges on any nodes one wins) and a
//!   session token is minted under it: named [`SESSION_NAME`], the code's
//!   scopes, for [`SESSION_TTL`] at most. Its secret goes to the browser
//!   only as the `HttpOnly`, `SameSite=Strict` cookie [`COOKIE`]: the page's
//!   script never sees a credential, and nothing the page stores holds one.
//! - **When the cookie counts** ([`promote`]): only on a request a browser
//!   sent from the gateway's own origin
//!   ([`talon_wire::guard::Screened::Pass`]'s `own_origin`) that carries no
//!   `Authorization` of its own. Cookies do not keep to a port, so a page
//!   of another port on the same host (same-site, so `SameSite` lets the
//!   cookie go) is refused by its `Origin`; a request with no `Origin` and
//!   no `Sec-Fetch-Site: same-origin` (a program, a link from elsewhere) is
//!   not believed either. A promoted request is then authenticated as a
//!   bearer token would be, with the token's rate, revocation and expiry.
//! - **Sign-out** revokes the session token; a bearer token is never
//!   touched by it. Revoking the token that minted the code (the admin's)
//!   revokes the sign-ins under it.

use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use talon_protocol::gateway::{ApiError, ErrorCode, Scope, refuse};
use talon_store::{Store, StoredToken};

use super::tokens::{self, MintedToken};

/// What every sign-in code starts with.
pub const LOGIN_PREFIX: &str = "lgn_";
/// The name of a sign-in code's token row.
pub const LOGIN_NAME: &str = "dashboard login";
/// The name of a signed-in browser's token.
pub const SESSION_NAME: &str = "dashboard";
/// How long a sign-in link may wait to be opened.
pub const LOGIN_TTL: Duration = Duration::from_secs(15 * 60);
/// How long a browser stays signed in, at most (never past the token that
/// minted its link).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// The cookie a signed-in browser holds.
pub const COOKIE: &str = "talon_dashboard";

/// A sign-in code just minted: shown once (in a link), stored as its hash.
#[derive(Clone)]
pub struct LoginCode {
    /// `lgn_...`.
    pub code: String,
    /// When it stops working (epoch ms).
    pub expires_at: u64,
}

impl std::fmt::Debug for LoginCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginCode")
            .field("code", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl LoginCode {
    /// The link that signs a browser in at `base` (`http://host:port`),
    /// landing on `next` (a path of the dashboard) when given.
    pub fn link(&self, base: &str, next: Option<&str>) -> String {
        let base = base.trim_end_matches('/');
        match next.filter(|n| is_local_path(n)) {
            Some(next) => format!("{base}/login#code={}&next={}", self.code, encode(next)),
            None => format!("{base}/login#code={}", self.code),
        }
    }
}

/// A path on this gateway (`/runs/run_1`), never another host's
/// (`//evil`, `https:`) or one with a scheme.
pub fn is_local_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && path.len() <= 512
        && path.bytes().all(|b| b.is_ascii_graphic())
}

/// `next` as a fragment parameter: what is not a path character escaped.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The root admin token: the oldest live `admin` token minted by no other
/// (the one a first start wrote to `admin.token`), if there is one. What a
/// link the gateway prints is minted under, so revoking it revokes them.
pub async fn root_admin(store: &Store, now: u64) -> talon_store::Result<Option<StoredToken>> {
    Ok(store.tokens().await?.into_iter().find(|t| {
        t.parent_id.is_none()
            && t.is_live(now)
            && t.scopes.contains(&Scope::Admin)
            && t.name.as_deref() != Some(SESSION_NAME)
    }))
}

/// Mints and stores a sign-in code with `scopes`, under `parent` (a token
/// id) when given.
pub async fn mint_login(
    store: &Store,
    scopes: Vec<Scope>,
    parent: Option<&StoredToken>,
    now: u64,
) -> crate::error::Result<LoginCode> {
    let expires_at = now.saturating_add(LOGIN_TTL.as_millis() as u64);
    let expires_at = parent
        .and_then(|p| p.expires_at)
        .map_or(expires_at, |e| e.min(expires_at));
    let MintedToken { secret, mut stored } =
        tokens::mint(Some(LOGIN_NAME.into()), scopes, Some(expires_at), now)?;
    let code = format!("{LOGIN_PREFIX}{}", &secret[tokens::SECRET_PREFIX.len()..]);
    stored.hash = tokens::hash(&code);
    stored.parent_id = parent.map(|p| p.id.clone());
    store.insert_token(&stored).await?;
    Ok(LoginCode { code, expires_at })
}

/// A browser just signed in: its token, and the cookie that carries it.
#[derive(Debug)]
pub(crate) struct SignedIn {
    /// The session token (its secret is only in the cookie).
    pub token: StoredToken,
    /// `Set-Cookie`.
    pub cookie: HeaderValue,
}

/// Exchanges a sign-in code for a session token, once.
pub(crate) async fn exchange(store: &Store, code: &str, now: u64) -> Result<SignedIn, ApiError> {
    let well_formed = code
        .strip_prefix(LOGIN_PREFIX)
        .is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_hexdigit()));
    if !well_formed {
        return Err(refuse::bad_login_code());
    }
    let unavailable = |error: talon_store::StoreError| {
        tracing::error!(%error, "a sign-in failed in the store");
        ApiError::new(ErrorCode::Unavailable, "the token store is unavailable")
            .with_retry_after_ms(1_000)
    };
    let login = store
        .token_by_hash(&tokens::hash(code))
        .await
        .map_err(unavailable)?
        .filter(|t| t.name.as_deref() == Some(LOGIN_NAME) && t.is_live(now))
        .ok_or_else(refuse::bad_login_code)?;
    if !store
        .consume_token(&login.id, now)
        .await
        .map_err(unavailable)?
    {
        return Err(refuse::bad_login_code());
    }
    // The code's parent must still be live: a link outlives no revocation.
    let parent_expires = match &login.parent_id {
        None => None,
        Some(parent) => {
            store
                .token(parent)
                .await
                .map_err(unavailable)?
                .filter(|p| p.is_live(now))
                .ok_or_else(refuse::bad_login_code)?
                .expires_at
        }
    };
    let until = now.saturating_add(SESSION_TTL.as_millis() as u64);
    let until = parent_expires.map_or(until, |e| e.min(until));
    let MintedToken { secret, mut stored } = tokens::mint(
        Some(SESSION_NAME.into()),
        login.scopes.clone(),
        Some(until),
        now,
    )
    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    stored.parent_id = Some(login.id.clone());
    store.insert_token(&stored).await.map_err(unavailable)?;
    let max_age = until.saturating_sub(now) / 1_000;
    let cookie = HeaderValue::try_from(format!(
        "{COOKIE}={secret}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"
    ))
    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    tracing::info!(token = %stored.id, "a browser signed in to the dashboard");
    Ok(SignedIn {
        token: stored,
        cookie,
    })
}

/// The `Set-Cookie` that forgets the sign-in.
pub(crate) fn cleared_cookie() -> HeaderValue {
    HeaderValue::from_static("talon_dashboard=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// The sign-in cookie's secret, if the request carries one.
pub(crate) fn cookie_secret(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|v| v.starts_with(tokens::SECRET_PREFIX) && v.len() <= 128)
}

/// The secret a cookie-signed-in request stands for: set by [`promote`]
/// on a request from the gateway's own origin.
#[derive(Debug, Clone)]
pub(crate) struct FromCookie(pub String);

/// A request a browser sent from the gateway's own origin (what signing
/// in and out requires).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnOrigin;

/// Believes the sign-in cookie of a request from the gateway's own origin
/// that carries no `Authorization`: the request is then authenticated as
/// that token's bearer ([`FromCookie`] marks it, for the WebSocket's first
/// frame and for sign-out). Any other request's cookie is ignored.
pub(crate) fn promote(request: &mut Request, own_origin: bool) {
    if !own_origin {
        return;
    }
    request.extensions_mut().insert(OwnOrigin);
    if request.headers().contains_key(header::AUTHORIZATION) {
        return;
    }
    let Some(secret) = cookie_secret(request.headers()).map(str::to_owned) else {
        return;
    };
    if let Ok(bearer) = HeaderValue::try_from(format!("Bearer {secret}")) {
        request.headers_mut().insert(header::AUTHORIZATION, bearer);
        request.extensions_mut().insert(FromCookie(secret));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_landed_on() {
        assert!(is_local_path("/runs/run_1"));
        assert!(is_local_path("/"));
        for foreign in [
            "//evil.example/x",
            "https://evil.example",
            "runs",
            "/\\evil",
            "/a b",
            "",
        ] {
            assert!(!is_local_path(foreign), "{foreign}");
        }
        let code = LoginCode {
            code: format!("{LOGIN_PREFIX}{}", "a".repeat(64)),
            expires_at: 0,
        };
        let a = "a".repeat(64);
        assert_eq!(
            code.link("http://127.0.0.1:7420/", Some("/runs/run_1?x=1&y")),
            format!("http://127.0.0.1:7420/login#code=lgn_{a}&next=/runs/run_1%3Fx%3D1%26y")
        );
        assert_eq!(
            code.link("http://127.0.0.1:7420", Some("//evil")),
            format!("http://127.0.0.1:7420/login#code=lgn_{a}")
        );
        assert!(!format!("{code:?}").contains(&a));
    }

    #[test]
    fn the_cookie_is_read_by_its_name_only() {
        let secret = format!("talon_{}", "b".repeat(64));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::try_from(format!("other=1; {COOKIE}={secret}; x=y")).unwrap(),
        );
        assert_eq!(cookie_secret(&headers), Some(secret.as_str()));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("xtalon_dashboard=talon_1; talon_dashboard=lgn_x"),
        );
        assert_eq!(cookie_secret(&headers), None);
        assert_eq!(cookie_secret(&HeaderMap::new()), None);
    }
}
