-- Schedules: runs of an agent the clock starts. The record is the
-- protocol's `Schedule` as JSON (`doc`); beside it, what lists filter by,
-- what the scheduler looks for (`next_at`: enabled schedules only) and
-- what a change compares and sets (`updated_at`).
CREATE TABLE schedules (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    subject TEXT,
    token_id TEXT,
    -- When it fires next (epoch ms); NULL when paused or spent.
    next_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX schedules_created ON schedules (created_at, id);
CREATE INDEX schedules_due ON schedules (next_at);
CREATE INDEX schedules_token ON schedules (token_id);
-- Which schedule a firing's task belongs to (its last firing is looked up).
ALTER TABLE tasks ADD COLUMN schedule_id TEXT;
CREATE INDEX tasks_schedule ON tasks (schedule_id, created_at);
