-- Ownership: a token may be bound to a subject (an app's user or tenant)
-- and to agents (`agents`, a JSON array). A session records the subject of
-- the token that made it; its runs copy it (`runs.subject`), and what the
-- runs make (events, approvals, questions, artifacts) is the session's.
-- Session keys are unique per subject (NULL: unbound tokens' sessions), so
-- `sessions` is rebuilt without its global UNIQUE (key). Keep in step with
-- migrations/postgres/0010_ownership.sql.
ALTER TABLE tokens ADD COLUMN subject TEXT;
ALTER TABLE tokens ADD COLUMN agents TEXT;
ALTER TABLE runs ADD COLUMN subject TEXT;
ALTER TABLE environments ADD COLUMN subject TEXT;

CREATE TABLE sessions_owned (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    subject TEXT,
    agent_id TEXT NOT NULL,
    parent_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    doc TEXT NOT NULL
);
INSERT INTO sessions_owned (id, key, subject, agent_id, parent_id, created_at, updated_at, doc)
    SELECT id, key, NULL, agent_id, parent_id, created_at, updated_at, doc FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_owned RENAME TO sessions;
CREATE INDEX sessions_agent ON sessions (agent_id, updated_at);
CREATE UNIQUE INDEX sessions_subject_key ON sessions (COALESCE(subject, ''), key);
CREATE INDEX sessions_subject ON sessions (subject, created_at);
CREATE INDEX runs_subject ON runs (subject, created_at);
CREATE INDEX tokens_subject ON tokens (subject);
