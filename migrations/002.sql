-- Schema 1 -> 2: task counts kept by triggers, and two indexes.
--
-- `taskq status` showed counts by state and by group with count(*) over
-- the tasks table: 0.5-0.7 s at a million tasks (bench/run, `status`).
-- task_counts holds them instead, kept by triggers in the same
-- transaction as every insert, state change and delete, so reading them
-- costs one row per group and state. tasks_env lets retention find env rows
-- no task uses; stdin_writes_all lets a delete of a task find its writes.
--
-- Written to run on any database of version 1 (also one a test or a user
-- set back to 1 by hand): every statement is IF NOT EXISTS, and the counts
-- are recomputed from the tasks.
CREATE TABLE IF NOT EXISTS task_counts (
    grp    TEXT    NOT NULL,
    state  TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (grp, state)
) WITHOUT ROWID;
DELETE FROM task_counts;
INSERT INTO task_counts(grp, state, n)
    SELECT grp, state, count(*) FROM tasks GROUP BY grp, state;

CREATE TRIGGER IF NOT EXISTS task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts(grp, state, n) VALUES (NEW.grp, NEW.state, 1)
        ON CONFLICT(grp, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE grp = OLD.grp AND state = OLD.state;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_update AFTER UPDATE OF state, grp ON tasks
    WHEN OLD.state IS NOT NEW.state OR OLD.grp IS NOT NEW.grp BEGIN
    UPDATE task_counts SET n = n - 1 WHERE grp = OLD.grp AND state = OLD.state;
    INSERT INTO task_counts(grp, state, n) VALUES (NEW.grp, NEW.state, 1)
        ON CONFLICT(grp, state) DO UPDATE SET n = n + 1;
END;

CREATE INDEX IF NOT EXISTS tasks_env ON tasks(env_id);
CREATE INDEX IF NOT EXISTS stdin_writes_all ON stdin_writes(task_id);

PRAGMA user_version = 2;
