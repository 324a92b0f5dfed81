//! The hostile-client suite: each class of hole an attack on the gateway
//! found, tried with shapes of its own rather than the one example.
//!
//! - [`browsers`]: foreign `Host`s (DNS rebinding), foreign `Origin`s on
//!   calls and WebSocket upgrades, CORS off by default and on for listed
//!   origins, stream tickets (single use, short-lived, scoped; a token
//!   never in a URL).
//! - [`environments`]: workspaces only from an admin's sources; every git
//!   channel a repository or the machine controls planted, none run;
//!   secrets only by an admin's name, their encoded forms redacted.
//! - [`idempotency`]: a key is the caller's own on every path (runs,
//!   sessions, direct calls, environments, the OpenAI routes): another
//!   token's is a new key, never its result or a `conflict`.
//! - [`inputs`]: every bounded field at its cap and over it, the schema's
//!   `maxLength`, a session key stored once, byte rates and the stored
//!   bytes quota.
//! - [`lineage`]: a minted token never outlives its parent and dies with
//!   it (`tokens.revoke` takes the tree; its streams end within a second).
//! - [`memory`]: a token's unread streams hold at most its byte budget, a
//!   starved stream ends and resumes with no gap, a token's streams and
//!   requests in flight are capped, trickled bodies are cut.
//! - [`sandbox`]: shell commands trying to reach the gateway, its state,
//!   its process and port, other workspaces and the host past the command
//!   sandbox, and floods of processes, memory and disk.
//! - [`revocation`]: a revoked or expired token's WebSockets and SSE
//!   streams end within a second, on every node of an SQLite state
//!   directory and of a PostgreSQL database.
//!
//! A full disk and start-up integrity need a process of their own: they
//! are in `talon-cli`'s suite (`hostile_state`). The method × scope matrix
//! is [`super::scopes`].

mod browsers;
mod environments;
mod footprints;
mod idempotency;
mod inputs;
mod lineage;
mod memory;
mod openai;
mod ownership;
mod quota;
mod revocation;
mod sandbox;

/// A token with every scope but `admin`, bound as `binding` says
/// (`{"subject": ...}`, `{"agents": [...]}`; `{}`: unbound).
pub(super) async fn bound_token(
    g: &super::TestGateway,
    name: &str,
    binding: serde_json::Value,
) -> String {
    let scopes: Vec<talon_protocol::gateway::Scope> = talon_protocol::gateway::Scope::ALL
        .iter()
        .copied()
        .filter(|s| *s != talon_protocol::gateway::Scope::Admin)
        .collect();
    let mut params = serde_json::json!({"name": name, "scopes": scopes, "expiresInMs": 3_600_000});
    params
        .as_object_mut()
        .unwrap()
        .extend(binding.as_object().unwrap().clone());
    let (status, body) = g.call(&g.admin, "tokens.create", params).await;
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().unwrap().to_owned()
}
