-- Schema 11 -> 12: what each attempt stored in the task's log (issue 21).
--
-- A task's log file (logs/ID.log) is now made by its first output, not at
-- the start of every attempt: a new inode a task was the costliest part of
-- a short task on a busy ext4. So a task that printed nothing has no file,
-- and "no file" no longer says by itself that a log was deleted (`taskq
-- log` says so, `poll` shows log_missing). attempts.output_bytes is what the
-- attempt's worker stored; a log is missing when an ended attempt stored
-- some, or is not known to have stored none (NULL: an end its worker did
-- not write, or every attempt stored before this version, whose files were
-- made at their start).
--
-- Written to run on any database of version 11, also one set back by hand:
-- db.c skips an ADD COLUMN of a column already there.
ALTER TABLE attempts ADD COLUMN output_bytes INTEGER;

PRAGMA user_version = 12;
