-- The token that made a session or an environment: what they hold counts
-- in that token's stored-bytes quota (`gateway.limits.maxStoredBytesPerToken`),
-- as it counts in its subject's.
ALTER TABLE sessions ADD COLUMN token_id TEXT;
ALTER TABLE environments ADD COLUMN token_id TEXT;
