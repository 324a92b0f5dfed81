//! Sessions (a key, metadata, the parent a fork came from) and their
//! messages: the conversation in order, compaction records included.
//! Forking copies a prefix of the parent's conversation into the new
//! session in one transaction.

use sqlx::Row;
use talon_protocol::gateway::bounded::RunId;
use talon_protocol::gateway::bounded::Subject;
use talon_protocol::gateway::bounded::{AgentId, MessageId, SessionId};
use talon_protocol::gateway::{Message, Session};

use crate::error::{Result, StoreError, corrupt};
use crate::records::{doc, doc_of, json_text, ms};
use crate::{Owner, Store};

/// Attempts at taking the next message number when another writer took
/// the same one first.
const SEQ_ATTEMPTS: usize = 5;

/// A stored message and its position in the session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Its position (1-based, per session).
    pub seq: u64,
    /// The message.
    pub message: Message,
}

impl Store {
    /// Stores a new session; [`StoreError::Exists`] when its id, or its
    /// key within its subject, is taken.
    pub async fn create_session(&self, session: &Session) -> Result<()> {
        self.create_session_by(session, None).await
    }

    /// [`Store::create_session`], made by token `token` (what it holds
    /// counts in that token's quota).
    pub async fn create_session_by(&self, session: &Session, token: Option<&str>) -> Result<()> {
        let inserted = insert_session(self.writes(), session, token).await?;
        if inserted {
            Ok(())
        } else {
            Err(StoreError::Exists {
                kind: "session",
                id: session.key.clone().into_string(),
            })
        }
    }

    /// One session, by id.
    pub async fn session(&self, id: &SessionId) -> Result<Option<Session>> {
        let row = sqlx::query("SELECT doc FROM sessions WHERE id = $1")
            .bind(id.as_str().to_owned())
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// One session, by key, among `subject`'s sessions (`None`: among
    /// those of no subject, unbound tokens' sessions).
    pub async fn session_by_key(
        &self,
        subject: Option<&str>,
        key: &str,
    ) -> Result<Option<Session>> {
        let row = sqlx::query(
            "SELECT doc FROM sessions WHERE COALESCE(subject, '') = COALESCE($1, '') AND key = $2",
        )
        .bind(subject.map(str::to_owned))
        .bind(key.to_owned())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(doc_of).transpose()
    }

    /// Sessions oldest first, optionally one agent's, `owner`'s only,
    /// after the session with id `cursor`, at most `limit`.
    pub async fn sessions(
        &self,
        agent_id: Option<&AgentId>,
        owner: &Owner,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Session>> {
        let (subject, agents) = owner.binds()?;
        let rows = sqlx::query(sql!(
            "SELECT doc FROM sessions \
             WHERE ($1 IS NULL OR agent_id = $1) \
               AND ($2 IS NULL OR (created_at, id) > \
                    (SELECT created_at, id FROM sessions WHERE id = $2)) \
               AND {owned} \
             ORDER BY created_at, id LIMIT $3",
            owned = Owner::condition(self.backend(), 4, "subject", "agent_id"),
        ))
        .bind(agent_id.map(|a| a.as_str().to_owned()))
        .bind(cursor.map(str::to_owned))
        .bind(i64::from(limit))
        .bind(subject)
        .bind(agents)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(doc_of).collect()
    }

    /// Writes a session's metadata and `updatedAt` (its id, key, agent and
    /// parent never change); `false` when there is no such session.
    pub async fn update_session(&self, session: &Session) -> Result<bool> {
        let stored = self.session(&session.id).await?;
        let Some(stored) = stored else {
            return Ok(false);
        };
        let updated = Session {
            metadata: session.metadata.clone(),
            updated_at: session.updated_at,
            ..stored
        };
        let changed = sqlx::query("UPDATE sessions SET updated_at = $2, doc = $3 WHERE id = $1")
            .bind(updated.id.to_string())
            .bind(ms(updated.updated_at)?)
            .bind(json_text(&updated)?)
            .execute(self.writes())
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    /// Appends `messages` to a session, in order, and returns their
    /// positions. All or none are stored.
    pub async fn append_messages(
        &self,
        session_id: &SessionId,
        messages: &[Message],
    ) -> Result<Vec<u64>> {
        for attempt in 1..=SEQ_ATTEMPTS {
            let mut tx = self.backend().begin_write(self.writes()).await?;
            // Appends to one session take turns: on PostgreSQL this locks
            // the session's row until the commit, so the next appender reads
            // the positions this one took (12 racing appenders used to
            // exhaust the retries below); SQLite's write transaction is
            // exclusive already, so it skips the write.
            if self.backend() == crate::Backend::Postgres {
                sqlx::query("UPDATE sessions SET updated_at = updated_at WHERE id = $1")
                    .bind(session_id.as_str().to_owned())
                    .execute(&mut *tx)
                    .await?;
            }
            let last: Option<i64> =
                sqlx::query("SELECT MAX(seq) FROM messages WHERE session_id = $1")
                    .bind(session_id.as_str().to_owned())
                    .fetch_one(&mut *tx)
                    .await?
                    .try_get(0)?;
            let mut seqs = Vec::with_capacity(messages.len());
            let mut clash = false;
            for (i, message) in messages.iter().enumerate() {
                let seq = last.unwrap_or(0) + 1 + i as i64;
                match insert_message(&mut tx, session_id.as_str(), seq, message).await {
                    Ok(()) => seqs.push(seq as u64),
                    Err(StoreError::Database(e))
                        if is_unique_violation(&e) && attempt < SEQ_ATTEMPTS =>
                    {
                        clash = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if clash {
                tx.rollback().await?;
                continue;
            }
            tx.commit().await?;
            return Ok(seqs);
        }
        Err(StoreError::Corrupt(format!(
            "messages of session {session_id}: no free position after {SEQ_ATTEMPTS} attempts"
        )))
    }

    /// Appends `message` to its session unless a message with its id is
    /// there already: `false` then, and nothing is written. What a
    /// notice posted at least once (a task's result) is de-duplicated by.
    pub async fn append_message_once(&self, message: &Message) -> Result<bool> {
        let mut tx = self.backend().begin_write(self.writes()).await?;
        if self.backend() == crate::Backend::Postgres {
            // Appends to one session take turns (see `append_messages`).
            sqlx::query("UPDATE sessions SET updated_at = updated_at WHERE id = $1")
                .bind(message.session_id.as_str().to_owned())
                .execute(&mut *tx)
                .await?;
        }
        let there = sqlx::query("SELECT 1 FROM messages WHERE id = $1")
            .bind(message.id.as_str().to_owned())
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if there {
            tx.rollback().await?;
            return Ok(false);
        }
        let last: Option<i64> = sqlx::query("SELECT MAX(seq) FROM messages WHERE session_id = $1")
            .bind(message.session_id.as_str().to_owned())
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        insert_message(
            &mut tx,
            message.session_id.as_str(),
            last.unwrap_or(0) + 1,
            message,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// A session's messages in order, after the message with id `after`
    /// (from the start when `None`), at most `limit`.
    pub async fn messages(
        &self,
        session_id: &SessionId,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<StoredMessage>> {
        let from = match after {
            None => 0,
            Some(id) => {
                let row = sqlx::query("SELECT seq FROM messages WHERE session_id = $1 AND id = $2")
                    .bind(session_id.as_str().to_owned())
                    .bind(id.to_owned())
                    .fetch_optional(self.pool())
                    .await?;
                match row {
                    Some(row) => row.try_get::<i64, _>(0)?,
                    None => {
                        return Err(StoreError::NotFound {
                            kind: "message",
                            id: id.to_owned(),
                        });
                    }
                }
            }
        };
        let rows = sqlx::query(
            "SELECT seq, doc FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(session_id.as_str().to_owned())
        .bind(from)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredMessage {
                    seq: u64::try_from(row.try_get::<i64, _>(0)?).map_err(corrupt)?,
                    message: doc(&row.try_get::<String, _>(1)?)?,
                })
            })
            .collect()
    }

    /// Creates `session` as a fork of its `parent_id`: the parent's
    /// messages up to and including `forked_at_message_id` (all of them
    /// when `None`) are copied, with ids `<new session id>.<position>`.
    /// Returns how many were copied. [`StoreError::NotFound`] when the
    /// parent or the message does not exist.
    pub async fn fork_session(&self, session: &Session) -> Result<u64> {
        self.fork_session_by(session, None).await
    }

    /// [`Store::fork_session`], made by token `token`.
    pub async fn fork_session_by(&self, session: &Session, token: Option<&str>) -> Result<u64> {
        let parent = session
            .parent_id
            .clone()
            .ok_or_else(|| StoreError::Corrupt("a fork needs a parent session".into()))?;
        let mut tx = self.backend().begin_write(self.writes()).await?;
        let through: i64 = match &session.forked_at_message_id {
            None => sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1")
                .bind(parent.to_string())
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?,
            Some(id) => sqlx::query("SELECT seq FROM messages WHERE session_id = $1 AND id = $2")
                .bind(parent.to_string())
                .bind(id.to_string())
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| StoreError::NotFound {
                    kind: "message",
                    id: id.clone().into_string(),
                })?
                .try_get(0)?,
        };
        let exists = sqlx::query("SELECT 1 FROM sessions WHERE id = $1")
            .bind(parent.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound {
                kind: "session",
                id: parent.into_string(),
            });
        }
        if !insert_session(&mut *tx, session, token).await? {
            return Err(StoreError::Exists {
                kind: "session",
                id: session.key.clone().into_string(),
            });
        }
        let rows = sqlx::query(
            "SELECT seq, doc FROM messages WHERE session_id = $1 AND seq <= $2 ORDER BY seq",
        )
        .bind(parent.into_string())
        .bind(through)
        .fetch_all(&mut *tx)
        .await?;
        for row in &rows {
            let seq: i64 = row.try_get(0)?;
            let mut message: Message = doc(&row.try_get::<String, _>(1)?)?;
            message.id = MessageId::new(format!("{}.{seq}", session.id));
            message.session_id = session.id.clone();
            insert_message(&mut tx, session.id.as_str(), seq, &message).await?;
        }
        tx.commit().await?;
        Ok(rows.len() as u64)
    }
}

async fn insert_session<'e, E>(exec: E, session: &Session, token: Option<&str>) -> Result<bool>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let inserted = sqlx::query(
        "INSERT INTO sessions (id, key, agent_id, parent_id, created_at, updated_at, doc, subject, token_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
    )
    .bind(session.id.to_string())
    .bind(session.key.to_string())
    .bind(session.agent_id.to_string())
    .bind(session.parent_id.clone().map(SessionId::into_string))
    .bind(ms(session.created_at)?)
    .bind(ms(session.updated_at)?)
    .bind(json_text(session)?)
    .bind(session.subject.clone().map(Subject::into_string))
    .bind(token.map(str::to_owned))
    .execute(exec)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

async fn insert_message(
    conn: &mut sqlx::AnyConnection,
    session_id: &str,
    seq: i64,
    message: &Message,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO messages (session_id, seq, id, run_id, created_at, doc) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(session_id.to_owned())
    .bind(seq)
    .bind(message.id.to_string())
    .bind(message.run_id.clone().map(RunId::into_string))
    .bind(ms(message.created_at)?)
    .bind(json_text(message)?)
    .execute(conn)
    .await
    .map_err(|e| {
        // Kept unclassified so that a taken position can be retried.
        if is_unique_violation(&e) {
            StoreError::Database(e)
        } else {
            e.into()
        }
    })?;
    Ok(())
}

/// A unique or primary-key violation on either backend.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|db| db.kind() == sqlx::error::ErrorKind::UniqueViolation)
}
