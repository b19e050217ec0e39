-- Schema 4 -> 5: an --on-exit hook owed by an end that no worker wrote.
--
-- tasks.on_exit_due: a task's --on-exit hook ran only in the worker that
-- wrote the task's end. An end written by anyone else -- a supervisor
-- writing a dead worker's end from its end record, a recovery recording a
-- lost attempt -- ran no hook, and a user who relied on the hook to be told
-- lost the notification. Now the transaction that writes a final end marks
-- the hook owed (1) unless its writer runs the hook itself at once (a
-- worker's own end), and a worker takes an owed hook (back to 0, in one
-- statement, so exactly one worker runs it) before it runs it. A hook that
-- had started is never run again, also after a crash: the mark goes before
-- the hook starts. Tasks stored before owe nothing (0).
--
-- Written to run on any database of version 4, also one set back by hand:
-- db.c skips an ADD COLUMN of a column already there; the index is IF NOT
-- EXISTS.
ALTER TABLE tasks ADD COLUMN on_exit_due INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS tasks_on_exit ON tasks(id) WHERE on_exit_due != 0;

PRAGMA user_version = 5;
