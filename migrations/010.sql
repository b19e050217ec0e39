-- Schema 9 -> 10: the supervisors, one row a node (issue 20).
--
-- Each node's supervisor says here that it runs, with a heartbeat, so that
-- `taskq status` on any node sharing the store can list every node's
-- supervisor and tell a live one from one not heard from: a pid of
-- another machine names nothing on this one. (The meta values
-- supervisor_pid, supervisor_started_at and supervisor_workers were one
-- set for the whole store: with several nodes, the last to start.)
--
-- Written to run on any database of version 9, also one set back by hand.
CREATE TABLE IF NOT EXISTS supervisors (
    node          TEXT    PRIMARY KEY,
    pid           INTEGER NOT NULL,
    proc_start    INTEGER,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    workers       INTEGER NOT NULL,
    max_warm      INTEGER NOT NULL DEFAULT 0,
    containment   TEXT,
    stopped_at    INTEGER
) WITHOUT ROWID;

PRAGMA user_version = 10;
