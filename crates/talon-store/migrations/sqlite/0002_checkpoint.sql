-- A run's last checkpoint (its transcript at the end of a turn), from
-- which a run interrupted by its node's death resumes.
ALTER TABLE runs ADD COLUMN checkpoint TEXT;
