-- Managed environments: what their provider prepared, and where they
-- are (the workspace itself is on disk, under the state directory).
CREATE TABLE environments (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
