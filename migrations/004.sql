-- Schema 3 -> 4: what tasks need of their submitter (umask), a stall timeout,
-- dependency counts, a session's directory, and a group's half-open probe.
--
-- tasks.umask: tasks ran with the supervisor's umask (whatever shell
-- autostarted it), so files they made got the wrong mode. The submitter's
-- umask is stored with the task like its cwd and environment; a task stored
-- before keeps NULL and runs with its worker's umask, as it would have.
--
-- tasks.stall_timeout_ms: no output for this long ends the attempt as
-- stalled (a transient failure, retried); 0, every task stored before, is off.
--
-- tasks.deps_left: a finish recounted every dependency of each of its
-- dependants, so one task --after 6,000 others cost 6,000 counts of up to
-- 6,000 rows (draining 20,000 plus one such task: 122 s against a few
-- seconds without it). The count is kept by triggers instead (schema.sql
-- says how) and computed here for the tasks that have dependencies.
--
-- sessions.cwd: a session's links ran wherever each was submitted from, and
-- an agent resumes a conversation only from the directory it began in. A
-- session keeps its first task's directory; here the directory of the task
-- that last advanced it (where its conversation lives), else of its first
-- task still stored.
--
-- groups.probe, groups.probe_task: when a rate limit's pause lifts, release
-- one task first and the rest once it ended without a rate limit.
--
-- Written to run on any database of version 3, also one set back to 3 (or
-- further) by hand: db.c skips an ADD COLUMN of a column already there, the
-- triggers are IF NOT EXISTS, and the counts and directories are computed
-- again from the rows.
ALTER TABLE tasks ADD COLUMN umask INTEGER;
ALTER TABLE tasks ADD COLUMN stall_timeout_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN deps_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cwd TEXT;
ALTER TABLE groups ADD COLUMN probe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE groups ADD COLUMN probe_task INTEGER;

UPDATE tasks SET deps_left = (
    SELECT count(*) FROM deps x JOIN tasks d ON d.id = x.dep_id
    WHERE x.task_id = tasks.id
      AND d.state IN ('queued','scheduled','blocked','running'))
    WHERE id IN (SELECT task_id FROM deps);

CREATE TRIGGER IF NOT EXISTS deps_left_add AFTER INSERT ON deps
    WHEN EXISTS (SELECT 1 FROM tasks WHERE id = NEW.dep_id
                 AND state IN ('queued','scheduled','blocked','running')) BEGIN
    UPDATE tasks SET deps_left = deps_left + 1 WHERE id = NEW.task_id;
END;
CREATE TRIGGER IF NOT EXISTS deps_left_end AFTER UPDATE OF state ON tasks
    WHEN (OLD.state IN ('succeeded','failed','timed_out','killed','canceled'))
      <> (NEW.state IN ('succeeded','failed','timed_out','killed','canceled')) BEGIN
    UPDATE tasks SET deps_left = deps_left +
        CASE WHEN NEW.state IN ('succeeded','failed','timed_out','killed','canceled')
             THEN -1 ELSE 1 END
        WHERE id IN (SELECT task_id FROM deps WHERE dep_id = NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS deps_left_delete AFTER DELETE ON tasks
    WHEN OLD.state IN ('queued','scheduled','blocked','running') BEGIN
    UPDATE tasks SET deps_left = deps_left - 1
        WHERE id IN (SELECT task_id FROM deps WHERE dep_id = OLD.id);
END;

UPDATE sessions SET cwd = (SELECT t.cwd FROM tasks t WHERE t.id = sessions.last_task_id)
    WHERE cwd IS NULL;
INSERT INTO sessions(key, cwd, updated_at)
    SELECT session, cwd, 0 FROM tasks
    WHERE id IN (SELECT min(id) FROM tasks WHERE session IS NOT NULL GROUP BY session)
    ON CONFLICT(key) DO UPDATE SET cwd = coalesce(sessions.cwd, excluded.cwd);

PRAGMA user_version = 4;
