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
INSERT INTO approval_rules (tool, scope, approval_id, created_at)
SELECT DISTINCT ON (tool, scope) tool, scope, id, created_at
FROM (
    SELECT (doc::jsonb) ->> 'toolName' AS tool,
           CASE (doc::jsonb) ->> 'decision'
               WHEN 'approve_always' THEN '*'
               ELSE 'session:' || session_id
           END AS scope,
           id,
           created_at
    FROM approvals
    WHERE status = 'approved'
      AND (doc::jsonb) ->> 'toolName' IS NOT NULL
      AND ((doc::jsonb) ->> 'decision' = 'approve_always'
           OR ((doc::jsonb) ->> 'decision' = 'approve_session' AND session_id IS NOT NULL))
) AS granted
ORDER BY tool, scope, created_at DESC, id DESC;
