-- Schema 7 -> 8: warm agent sessions (issue 19).
--
-- tasks.warm, tasks.idle_timeout_ms: `taskq ask --session KEY --warm
-- [--idle-timeout DUR]`: the message runs as a turn on the session's agent
-- process, kept up between messages by the supervisor, which ends it after
-- idle_timeout_ms without a message (0 on a task that is not warm).
--
-- sessions.agent: the agent CLI of the session's tasks (the registry's name),
-- which `taskq sessions` shows and a warm process is started as.
-- sessions.warm_pid, warm_start, warm_node, warm_at: the session's warm
-- process, known by its pid and its start time together (a bare pid may name
-- another process by the time it is read), on the node that started it
-- (only that node's supervisor signals it), started at warm_at (ms); NULL:
-- no warm process. sessions.idle_since: ms since the warm process has had
-- no turn running; NULL while one runs. sessions.close_requested_at:
-- `taskq sessions close KEY` stored (ms) for the supervisor of warm_node,
-- which ends the process and clears warm_* and the request; a request on a
-- row, not a socket message, so it reaches that node's supervisor whichever
-- node the command ran on.
--
-- Written to run on any database of version 7, also one set back by hand:
-- db.c skips an ADD COLUMN of a column already there.
ALTER TABLE tasks ADD COLUMN warm INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN idle_timeout_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN agent TEXT;
ALTER TABLE sessions ADD COLUMN warm_pid INTEGER;
ALTER TABLE sessions ADD COLUMN warm_start INTEGER;
ALTER TABLE sessions ADD COLUMN warm_node TEXT;
ALTER TABLE sessions ADD COLUMN warm_at INTEGER;
ALTER TABLE sessions ADD COLUMN idle_since INTEGER;
ALTER TABLE sessions ADD COLUMN close_requested_at INTEGER;
CREATE INDEX IF NOT EXISTS sessions_warm ON sessions(warm_node) WHERE warm_pid IS NOT NULL;

PRAGMA user_version = 8;
