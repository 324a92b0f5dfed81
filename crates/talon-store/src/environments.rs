//! Managed environments: the provider's record of each (settings, where
//! its workspace is, its status), kept as a document beside its id,
//! status and creation time. The workspace itself is on disk.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Store;
use crate::error::{Result, StoreError};
use crate::records::{doc_of, json_text, ms};

impl Store {
    /// Stores a new environment record, `subject`'s (none: an unbound
    /// token's); [`StoreError::Exists`] when its id is taken.
    pub async fn create_environment<T: Serialize>(
        &self,
        (id, subject, token): (&str, Option<&str>, Option<&str>),
        status: &str,
        created_at: u64,
        doc: &T,
    ) -> Result<()> {
        let inserted = sqlx::query(
            "INSERT INTO environments (id, status, created_at, doc, subject, token_id) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(id.to_owned())
        .bind(status.to_owned())
        .bind(ms(created_at)?)
        .bind(json_text(doc)?)
        .bind(subject.map(str::to_owned))
        .bind(token.map(str::to_owned))
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: "environment",
                id: id.to_owned(),
            })
        }
    }

    /// One environment record.
    pub async fn environment<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        let row = sqlx::query("SELECT doc FROM environments WHERE id = $1")
            .bind(id.to_owned())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// Every environment record, oldest first: `subject`'s only when
    /// given.
    pub async fn environments<T: DeserializeOwned>(&self, subject: Option<&str>) -> Result<Vec<T>> {
        let rows = sqlx::query(
            "SELECT doc FROM environments WHERE ($1 IS NULL OR subject = $1) \
             ORDER BY created_at, id",
        )
        .bind(subject.map(str::to_owned))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// Records the bytes environment `id` takes on disk (its workspace and
    /// baseline), which count in [`Store::stored_bytes`].
    pub async fn set_environment_footprint(&self, id: &str, bytes: u64) -> Result<()> {
        sqlx::query("UPDATE environments SET footprint = $2 WHERE id = $1")
            .bind(id.to_owned())
            .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
            .execute(self.writes())
            .await?;
        Ok(())
    }

    /// Replaces an environment record; `false` when there is none.
    pub async fn update_environment<T: Serialize>(
        &self,
        id: &str,
        status: &str,
        doc: &T,
    ) -> Result<bool> {
        let changed = sqlx::query("UPDATE environments SET status = $2, doc = $3 WHERE id = $1")
            .bind(id.to_owned())
            .bind(status.to_owned())
            .bind(json_text(doc)?)
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }
}
