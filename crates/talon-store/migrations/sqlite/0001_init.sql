-- Talon's store, version 1 (SQLite). Times are epoch milliseconds.

-- The event log: append-only; `seq` is the replay cursor, assigned in
-- commit order (SQLite has one writer at a time).
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    run_id TEXT,
    session_id TEXT,
    session_key TEXT,
    task_id TEXT,
    agent_id TEXT,
    data TEXT NOT NULL,
    raw TEXT
);
CREATE INDEX events_run ON events (run_id, seq);
CREATE INDEX events_ts ON events (ts);

-- Runs, with the idempotency key of the call that created them.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id TEXT,
    session_key TEXT,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    ended_at INTEGER,
    usage TEXT,
    error TEXT,
    result TEXT,
    idempotency_key TEXT UNIQUE,
    request_hash TEXT,
    node TEXT
);

-- Access tokens: only a keyed hash of the secret is stored.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    name TEXT,
    scopes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
);

-- What the retention job removed last: a cursor at or below this is
-- expired, never silently shortened.
CREATE TABLE event_floor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_through INTEGER NOT NULL
);
INSERT INTO event_floor (id, pruned_through) VALUES (1, 0);
