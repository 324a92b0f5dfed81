//! `tokens.create`: an admin mints a short-lived, scoped token (for an
//! app's browser, say) without the CLI. `tokens.ticket`'s rule: a ticket
//! opens one stream ([`TicketStream`]), read-only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounded::{AgentId, IdempotencyKey, Name, RunId, SessionKey, Subject, TokenId};
use super::error::ApiError;
use super::refuse;
use super::scope::{Scope, ScopePreset};

pub use super::caps::MAX_TOKEN_TTL_MS;

pub use super::caps::MAX_TOKEN_AGENTS;

/// `tokens.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokensCreateParams {
    /// A name for people (who it is for); shown by `talon token list`
    /// and in the access log.
    pub name: Name,
    /// Scopes it grants, beside `preset`'s (at least one of the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<Scope>>,
    /// A named set of scopes: `app`, `viewer` or `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<ScopePreset>,
    /// How long it lives, in milliseconds (1,000 to 30 days).
    #[schemars(range(min = 1000, max = 2_592_000_000u64))]
    pub expires_in_ms: u64,
    /// Binds it to a subject (an app's user or tenant): it sees and acts
    /// only on the sessions, runs, approvals, questions, artifacts,
    /// environments and events that tokens of this subject made, and its
    /// session keys name sessions of this subject only. Absent: unbound
    /// (it sees every subject's). Never with `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Binds it to these agents (1 to 64): it sees, runs and reads only
    /// theirs. Absent: every agent. Never with `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentId>>,
    /// Makes a retry safe: a call with the key of an earlier one (and the
    /// same name and scopes) gives the same token id with a fresh secret
    /// and lifetime, and the earlier secret stops working, so one key
    /// never leaves two live tokens. With other params: `conflict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// `tokens.create`'s answer: the secret, shown once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    /// The secret (`talon_` and 64 hex digits), for `Authorization:
    /// Bearer`. The gateway keeps only its hash: it is never shown again.
    pub token: String,
    /// The token's id (`tok_...`), to revoke it.
    pub id: TokenId,
    /// Its name.
    pub name: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it expires, epoch milliseconds.
    pub expires_at: u64,
    /// The subject it is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The agents it is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentId>>,
}

/// Whom and which agents a token acts for: absent parts bind nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    /// Its subject.
    pub subject: Option<Subject>,
    /// Its agents, sorted, without repeats.
    pub agents: Option<Vec<AgentId>>,
}

impl TokensCreateParams {
    /// The scopes it grants (the preset's and the listed ones, sorted,
    /// without repeats) and when it expires: `invalid_request` naming the
    /// field when there are none, one is unknown, or the lifetime is out
    /// of range. The gateway and the fake gateway both decide by this.
    pub fn grant(&self, now_ms: u64) -> Result<(Vec<Scope>, u64), ApiError> {
        let mut scopes: Vec<Scope> = self.preset.map(|p| p.scopes().to_vec()).unwrap_or_default();
        for scope in self.scopes.iter().flatten() {
            if *scope == Scope::Unknown {
                return Err(refuse::unknown_scope());
            }
            scopes.push(*scope);
        }
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() {
            return Err(refuse::no_scopes());
        }
        if !(1000..=MAX_TOKEN_TTL_MS).contains(&self.expires_in_ms) {
            return Err(refuse::token_lifetime(self.expires_in_ms, MAX_TOKEN_TTL_MS));
        }
        Ok((scopes, now_ms.saturating_add(self.expires_in_ms)))
    }

    /// [`Self::grant`] under `parent`: no scope the parent lacks, and no
    /// life past the parent's, so a minted token never outgrows (or
    /// outlives, by re-minting itself) the token that made it.
    pub fn grant_under(
        &self,
        parent: &ParentBounds<'_>,
        now_ms: u64,
    ) -> Result<(Vec<Scope>, u64), ApiError> {
        let (scopes, expires_at) = self.grant(now_ms)?;
        if let Some(beyond) = scopes.iter().find(|s| !s.satisfied_by(parent.scopes)) {
            return Err(refuse::scope_beyond_minter(beyond.as_str()));
        }
        if let Some(limit) = parent.expires_at
            && expires_at > limit
        {
            return Err(refuse::token_outlives_minter(limit.saturating_sub(now_ms)));
        }
        Ok((scopes, expires_at))
    }

    /// Whom the token acts for, within `parent`'s binding
    /// ([`Binding::under`]).
    pub fn bind_under(&self, scopes: &[Scope], parent: &Binding) -> Result<Binding, ApiError> {
        Binding {
            subject: self.subject.clone(),
            agents: self.agents.clone(),
        }
        .under(scopes, parent)
    }
}

impl Binding {
    /// This binding, asked for a token with `scopes`, within `parent`'s: a
    /// subject that is not empty and is the parent's when the parent has
    /// one (absent: the parent's); 1 to [`MAX_TOKEN_AGENTS`] agents, each
    /// the parent's when the parent has some (absent: the parent's);
    /// neither with `admin` among `scopes` (an admin sees every subject).
    /// `invalid_request` naming the field otherwise. The gateway, the CLI
    /// and the fake gateways all decide by this.
    pub fn under(&self, scopes: &[Scope], parent: &Binding) -> Result<Binding, ApiError> {
        let admin = scopes.contains(&Scope::Admin);
        let subject = match (&self.subject, &parent.subject) {
            (Some(s), _) if s.as_str().is_empty() => return Err(refuse::subject_empty()),
            (Some(_), _) if admin => {
                return Err(refuse::subject_on_admin());
            }
            (Some(s), Some(p)) if s != p => {
                return Err(refuse::subject_not_minters());
            }
            (Some(s), _) => Some(s.clone()),
            (None, p) => p.clone(),
        };
        let agents = match (&self.agents, &parent.agents) {
            (Some(_), _) if admin => {
                return Err(refuse::agents_on_admin());
            }
            (Some(list), _) if list.is_empty() || list.len() > MAX_TOKEN_AGENTS => {
                return Err(refuse::agents_count(MAX_TOKEN_AGENTS as u64));
            }
            (Some(list), Some(allowed)) if list.iter().any(|a| !allowed.contains(a)) => {
                return Err(refuse::agent_not_minters());
            }
            (Some(list), _) => {
                let mut list = list.clone();
                list.sort();
                list.dedup();
                Some(list)
            }
            (None, p) => p.clone(),
        };
        if admin && (subject.is_some() || agents.is_some()) {
            return Err(refuse::bound_minting_admin());
        }
        Ok(Binding { subject, agents })
    }
}

/// `tokens.list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokensListParams {
    /// At most this many (default 100, at most 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<TokenId>,
    /// Revoked tokens too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_revoked: Option<bool>,
    /// Only the tokens bound to this subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// A token as `tokens.list` shows it: never its secret or its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Its id.
    pub id: TokenId,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When it was made, epoch milliseconds.
    pub created_at: u64,
    /// When it expires, epoch milliseconds (absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was revoked, epoch milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<u64>,
    /// The token that minted it with `tokens.create` (absent: made by an
    /// operator with the CLI, or the first admin token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<TokenId>,
    /// The subject it is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The agents it is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentId>>,
}

/// `tokens.list`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensListResult {
    /// By id.
    pub tokens: Vec<TokenInfo>,
    /// The next page's cursor (absent: this is the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<TokenId>,
}

/// `tokens.revoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokensRevokeParams {
    /// The token.
    pub token_id: TokenId,
    /// Accepted for a retry's sake; revoking is idempotent by itself: a
    /// retry answers the same tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// `tokens.revoke`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensRevokeResult {
    /// The token asked for.
    pub token_id: TokenId,
    /// Every token now revoked with it: the token, then those minted under
    /// it (and theirs), by id, whether this call or an earlier one revoked
    /// them (each keeps the time it was first revoked).
    pub revoked: Vec<TokenId>,
}

/// What a token minted through `tokens.create` may have at most: its
/// parent's scopes and expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentBounds<'a> {
    /// The parent's scopes (`admin` grants every scope).
    pub scopes: &'a [Scope],
    /// When the parent expires (`None`: never).
    pub expires_at: Option<u64>,
}

/// The one stream a `tokens.ticket` ticket opens. A ticket is for a page
/// that streams without holding a long-lived credential: it opens this
/// stream once, reads it with `session.read` only, and calls nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum TicketStream {
    /// `GET /v1/runs/{runId}/events` for this run.
    Run(TicketRun),
    /// `GET /v1/events` with this filter (the query's filter is not read).
    Events(StreamFilter),
    /// `GET /v1/ws`, on which it may only `events.subscribe` with this
    /// filter (and `events.unsubscribe`).
    Socket(StreamFilter),
}

/// The run a ticket's stream follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TicketRun {
    /// The run.
    pub run_id: RunId,
}

/// Which events of the log a ticket's stream sends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamFilter {
    /// Only this session's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    /// Only this agent's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Only these types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<crate::EventType>>,
}

impl StreamFilter {
    /// Whether `events.subscribe` asks for exactly this filter (its
    /// cursor is the caller's).
    pub fn is_asked_by(&self, p: &super::params::EventsSubscribeParams) -> bool {
        self.session_key == p.session_key && self.agent_id == p.agent_id && self.types == p.types
    }
}

impl Default for TicketStream {
    /// What a ticket minted without `stream` opens: the event log's SSE
    /// stream, unfiltered.
    fn default() -> Self {
        Self::Events(StreamFilter::default())
    }
}

impl super::params::TokensTicketParams {
    /// The ticket's scopes and stream: `session.read` (the one scope a
    /// stream needs; `scopes` may name it and nothing else) and `stream`
    /// or the log's. `invalid_request` naming the field otherwise. The
    /// gateway and the fake gateways both decide by this.
    pub fn grant(&self) -> Result<(Vec<Scope>, TicketStream), ApiError> {
        if let Some(asked) = &self.scopes
            && asked.iter().any(|s| *s != Scope::SessionRead)
        {
            return Err(refuse::ticket_scopes());
        }
        Ok((
            vec![Scope::SessionRead],
            self.stream.clone().unwrap_or_default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_stays_within_its_parents_and_never_binds_an_admin() {
        let bind = |v: serde_json::Value, parent: &Binding| {
            let mut p =
                serde_json::json!({"name": "n", "scopes": ["session.read"], "expiresInMs": 5000});
            p.as_object_mut()
                .unwrap()
                .extend(v.as_object().unwrap().clone());
            let p: TokensCreateParams = serde_json::from_value(p).unwrap();
            let (scopes, _) = p.grant(0).unwrap();
            p.bind_under(&scopes, parent).map_err(|e| {
                e.details
                    .and_then(|d| d.field)
                    .map(serde_json::Value::String)
            })
        };
        let free = Binding::default();
        assert_eq!(
            bind(
                serde_json::json!({"subject": "u1", "agents": ["b", "a", "b"]}),
                &free
            ),
            Ok(Binding {
                subject: Some(Subject::new("u1")),
                agents: Some(vec![AgentId::new("a"), AgentId::new("b")])
            })
        );
        let parent = Binding {
            subject: Some(Subject::new("u1")),
            agents: Some(vec![AgentId::new("a")]),
        };
        assert_eq!(bind(serde_json::json!({}), &parent), Ok(parent.clone()));
        assert_eq!(
            bind(serde_json::json!({"subject": "u2"}), &parent),
            Err(Some(serde_json::json!("subject")))
        );
        assert_eq!(
            bind(serde_json::json!({"agents": ["b"]}), &parent),
            Err(Some(serde_json::json!("agents")))
        );
        assert_eq!(
            bind(serde_json::json!({"agents": []}), &free),
            Err(Some(serde_json::json!("agents")))
        );
        assert_eq!(
            bind(serde_json::json!({"subject": ""}), &free),
            Err(Some(serde_json::json!("subject")))
        );
        assert_eq!(
            bind(
                serde_json::json!({"subject": "u1", "scopes": ["admin"]}),
                &free
            ),
            Err(Some(serde_json::json!("subject")))
        );
        assert_eq!(
            bind(serde_json::json!({"scopes": ["admin"]}), &parent),
            Err(Some(serde_json::json!("scopes")))
        );
    }

    fn params(scopes: &[Scope], expires_in_ms: u64) -> TokensCreateParams {
        serde_json::from_value(serde_json::json!({
            "name": "child", "scopes": scopes, "expiresInMs": expires_in_ms
        }))
        .unwrap()
    }

    #[test]
    fn a_minted_token_stays_within_its_parents_scopes_and_life() {
        let parent = ParentBounds {
            scopes: &[Scope::AgentRun, Scope::SessionRead],
            expires_at: Some(10_000),
        };
        assert_eq!(
            params(&[Scope::SessionRead], 5_000).grant_under(&parent, 1_000),
            Ok((vec![Scope::SessionRead], 6_000))
        );
        let field = |e: ApiError| {
            e.details
                .and_then(|d| d.field)
                .map(serde_json::Value::String)
        };
        assert_eq!(
            params(&[Scope::SessionWrite], 5_000)
                .grant_under(&parent, 1_000)
                .map_err(field),
            Err(Some(serde_json::json!("scopes")))
        );
        assert_eq!(
            params(&[Scope::SessionRead], 9_001)
                .grant_under(&parent, 1_000)
                .map_err(field),
            Err(Some(serde_json::json!("expiresInMs")))
        );
        // An admin parent without an expiry bounds nothing but the 30 days.
        let admin = ParentBounds {
            scopes: &[Scope::Admin],
            expires_at: None,
        };
        assert_eq!(
            params(&[Scope::SessionWrite, Scope::Admin], 5_000).grant_under(&admin, 0),
            Ok((vec![Scope::SessionWrite, Scope::Admin], 5_000))
        );
    }
}
