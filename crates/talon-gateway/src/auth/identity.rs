//! Who is calling: an authenticated token's [`Caller`] (its scopes, its
//! binding, a ticket's one stream), and the namespace its idempotency keys
//! are stored in. A leaf: what authenticates a caller ([`super::tokens`])
//! and what it may see ([`super::owned`]) build on it.

use talon_protocol::gateway::{ApiError, Binding, Scope, TicketStream};

/// Who is calling: an authenticated token (or a ticket it minted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's id (a ticket's caller is the token that minted it).
    pub token_id: String,
    /// The token's name, when it has one (for the access log).
    pub name: Option<String>,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// When the token stops working (epoch ms): a stream it opened ends
    /// then.
    pub expires_at: Option<u64>,
    /// The one stream a ticket's caller may open (`None`: a token's
    /// caller). A ticket's caller calls no method.
    pub ticket: Option<TicketStream>,
    /// The subject and agents it is bound to ([`crate::auth::owned`]).
    pub binding: Binding,
}

impl Caller {
    /// `forbidden` (`details.reason: "ticket"`) unless this caller may
    /// open `stream`: a token may open any stream its scopes allow; a
    /// ticket only the one it was minted for.
    pub fn may_open(&self, stream: &TicketStream) -> std::result::Result<(), ApiError> {
        match &self.ticket {
            None => Ok(()),
            Some(mine) if mine == stream => Ok(()),
            Some(_) => Err(ticket_refusal("this ticket opens another stream")),
        }
    }

    /// `forbidden` naming `scope` unless the token holds it (or `admin`).
    pub fn require(&self, scope: Scope) -> std::result::Result<(), ApiError> {
        if scope.satisfied_by(&self.scopes) {
            Ok(())
        } else {
            Err(ApiError::forbidden(scope))
        }
    }

    /// `key` as stored for this caller's `kind` of call (`run`,
    /// `environment`): in the caller's own namespace, so no other token
    /// can read or poison what it names. U+001F separates the parts, and a
    /// key may not hold it (keys refuse control characters), so no caller
    /// can spell another's; keys stored before the namespace never match.
    /// A bound token's namespace is its subject's, so that a subject's
    /// tokens (a user's browser tokens, minted one after another) retry
    /// into the same one.
    pub(crate) fn scoped_key(&self, kind: &str, key: &str) -> String {
        match &self.binding.subject {
            Some(subject) => format!("sub:{subject}{KEY_SEPARATOR}{kind}{KEY_SEPARATOR}{key}"),
            None => format!(
                "tok:{}{KEY_SEPARATOR}{kind}{KEY_SEPARATOR}{key}",
                self.token_id
            ),
        }
    }

    /// The id `prefix_<hash>` a keyed create of `kind` makes from `key`,
    /// in the caller's namespace ([`Caller::scoped_key`]): a retry makes
    /// the same id, so it finds what the first call made; another
    /// namespace's same key makes another.
    pub(crate) fn keyed_id(&self, kind: &str, key: &str, prefix: &str) -> String {
        use sha2::Digest as _;
        let scoped = self.scoped_key(kind, key);
        let hash = hex::encode(&sha2::Sha256::digest(scoped.as_bytes())[..12]);
        format!("{prefix}_{hash}")
    }

    /// Whether the token may see raw runtime payloads.
    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }
}

/// A ticket's caller doing what its ticket does not allow.
pub(crate) fn ticket_refusal(what: &str) -> ApiError {
    talon_protocol::gateway::refuse::ticket_calls(what)
}

/// What separates the parts of a [`Caller::scoped_key`].
const KEY_SEPARATOR: char = '\u{1f}';

/// The key a caller gave, from its stored [`Caller::scoped_key`] (for
/// messages: the namespace is the gateway's, not the caller's).
pub(crate) fn given_key(stored: &str) -> &str {
    stored.rsplit(KEY_SEPARATOR).next().unwrap_or(stored)
}
