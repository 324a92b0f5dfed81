//! Access tokens: minted random (256 bits), stored as their SHA-256 only,
//! checked in constant time, never logged. The first start of a gateway
//! with no tokens mints an admin token into `$TALON_STATE_DIR/admin.token`
//! (mode 0600).
//!
//! A token's secret is `talon_` and 64 hex digits. With 256 random bits a
//! plain SHA-256 cannot be reversed or guessed, so every node sharing a
//! database can check a token without a shared key.
//!
//! Stream tickets (`tokens.ticket`) are how a browser authenticates an
//! `EventSource` or a `WebSocket`, which cannot carry a header: `tkt_` and
//! 64 hex digits, minted with the bearer token, stored as their SHA-256,
//! valid for one stream and [`TICKET_TTL`] by default, carrying some of
//! the minting token's scopes. A long-lived token never goes in a URL.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use talon_protocol::gateway::bounded::TokenId;
use talon_protocol::gateway::bounded::{AgentId, Subject};

use sha2::{Digest, Sha256};
use talon_protocol::gateway::AuthRefusal as Refusal;
use talon_protocol::gateway::tokens::{CreatedToken, TokensCreateParams};
use talon_protocol::gateway::{ApiError, Binding, ErrorCode, Scope};
use talon_store::{Store, StoredToken};

pub use crate::auth::identity::Caller;
use crate::auth::identity::ticket_refusal;
use crate::error::{GatewayError, Result, api_error};

/// What every secret starts with (so scanners and people recognise it).
pub const SECRET_PREFIX: &str = "talon_";
/// The admin token's file under the state directory.
pub const ADMIN_TOKEN_FILE: &str = "admin.token";
/// What every stream ticket starts with.
pub const TICKET_PREFIX: &str = "tkt_";
/// How long a stream ticket may wait to be used, by default.
pub const TICKET_TTL: Duration =
    Duration::from_millis(talon_protocol::gateway::caps::TICKET_TTL_MS);

/// A token just minted: the secret is shown once and never stored.
#[derive(Clone)]
pub struct MintedToken {
    /// The secret (`talon_...`).
    pub secret: String,
    /// What is stored.
    pub stored: StoredToken,
}

impl std::fmt::Debug for MintedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedToken")
            .field("secret", &"<redacted>")
            .field("stored", &self.stored)
            .finish()
    }
}

use hex::encode as hex;
use talon_protocol::gateway::TicketStream;

/// A token's binding as the store keeps it.
fn binding_of(token: &StoredToken) -> Binding {
    Binding {
        subject: token.subject.clone().map(Subject::new),
        agents: token
            .agents
            .as_ref()
            .map(|agents| agents.iter().map(AgentId::new).collect()),
    }
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(GatewayError::Random)?;
    Ok(bytes)
}

/// The stored form of a secret: its SHA-256, hex.
pub fn hash(secret: &str) -> String {
    hex(Sha256::digest(secret.as_bytes()))
}

/// Equal, taking the same time wherever the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Mints a token with `scopes`, valid until `expires_at` (epoch ms).
pub fn mint(
    name: Option<String>,
    scopes: Vec<Scope>,
    expires_at: Option<u64>,
    now: u64,
) -> Result<MintedToken> {
    let secret = format!("{SECRET_PREFIX}{}", hex(random::<32>()?));
    let stored = StoredToken {
        subject: None,
        agents: None,
        id: format!("tok_{}", hex(random::<8>()?)),
        hash: hash(&secret),
        name,
        scopes,
        created_at: now,
        expires_at,
        revoked_at: None,
        parent_id: None,
    };
    Ok(MintedToken { secret, stored })
}

/// Mints and stores a token.
pub async fn create(
    store: &Store,
    name: Option<String>,
    scopes: Vec<Scope>,
    expires_at: Option<u64>,
    now: u64,
) -> Result<MintedToken> {
    create_bound(store, (name, &Binding::default()), scopes, expires_at, now).await
}

/// [`create`] bound to a subject and agents (checked by the caller with
/// `Binding::under`).
pub async fn create_bound(
    store: &Store,
    (name, binding): (Option<String>, &Binding),
    scopes: Vec<Scope>,
    expires_at: Option<u64>,
    now: u64,
) -> Result<MintedToken> {
    let mut minted = mint(name, scopes, expires_at, now)?;
    minted.stored.subject = binding.subject.clone().map(Subject::into_string);
    minted.stored.agents = binding
        .agents
        .as_ref()
        .map(|agents| agents.iter().map(|a| a.to_string()).collect());
    store.insert_token(&minted.stored).await?;
    Ok(minted)
}

/// `tokens.create`: mints a named token with the scopes `p` grants,
/// expiring within 30 days, under the caller: at most its scopes and its
/// life (`TokensCreateParams::grant_under`), revoked with it. With an idempotency key the token's id is
/// derived from the caller and the key, so a retry finds the first token
/// and gives it a fresh secret and lifetime (the first secret, which may
/// have been lost on the way, stops working); other params with the same
/// key, or a key whose token was revoked, are a `conflict`.
pub async fn create_for(
    store: &Store,
    caller: &Caller,
    p: TokensCreateParams,
    now: u64,
) -> std::result::Result<CreatedToken, ApiError> {
    let parent = talon_protocol::gateway::ParentBounds {
        scopes: &caller.scopes,
        expires_at: caller.expires_at,
    };
    let (scopes, expires_at) = p.grant_under(&parent, now)?;
    let binding = p.bind_under(&scopes, &caller.binding)?;
    let name = p.name.to_string();
    let mut minted = mint(Some(name.clone()), scopes.clone(), Some(expires_at), now)
        .map_err(|error| ApiError::new(ErrorCode::Internal, error.to_string()))?;
    minted.stored.parent_id = Some(caller.token_id.clone());
    minted.stored.subject = binding.subject.clone().map(Subject::into_string);
    minted.stored.agents = binding
        .agents
        .as_ref()
        .map(|agents| agents.iter().map(|a| a.to_string()).collect());
    let replayed = match &p.idempotency_key {
        None => false,
        Some(key) => {
            let id = keyed_id(&caller.token_id, key.as_ref());
            minted.stored.id.clone_from(&id);
            let earlier = store.token(&id).await.map_err(api_error)?;
            match earlier {
                None => false,
                Some(earlier)
                    if earlier.name.as_deref() == Some(&*name)
                        && earlier.scopes == scopes
                        && earlier.subject == minted.stored.subject
                        && earlier.agents == minted.stored.agents =>
                {
                    if !store
                        .replace_token_secret(&id, &minted.stored.hash, Some(expires_at))
                        .await
                        .map_err(api_error)?
                    {
                        return Err(keyed_conflict(key.as_ref(), &id, "was revoked"));
                    }
                    true
                }
                Some(_) => {
                    return Err(keyed_conflict(
                        key.as_ref(),
                        &id,
                        "has another name, scopes or binding",
                    ));
                }
            }
        }
    };
    if !replayed {
        store
            .insert_token(&minted.stored)
            .await
            .map_err(api_error)?;
    }
    tracing::info!(
        token = %minted.stored.id, name = %name, by = %caller.token_id, replayed,
        "token created through tokens.create"
    );
    Ok(CreatedToken {
        subject: binding.subject,
        agents: binding.agents,
        token: minted.secret,
        id: TokenId::new(minted.stored.id),
        name,
        scopes,
        expires_at,
    })
}

/// The id of the token a caller mints with an idempotency key.
fn keyed_id(caller: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("tokens.create\0{caller}\0{key}").as_bytes());
    format!("tok_{}", hex(&digest[..8]))
}

fn keyed_conflict(key: &str, id: &str, why: &str) -> ApiError {
    talon_protocol::gateway::refuse::token_key_reused(key, id, why)
}

/// The caller an `Authorization` header value names, or `unauthenticated`
/// with the [`Refusal`] as `details.reason`.
pub async fn authenticate(
    store: &Store,
    authorization: Option<&str>,
    now: u64,
) -> std::result::Result<Caller, ApiError> {
    let Some(header) = authorization else {
        return Err(Refusal::Missing.error());
    };
    let secret = header
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|s| s.starts_with(SECRET_PREFIX) && s.len() <= 128)
        .ok_or_else(|| Refusal::Malformed.error())?;
    let hashed = hash(secret);
    let token = store.token_by_hash(&hashed).await.map_err(|error| {
        tracing::error!(%error, "token lookup failed");
        ApiError::new(ErrorCode::Unavailable, "the token store is unavailable")
    })?;
    match token {
        Some(token) if constant_time_eq(token.hash.as_bytes(), hashed.as_bytes()) => {
            if token.revoked_at.is_some() {
                Err(Refusal::Revoked.error())
            } else if !token.is_live(now) {
                Err(Refusal::Expired.error())
            } else {
                Ok(Caller {
                    binding: binding_of(&token),
                    token_id: token.id,
                    name: token.name,
                    scopes: token.scopes,
                    expires_at: token.expires_at,
                    ticket: None,
                })
            }
        }
        _ => Err(Refusal::Unknown.error()),
    }
}

/// Whether `caller`'s token is still live (a long-lived connection checks
/// before each call, so a revocation holds at once, not only when the
/// connection is closed): `unauthenticated` naming why when it is not.
pub(crate) async fn still_live(
    store: &Store,
    caller: &Caller,
) -> std::result::Result<(), ApiError> {
    let now = store.now_ms();
    let token = store
        .token(&caller.token_id)
        .await
        .map_err(crate::error::api_error)?;
    match token {
        Some(token) if token.is_live(now) => Ok(()),
        Some(token) if token.revoked_at.is_none() => {
            Err(crate::auth::revocation::Ended::Expired.error())
        }
        _ => Err(crate::auth::revocation::Ended::Revoked.error()),
    }
}

/// Mints a stream ticket for `caller`: the one stream `p` names (the
/// log's when none), read-only (`TokensTicketParams::grant`), valid for
/// `ttl`. A run's stream needs the run to exist.
pub async fn mint_ticket(
    store: &Store,
    caller: &Caller,
    p: &talon_protocol::gateway::params::TokensTicketParams,
    ttl: Duration,
    now: u64,
) -> std::result::Result<talon_protocol::gateway::params::StreamTicket, ApiError> {
    if caller.ticket.is_some() {
        return Err(ticket_refusal("tokens.ticket"));
    }
    let (scopes, stream) = p.grant()?;
    for scope in &scopes {
        caller.require(*scope)?;
    }
    if let TicketStream::Run(run) = &stream {
        crate::auth::owned::run_for(store, caller, run.run_id.as_str()).await?;
    }
    let bytes = random::<32>().map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    let ticket = format!("{TICKET_PREFIX}{}", hex(bytes));
    let expires_at = now.saturating_add(ttl.as_millis() as u64);
    let stored = talon_store::StoredTicket {
        hash: hash(&ticket),
        token_id: caller.token_id.clone(),
        scopes: scopes.clone(),
        expires_at,
        stream: stream.clone(),
    };
    store
        .insert_ticket(&stored, now)
        .await
        .map_err(crate::error::api_error)?;
    Ok(talon_protocol::gateway::params::StreamTicket {
        ticket,
        expires_at,
        scopes,
        stream,
    })
}

/// The caller a stream ticket stands for, consuming it: `unauthenticated`
/// when it is malformed, unknown, used, expired, or its token is no longer
/// live.
pub async fn redeem_ticket(
    store: &Store,
    ticket: &str,
    now: u64,
) -> std::result::Result<Caller, ApiError> {
    let refused = || talon_protocol::gateway::refuse::bad_ticket();
    let well_formed = ticket
        .strip_prefix(TICKET_PREFIX)
        .is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_hexdigit()));
    if !well_formed {
        return Err(refused());
    }
    let unavailable = |error: talon_store::StoreError| {
        tracing::error!(%error, "ticket lookup failed");
        ApiError::new(ErrorCode::Unavailable, "the token store is unavailable")
            .with_retry_after_ms(1_000)
    };
    let taken = store
        .take_ticket(&hash(ticket), now)
        .await
        .map_err(unavailable)?
        .ok_or_else(refused)?;
    let token = store
        .token(&taken.token_id)
        .await
        .map_err(unavailable)?
        .filter(|t| t.is_live(now))
        .ok_or_else(refused)?;
    Ok(Caller {
        binding: binding_of(&token),
        token_id: token.id,
        name: token.name,
        scopes: taken.scopes,
        expires_at: token.expires_at,
        ticket: Some(taken.stream),
    })
}

/// On a store with no tokens at all, mints an admin token and writes its
/// secret to `<state_dir>/admin.token` (mode 0600); returns the secret to
/// print once. `None` when tokens exist.
pub async fn bootstrap_admin(store: &Store, state_dir: &Path, now: u64) -> Result<Option<String>> {
    if !store.tokens().await?.is_empty() {
        return Ok(None);
    }
    let minted = mint(Some("admin".into()), vec![Scope::Admin], None, now)?;
    let file = state_dir.join(ADMIN_TOKEN_FILE);
    if file.exists() {
        // Never overwritten: the old secret may be the only copy of a
        // token another store still honours.
        let kept = state_dir.join(format!("{ADMIN_TOKEN_FILE}.replaced-{now}"));
        std::fs::rename(&file, &kept).map_err(|source| GatewayError::Io {
            path: file.clone(),
            source,
        })?;
        tracing::warn!(
            old = %kept.display(),
            "the store had no tokens: a new admin token replaces admin.token; the old one was moved aside"
        );
    }
    write_secret(&file, &minted.secret)?;
    store.insert_token(&minted.stored).await?;
    Ok(Some(minted.secret))
}

/// Writes a secret file readable by its owner only (replacing any old one).
fn write_secret(path: &Path, secret: &str) -> Result<()> {
    let io = |source| GatewayError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = PathBuf::from(format!("{}.tmp{}", path.display(), std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    file.write_all(secret.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A duration like `30d`, `12h`, `15m` or `90s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    if n == 0 {
        return None;
    }
    n.checked_mul(seconds).map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_stored_hashed() {
        let a = mint(None, vec![Scope::AgentRun], None, 1).unwrap();
        let b = mint(None, vec![Scope::AgentRun], None, 1).unwrap();
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.stored.id, b.stored.id);
        assert_eq!(a.secret.len(), SECRET_PREFIX.len() + 64);
        assert_eq!(a.stored.hash, hash(&a.secret));
        assert!(!format!("{a:?}").contains(&a.secret));
    }

    #[test]
    fn durations_parse_or_are_refused() {
        assert_eq!(parse_duration("30d"), Some(Duration::from_secs(2_592_000)));
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("2w"), Some(Duration::from_secs(1_209_600)));
        for bad in [
            "",
            "d",
            "0d",
            "10",
            "5y",
            "-1d",
            "99999999999999999999d",
            "1.5h",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn constant_time_eq_is_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
