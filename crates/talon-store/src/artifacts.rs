//! Artifacts: the summary the protocol shows, and the content, inline in
//! the database up to `inline_artifact_bytes` and in a file under
//! `<state_dir>/artifacts/` above it (written to a temporary file, synced,
//! then renamed, before the row that names it is committed). Expired
//! artifacts are purged with their files.
//!
//! The `created_at` and `expires_at` columns (epoch milliseconds) are the
//! summary's `createdAt` and `expiresAt`: written from it, and read back
//! into it over whatever the stored document holds (documents written
//! before times were epoch milliseconds on the wire held RFC 3339
//! strings).
//!
//! A file's name is derived from the SHA-256 of the artifact id and a
//! random nonce, so no id can name a path outside the directory and a
//! second write under a taken id never touches the first one's file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::SessionId;

use sha2::{Digest, Sha256};
use sqlx::Row;
use talon_protocol::gateway::ArtifactSummary;

use crate::error::{Result, StoreError, corrupt};
use crate::records::{doc_of, json_text, ms, opt_ms};
use crate::{Owner, Store};

/// An artifact to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewArtifact {
    /// What the protocol shows (its `sizeBytes` is set from the content;
    /// its `createdAt` and `expiresAt` are the rows' times).
    pub summary: ArtifactSummary,
    /// The bytes.
    pub content: Vec<u8>,
}

/// An artifact's bytes as written: inline, or the name of their file.
struct Written {
    size: u64,
    sha256: String,
    inline: Option<Vec<u8>>,
    path: Option<String>,
}

/// Where an artifact's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactContent {
    /// In the database.
    Inline(Vec<u8>),
    /// In this file.
    File(PathBuf),
}

/// An artifact's content and what identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContent {
    /// The bytes, or where they are.
    pub content: ArtifactContent,
    /// Their length.
    pub size: u64,
    /// Their SHA-256, hex.
    pub sha256: String,
}

/// A row's summary (`doc, created_at, expires_at`), its times from the
/// columns.
fn summary_of(row: &sqlx::any::AnyRow) -> Result<ArtifactSummary> {
    let mut doc: serde_json::Value = doc_of(row)?;
    let created: i64 = row.try_get(1)?;
    let expires: Option<i64> = row.try_get(2)?;
    let map = doc
        .as_object_mut()
        .ok_or_else(|| StoreError::Corrupt("an artifact's document is not an object".into()))?;
    map.insert("createdAt".into(), created.into());
    match expires {
        Some(expires) => map.insert("expiresAt".into(), expires.into()),
        None => map.remove("expiresAt"),
    };
    serde_json::from_value(doc).map_err(corrupt)
}

use hex::encode as hex;

impl Store {
    pub(crate) fn artifact_dir(&self) -> PathBuf {
        self.inner.state_dir.join("artifacts")
    }

    /// Stores an artifact and returns its summary as stored.
    pub async fn put_artifact(&self, artifact: NewArtifact) -> Result<ArtifactSummary> {
        let mut summary = artifact.summary;
        let Written {
            size,
            sha256,
            inline,
            path,
        } = self
            .write_content(summary.id.as_str(), artifact.content)
            .await?;
        summary.size_bytes = Some(size);
        let inserted = sqlx::query(
            "INSERT INTO artifacts (id, run_id, session_id, created_at, expires_at, size, sha256, content, path, doc) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
        )
        .bind(summary.id.to_string())
        .bind(summary.run_id.clone().map(RunId::into_string))
        .bind(summary.session_id.clone().map(SessionId::into_string))
        .bind(ms(summary.created_at)?)
        .bind(opt_ms(summary.expires_at)?)
        .bind(ms(size)?)
        .bind(sha256)
        .bind(inline)
        .bind(path.clone())
        .bind(json_text(&summary)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(summary);
        }
        // The id was taken: the file just written is nobody's.
        if let Some(name) = path {
            let _ = std::fs::remove_file(self.artifact_dir().join(name));
        }
        Err(StoreError::Exists {
            kind: "artifact",
            id: summary.id.into_string(),
        })
    }

    /// An artifact's bytes, inline or in a fresh file of its own.
    async fn write_content(&self, id: &str, content: Vec<u8>) -> Result<Written> {
        let size = content.len() as u64;
        let sha256 = hex(Sha256::digest(&content));
        if size <= self.inner.inline_artifact_bytes {
            return Ok(Written {
                size,
                sha256,
                inline: Some(content),
                path: None,
            });
        }
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(corrupt)?;
        let name = format!(
            "{}-{}",
            &hex(Sha256::digest(id.as_bytes()))[..32],
            hex(nonce)
        );
        let dir = self.artifact_dir();
        let target = dir.join(&name);
        tokio::task::spawn_blocking(move || write_synced(&dir, &target, &content))
            .await
            .map_err(corrupt)??;
        Ok(Written {
            size,
            sha256,
            inline: None,
            path: Some(name),
        })
    }

    /// Replaces an artifact's content (and MIME type), keeping its id,
    /// run, session and times: its summary as now stored. A reader that
    /// already opened the old content's file reads it to its end.
    pub async fn replace_artifact(
        &self,
        id: &str,
        mime: &str,
        content: Vec<u8>,
    ) -> Result<ArtifactSummary> {
        let not_found = || StoreError::NotFound {
            kind: "artifact",
            id: id.to_owned(),
        };
        let row =
            sqlx::query("SELECT doc, created_at, expires_at, path FROM artifacts WHERE id = $1")
                .bind(id.to_owned())
                .fetch_optional(self.pool())
                .await?
                .ok_or_else(not_found)?;
        let mut summary = summary_of(&row)?;
        let old: Option<String> = row.try_get(3)?;
        let written = self.write_content(id, content).await?;
        summary.size_bytes = Some(written.size);
        summary.mime_type = Some(mime.to_owned());
        let changed = sqlx::query(
            "UPDATE artifacts SET size = $2, sha256 = $3, content = $4, path = $5, doc = $6 \
             WHERE id = $1",
        )
        .bind(id.to_owned())
        .bind(ms(written.size)?)
        .bind(written.sha256)
        .bind(written.inline)
        .bind(written.path.clone())
        .bind(json_text(&summary)?)
        .execute(self.writes())
        .await?
        .rows_affected();
        // Whichever file is nobody's now goes.
        let orphan = if changed == 1 { old } else { written.path };
        if let Some(name) = orphan {
            let _ = std::fs::remove_file(self.artifact_dir().join(name));
        }
        if changed == 1 {
            Ok(summary)
        } else {
            Err(not_found())
        }
    }

    /// One artifact's summary, unless it has expired by `now`.
    pub async fn artifact(&self, id: &str, now: u64) -> Result<Option<ArtifactSummary>> {
        let row = sqlx::query(
            "SELECT doc, created_at, expires_at FROM artifacts \
             WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(id.to_owned())
        .bind(ms(now)?)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(summary_of).transpose()
    }

    /// Artifacts of a run or a session (or all), oldest first, after the
    /// artifact with id `cursor`, at most `limit`; expired ones are left
    /// out.
    pub async fn artifacts(
        &self,
        (run_id, session_id): (Option<&str>, Option<&str>),
        owner: &Owner,
        cursor: Option<&str>,
        limit: u32,
        now: u64,
    ) -> Result<Vec<ArtifactSummary>> {
        let (subject, agents) = owner.binds()?;
        // A run's artifact is its run's owner's; one of a session only,
        // its session's; one of neither, no subject's or agent's.
        let rows = sqlx::query(sql!(
            "SELECT doc, created_at, expires_at FROM artifacts \
             WHERE ($1 IS NULL OR run_id = $1) AND ($2 IS NULL OR session_id = $2) \
               AND (expires_at IS NULL OR expires_at > $3) \
               AND ($4 IS NULL OR (created_at, id) > \
                    (SELECT created_at, id FROM artifacts WHERE id = $4)) \
               AND (($6 IS NULL AND $7 IS NULL) \
                    OR run_id IN (SELECT id FROM runs WHERE {owned}) \
                    OR (run_id IS NULL AND session_id IN (SELECT id FROM sessions WHERE {owned}))) \
             ORDER BY created_at, id LIMIT $5",
            owned = Owner::condition(self.backend(), 6, "subject", "agent_id"),
        ))
        .bind(run_id.map(str::to_owned))
        .bind(session_id.map(str::to_owned))
        .bind(ms(now)?)
        .bind(cursor.map(str::to_owned))
        .bind(i64::from(limit))
        .bind(subject)
        .bind(agents)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(summary_of).collect()
    }

    /// An artifact's content, unless it has expired by `now`.
    pub async fn artifact_content(&self, id: &str, now: u64) -> Result<Option<StoredContent>> {
        let row = sqlx::query(
            "SELECT size, sha256, content, path FROM artifacts \
             WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(id.to_owned())
        .bind(ms(now)?)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let size: i64 = row.try_get(0)?;
        let inline: Option<Vec<u8>> = row.try_get(2)?;
        let path: Option<String> = row.try_get(3)?;
        let content = match (inline, path) {
            (Some(bytes), _) => ArtifactContent::Inline(bytes),
            (None, Some(name)) => ArtifactContent::File(self.artifact_dir().join(name)),
            (None, None) => {
                return Err(StoreError::Corrupt(format!("artifact {id} has no content")));
            }
        };
        Ok(Some(StoredContent {
            content,
            size: u64::try_from(size).map_err(corrupt)?,
            sha256: row.try_get(1)?,
        }))
    }

    /// Deletes artifacts expired by `now`, with their files; returns how
    /// many.
    pub async fn purge_artifacts(&self, now: u64) -> Result<u64> {
        let rows = sqlx::query(
            "DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= $1 RETURNING path",
        )
        .bind(ms(now)?)
        .fetch_all(self.writes())
        .await?;
        let dir = self.artifact_dir();
        for row in &rows {
            if let Some(name) = row.try_get::<Option<String>, _>(0)? {
                let path = dir.join(name);
                if let Err(error) = std::fs::remove_file(&path)
                    && error.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(path = %path.display(), %error, "cannot remove an expired artifact's file");
                }
            }
        }
        Ok(rows.len() as u64)
    }
}

/// Writes `content` to `target` durably: a temporary file, synced, renamed
/// over the target, and the directory synced.
fn write_synced(dir: &Path, target: &Path, content: &[u8]) -> Result<()> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| StoreError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let written = file
        .write_all(content)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, target));
    if let Err(source) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::Io {
            path: target.to_owned(),
            source,
        });
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}
