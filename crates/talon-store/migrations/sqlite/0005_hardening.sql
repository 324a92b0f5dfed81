-- Stream tickets: single-use credentials a token mints for one browser
-- stream (`tokens.ticket`). Only the SHA-256 of the ticket is kept; it is
-- deleted when used or once expired.
CREATE TABLE stream_tickets (
    hash TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    scopes TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX stream_tickets_expiry ON stream_tickets (expires_at);

-- Live revocation: every node looks up recent revocations by time.
CREATE INDEX tokens_revoked ON tokens (revoked_at);

-- The health probe's row: while the store cannot write, the probe
-- writes 256 KiB into `pad` (and clears it) until that succeeds again.
CREATE TABLE store_probe (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    at BIGINT NOT NULL,
    pad TEXT
);
INSERT INTO store_probe (id, at) VALUES (1, 0);
