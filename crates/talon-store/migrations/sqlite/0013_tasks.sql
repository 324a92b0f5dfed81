-- Background tasks: the ledger of detached work. The record is the
-- protocol's `Task` as JSON (`doc`); the columns beside it are what lists
-- filter and order by, and what a change compares and sets.
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    -- Whether the messages its policy asks for reached its session.
    delivery_status TEXT NOT NULL,
    session_id TEXT,
    run_id TEXT,
    child_run_id TEXT,
    subject TEXT,
    -- The agent whose run started it: with `subject`, whose task it is.
    owner_agent_id TEXT,
    token_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
-- Lists page newest first by (created_at, id); a run's tasks and the task
-- of a child run are looked up by run.
CREATE INDEX tasks_created ON tasks (created_at, id);
CREATE INDEX tasks_run ON tasks (run_id);
CREATE INDEX tasks_child_run ON tasks (child_run_id);
-- What still waits for a status change or a message: few rows.
CREATE INDEX tasks_open ON tasks (status, delivery_status);
