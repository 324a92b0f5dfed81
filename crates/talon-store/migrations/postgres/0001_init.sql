-- Talon's store, version 1 (PostgreSQL). Times are epoch milliseconds; JSON
-- documents are TEXT. Keep in step with migrations/sqlite/0001_init.sql.

-- The event log: append-only; `seq` is the replay cursor. Appenders take
-- their ids from `event_counter` inside their transaction, so ids are
-- assigned in commit order.
CREATE TABLE events (
    seq BIGINT PRIMARY KEY,
    ts BIGINT NOT NULL,
    type TEXT NOT NULL,
    run_id TEXT,
    session_id TEXT,
    session_key TEXT,
    task_id TEXT,
    agent_id TEXT,
    -- The envelope's JSON from `"ts"` on, without `raw` (version and id
    -- are spliced in front when it is read, `raw` at the end for readers
    -- allowed to see it): the transports send it without parsing it.
    body TEXT NOT NULL,
    -- The runtime-native payload's JSON, when there is one.
    raw TEXT
);
-- Only the run index: every append pays for each index (a page per
-- distinct run per commit), and the other filters are read forward from
-- a cursor. Pruning by age scans.
CREATE INDEX events_run ON events (run_id, seq);

CREATE TABLE event_counter (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    last BIGINT NOT NULL
);
INSERT INTO event_counter (id, last) VALUES (1, 0);

-- What the retention job removed last: a cursor below this is expired,
-- never silently shortened.
CREATE TABLE event_floor (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    pruned_through BIGINT NOT NULL
);
INSERT INTO event_floor (id, pruned_through) VALUES (1, 0);

-- Runs, with the idempotency key of the call that created them.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    session_key TEXT,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    ended_at BIGINT,
    usage TEXT,
    error TEXT,
    result TEXT,
    idempotency_key TEXT UNIQUE,
    request_hash TEXT,
    node TEXT,
    request TEXT,
    lease_until BIGINT,
    cancel_requested BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_session ON runs (session_id, created_at);
CREATE INDEX runs_status ON runs (status, created_at);

-- Access tokens: only a keyed hash of the secret is stored.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    name TEXT,
    scopes TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);

-- Agents created through the API (those in the config file are not here).
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);

-- Sessions: a key, metadata, and the parent a fork came from.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    parent_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX sessions_agent ON sessions (agent_id, updated_at);

-- The conversation of each session, in order (compaction records too).
CREATE TABLE messages (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT,
    created_at BIGINT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Approvals and questions: durable, resolved once.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    expires_at BIGINT,
    created_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX approvals_status ON approvals (status, created_at);
CREATE INDEX approvals_run ON approvals (run_id);

CREATE TABLE questions (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    expires_at BIGINT,
    created_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX questions_status ON questions (status, created_at);
CREATE INDEX questions_run ON questions (run_id);

-- Artifacts: metadata, and the content inline (small) or in a file under
-- the state directory (`path`, relative to it).
CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    run_id TEXT,
    session_id TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    content BYTEA,
    path TEXT,
    doc TEXT NOT NULL
);
CREATE INDEX artifacts_run ON artifacts (run_id, created_at);
CREATE INDEX artifacts_session ON artifacts (session_id, created_at);
CREATE INDEX artifacts_expiry ON artifacts (expires_at);

-- Suspended Code Mode cells: sealed records, claimed by deleting them.
CREATE TABLE cells (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    version BIGINT NOT NULL,
    record BYTEA NOT NULL
);
CREATE INDEX cells_expiry ON cells (expires_at);
