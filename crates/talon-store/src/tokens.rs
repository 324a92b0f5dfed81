//! Access tokens: only a hash of the secret is stored; scopes, a
//! name, an expiry and a revocation time beside it. Stream tickets
//! (`tokens.ticket`): single-use, short-lived credentials a token mints,
//! stored as their hash and consumed by deleting them, so a ticket opens
//! one stream on whichever node it reaches first.

use sqlx::Row;
use sqlx::any::AnyRow;
use talon_protocol::gateway::Scope;

use crate::Store;
use crate::error::{Result, corrupt};
use crate::records::{StoredTicket, StoredToken, json_text, ms, opt_ms};

const COLUMNS: &str =
    "id, hash, name, scopes, created_at, expires_at, revoked_at, parent_id, subject, agents";

/// The most tokens a page of [`Store::tokens_page`] holds.
pub const MAX_TOKENS_PAGE: u32 = 500;

impl Store {
    /// Stores a token (its hash only).
    pub async fn insert_token(&self, token: &StoredToken) -> Result<()> {
        sqlx::query(
            "INSERT INTO tokens (id, hash, name, scopes, created_at, expires_at, revoked_at, parent_id, subject, agents) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(token.id.clone())
        .bind(token.hash.clone())
        .bind(token.name.clone())
        .bind(json_text(&token.scopes)?)
        .bind(ms(token.created_at)?)
        .bind(opt_ms(token.expires_at)?)
        .bind(opt_ms(token.revoked_at)?)
        .bind(token.parent_id.clone())
        .bind(token.subject.clone())
        .bind(token.agents.as_ref().map(json_text).transpose()?)
        .execute(self.writes())
        .await?;
        Ok(())
    }

    /// The token whose secret hashes to `hash`.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<StoredToken>> {
        sqlx::query(sql!("SELECT {COLUMNS} FROM tokens WHERE hash = $1"))
            .bind(hash.to_owned())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(token_of)
            .transpose()
    }

    /// Every token, oldest first.
    pub async fn tokens(&self) -> Result<Vec<StoredToken>> {
        sqlx::query(sql!("SELECT {COLUMNS} FROM tokens ORDER BY created_at, id"))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(token_of)
            .collect()
    }

    /// The token with this id.
    pub async fn token(&self, id: &str) -> Result<Option<StoredToken>> {
        sqlx::query(sql!("SELECT {COLUMNS} FROM tokens WHERE id = $1"))
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(token_of)
            .transpose()
    }

    /// The ids of tokens revoked at or after `since` (epoch ms), with when:
    /// what every node's live connections look for.
    pub async fn revoked_since(&self, since: u64) -> Result<Vec<(String, u64)>> {
        let rows = sqlx::query(
            "SELECT id, revoked_at FROM tokens WHERE revoked_at IS NOT NULL AND revoked_at >= $1",
        )
        .bind(ms(since)?)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let at: i64 = row.try_get(1)?;
                Ok((row.try_get(0)?, at.max(0) as u64))
            })
            .collect()
    }

    /// Stores a stream ticket (its hash only), dropping expired ones.
    pub async fn insert_ticket(&self, ticket: &StoredTicket, now: u64) -> Result<()> {
        sqlx::query("DELETE FROM stream_tickets WHERE expires_at <= $1")
            .bind(ms(now)?)
            .execute(self.writes())
            .await?;
        sqlx::query(
            "INSERT INTO stream_tickets (hash, token_id, scopes, expires_at, stream) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(ticket.hash.clone())
        .bind(ticket.token_id.clone())
        .bind(json_text(&ticket.scopes)?)
        .bind(ms(ticket.expires_at)?)
        .bind(json_text(&ticket.stream)?)
        .execute(self.writes())
        .await?;
        Ok(())
    }

    /// Consumes the ticket whose secret hashes to `hash`: it is deleted, so
    /// only one caller on any node gets it; `None` when there is none or it
    /// expired before `now`.
    pub async fn take_ticket(&self, hash: &str, now: u64) -> Result<Option<StoredTicket>> {
        let row = sqlx::query(
            "DELETE FROM stream_tickets WHERE hash = $1 RETURNING hash, token_id, scopes, expires_at, stream",
        )
        .bind(hash.to_owned())
        .fetch_optional(self.writes())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let scopes: String = row.try_get(2)?;
        let expires: i64 = row.try_get(3)?;
        let stream: Option<String> = row.try_get(4)?;
        let ticket = StoredTicket {
            hash: row.try_get(0)?,
            token_id: row.try_get(1)?,
            scopes: serde_json::from_str::<Vec<Scope>>(&scopes).map_err(corrupt)?,
            expires_at: expires.max(0) as u64,
            stream: match stream {
                Some(text) => serde_json::from_str(&text).map_err(corrupt)?,
                None => Default::default(),
            },
        };
        Ok((now < ticket.expires_at).then_some(ticket))
    }

    /// Gives an unrevoked token a new secret (its hash) and expiry: the old
    /// secret stops working. `false` when there is no such live token.
    pub async fn replace_token_secret(
        &self,
        id: &str,
        hash: &str,
        expires_at: Option<u64>,
    ) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE tokens SET hash = $2, expires_at = $3 WHERE id = $1 AND revoked_at IS NULL",
        )
        .bind(id.to_owned())
        .bind(hash.to_owned())
        .bind(opt_ms(expires_at)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Tokens by id after `after`, at most `limit` (capped at
    /// [`MAX_TOKENS_PAGE`]), revoked ones only when `include_revoked`,
    /// only those bound to `subject` when given.
    pub async fn tokens_page(
        &self,
        after: Option<&str>,
        limit: u32,
        include_revoked: bool,
        subject: Option<&str>,
    ) -> Result<Vec<StoredToken>> {
        sqlx::query(sql!(
            "SELECT {COLUMNS} FROM tokens \
             WHERE ($1 IS NULL OR id > $1) AND ($2 = 1 OR revoked_at IS NULL) \
               AND ($4 IS NULL OR subject = $4) \
             ORDER BY id LIMIT $3"
        ))
        .bind(after.map(str::to_owned))
        .bind(i64::from(include_revoked))
        .bind(i64::from(limit.clamp(1, MAX_TOKENS_PAGE)))
        .bind(subject.map(str::to_owned))
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(token_of)
        .collect()
    }

    /// Revokes a token and every token it minted, and theirs, at `now`
    /// (those revoked before keep their time), in one statement: the ids
    /// of the whole tree, the token's first, then by id. `None` when there
    /// is no token with that id.
    pub async fn revoke_token_tree(&self, id: &str, now: u64) -> Result<Option<Vec<String>>> {
        if self.token(id).await?.is_none() {
            return Ok(None);
        }
        let rows = sqlx::query(
            "WITH RECURSIVE tree(id) AS ( \
                 SELECT $1 \
                 UNION SELECT t.id FROM tokens t JOIN tree ON t.parent_id = tree.id) \
             UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) \
             WHERE id IN (SELECT id FROM tree) \
             RETURNING id",
        )
        .bind(id.to_owned())
        .bind(ms(now)?)
        .fetch_all(self.writes())
        .await?;
        let mut revoked: Vec<String> = rows
            .iter()
            .map(|row| row.try_get::<String, _>(0))
            .collect::<std::result::Result<_, _>>()?;
        // The token asked for first, then its descendants by id.
        revoked.sort_by(|a, b| (a != id).cmp(&(b != id)).then_with(|| a.cmp(b)));
        Ok(Some(revoked))
    }

    /// Revokes one live token at `now` if no one has yet: `true` for the
    /// one caller that did, `false` when it was already revoked (or is
    /// unknown). What makes a one-time secret (a dashboard's login code)
    /// usable once, whichever node two exchanges reach.
    pub async fn consume_token(&self, id: &str, now: u64) -> Result<bool> {
        let done =
            sqlx::query("UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
                .bind(id.to_owned())
                .bind(ms(now)?)
                .execute(self.writes())
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Revokes a token and its descendants ([`Store::revoke_token_tree`]);
    /// `false` when there is none with that id.
    pub async fn revoke_token(&self, id: &str, now: u64) -> Result<bool> {
        Ok(self.revoke_token_tree(id, now).await?.is_some())
    }
}

fn token_of(row: &AnyRow) -> Result<StoredToken> {
    let scopes: String = row.try_get(3)?;
    let created: i64 = row.try_get(4)?;
    let expires: Option<i64> = row.try_get(5)?;
    let revoked: Option<i64> = row.try_get(6)?;
    Ok(StoredToken {
        id: row.try_get(0)?,
        hash: row.try_get(1)?,
        name: row.try_get(2)?,
        scopes: serde_json::from_str::<Vec<Scope>>(&scopes).map_err(corrupt)?,
        created_at: created.max(0) as u64,
        expires_at: expires.map(|t| t.max(0) as u64),
        revoked_at: revoked.map(|t| t.max(0) as u64),
        parent_id: row.try_get(7)?,
        subject: row.try_get(8)?,
        agents: row
            .try_get::<Option<String>, _>(9)?
            .map(|text| serde_json::from_str::<Vec<String>>(&text))
            .transpose()
            .map_err(corrupt)?,
    })
}
