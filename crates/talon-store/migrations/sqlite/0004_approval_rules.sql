-- Remembered decisions (`approve_session`, `approve_always`): the latest
-- approval that granted one, by tool (its catalog id) and scope ('*' for
-- always, 'session:<id>' for one session), so that a call finds the rule
-- covering it by key instead of reading every approved approval.
CREATE TABLE approval_rules (
    tool TEXT NOT NULL,
    scope TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tool, scope)
);

-- The rules the approvals already stored grant, the latest winning.
INSERT OR REPLACE INTO approval_rules (tool, scope, approval_id, created_at)
SELECT json_extract(doc, '$.toolName'),
       CASE json_extract(doc, '$.decision')
           WHEN 'approve_always' THEN '*'
           ELSE 'session:' || session_id
       END,
       id,
       created_at
FROM approvals
WHERE status = 'approved'
  AND json_extract(doc, '$.toolName') IS NOT NULL
  AND (json_extract(doc, '$.decision') = 'approve_always'
       OR (json_extract(doc, '$.decision') = 'approve_session' AND session_id IS NOT NULL))
ORDER BY created_at, id;
