//! The gateway's guard: [`talon_wire::guard::screen`] (the Host check, the
//! Origin check and CORS, which the fake applies too) around every route,
//! and a refused Host or Origin logged at `warn`, naming the config key
//! that admits it. The one cookie believed is the dashboard's sign-in, on
//! a request from the gateway's own origin ([`crate::auth::browser`]);
//! tokens are otherwise bearer headers, and streams take a ticket
//! ([`crate::auth::tokens`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use talon_wire::guard::{Screened, expose, screen};

use crate::state::Shared;

/// The Host check, the Origin check and CORS, around every route.
pub(crate) async fn guard(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let cors = match screen(&request, &shared.browsers, shared.listen) {
        Screened::Pass { cors, own_origin } => {
            crate::auth::browser::promote(&mut request, own_origin);
            cors
        }
        Screened::Preflight(response) => return response,
        Screened::Refused(refused) => {
            if let Some((what, shown, key)) = &refused.noted {
                log_refused(what, shown, key);
            }
            return refused.into_response();
        }
    };
    let mut response = next.run(request).await;
    expose(&mut response, cors.as_ref());
    response
}

/// How often a refused Host or Origin is logged at `warn`; the others in
/// between go to `debug`, so a flood of refused requests cannot flood the
/// log.
const REFUSED_WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs a request refused for its `what` (`host` or `origin`), naming the
/// config key that admits it: an operator whose page or proxy is refused
/// learns what to change from the log alone.
fn log_refused(what: &'static str, shown: &str, key: &'static str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = talon_protocol::clock::Clock::system().now_ms();
    let last = LAST.load(Ordering::Relaxed);
    let due = now.saturating_sub(last) >= REFUSED_WARN_EVERY.as_millis() as u64
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    if due {
        tracing::warn!(what, refused = ?shown, key, "a request was refused for its {what}; to accept it, list it in {key} (further refusals this minute are logged at debug)");
    } else {
        tracing::debug!(what, refused = ?shown, key, "a request was refused for its {what}");
    }
}
