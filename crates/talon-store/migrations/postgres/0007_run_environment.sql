-- One run at a time in an environment's workspace: the environment a run
-- works in, which claims keep to one live run (as they do a session).
ALTER TABLE runs ADD COLUMN environment_id TEXT;
CREATE INDEX runs_environment ON runs (environment_id, status);
