-- The bytes an environment takes on disk (its workspace and baseline, by
-- apparent size), measured when it is prepared and when it is deleted:
-- they count in the store's quota (`Store::stored_bytes`).
ALTER TABLE environments ADD COLUMN footprint BIGINT NOT NULL DEFAULT 0;
