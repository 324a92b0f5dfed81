-- Ownership: a token may be bound to a subject (an app's user or tenant)
-- and to agents (`agents`, a JSON array). A session records the subject of
-- the token that made it; its runs copy it (`runs.subject`), and what the
-- runs make (events, approvals, questions, artifacts) is the session's.
-- Session keys are unique per subject (NULL: unbound tokens' sessions).
-- Keep in step with migrations/sqlite/0010_ownership.sql.
ALTER TABLE tokens ADD COLUMN subject TEXT;
ALTER TABLE tokens ADD COLUMN agents TEXT;
ALTER TABLE runs ADD COLUMN subject TEXT;
ALTER TABLE environments ADD COLUMN subject TEXT;
ALTER TABLE sessions ADD COLUMN subject TEXT;
ALTER TABLE sessions DROP CONSTRAINT sessions_key_key;
CREATE UNIQUE INDEX sessions_subject_key ON sessions (COALESCE(subject, ''), key);
CREATE INDEX sessions_subject ON sessions (subject, created_at);
CREATE INDEX runs_subject ON runs (subject, created_at);
CREATE INDEX tokens_subject ON tokens (subject);
