-- A run's one-line summary (`Run.summary`) and the same with its ASCII
-- letters lower-cased, which `runs.list`'s `text` filter compares; the
-- model it runs on (`Run.model`), which `usage.summary` groups by. Runs
-- made before keep no summary; their model is read back from their
-- `run.started` event while the log still holds it.
ALTER TABLE runs ADD COLUMN summary TEXT;
ALTER TABLE runs ADD COLUMN summary_folded TEXT;
ALTER TABLE runs ADD COLUMN model TEXT;
UPDATE runs SET model = (
    SELECT json_extract('{' || substr(e.body, 2), '$.data.model') FROM events e
    WHERE e.run_id = runs.id AND e.type = 'run.started'
    ORDER BY e.seq LIMIT 1
);
