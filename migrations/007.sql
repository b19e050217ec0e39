-- Schema 6 -> 7: an attempt records the node it ran on.
--
-- attempts.node: the node (TASKQ_NODE, or the host name) of the worker that
-- claimed the attempt, so that recovery acts only on processes of its own
-- node: another node's expired lease is recorded lost, its processes never
-- signalled here (issue 20: many nodes on one database). NULL: an attempt
-- stored before, by the one host taskq then ran on, taken as this node's.
--
-- Written to run on any database of version 6, also one set back by hand:
-- db.c skips an ADD COLUMN of a column already there.
ALTER TABLE attempts ADD COLUMN node TEXT;

PRAGMA user_version = 7;
