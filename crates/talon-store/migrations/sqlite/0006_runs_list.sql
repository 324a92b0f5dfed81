-- `runs.list`: newest first over every run, or one agent's.
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_agent ON runs (agent_id, created_at);
