-- Token lineage: the token that minted this one through `tokens.create`
-- (absent for tokens an operator made with the CLI, and the first admin).
-- Revoking a token revokes every token it minted, and theirs.
ALTER TABLE tokens ADD COLUMN parent_id TEXT;
CREATE INDEX tokens_parent ON tokens (parent_id);
