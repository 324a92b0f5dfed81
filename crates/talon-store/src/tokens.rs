//! Access tokens: only a hash of the secret is stored; scopes, a
//! name, an expiry and a revocation time beside it.

use sqlx::Row;
use sqlx::any::AnyRow;
use talon_protocol::gateway::Scope;

use crate::Store;
use crate::error::{Result, corrupt};
use crate::records::{StoredToken, json_text, ms, opt_ms};

const COLUMNS: &str = "id, hash, name, scopes, created_at, expires_at, revoked_at";

impl Store {
    /// Stores a token (its hash only).
    pub async fn insert_token(&self, token: &StoredToken) -> Result<()> {
        sqlx::query(
            "INSERT INTO tokens (id, hash, name, scopes, created_at, expires_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(token.id.clone())
        .bind(token.hash.clone())
        .bind(token.name.clone())
        .bind(json_text(&token.scopes)?)
        .bind(ms(token.created_at)?)
        .bind(opt_ms(token.expires_at)?)
        .bind(opt_ms(token.revoked_at)?)
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

    /// Revokes a token; `false` when there is none with that id.
    pub async fn revoke_token(&self, id: &str, now: u64) -> Result<bool> {
        let changed =
            sqlx::query("UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1")
                .bind(id.to_owned())
                .bind(ms(now)?)
                .execute(self.writes())
                .await?
                .rows_affected();
        Ok(changed == 1)
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
    })
}
