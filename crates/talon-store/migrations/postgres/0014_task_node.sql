-- Background processes: the node whose memory holds a task's process, and
-- until when that node vouches for it (renewed while the node lives). A
-- process dies with its node: a node marks its own still-running process
-- tasks `lost` when it starts, and any node marks them `lost` once the
-- lease has passed.
ALTER TABLE tasks ADD COLUMN node TEXT;
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
