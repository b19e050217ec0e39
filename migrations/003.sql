-- Schema 2 -> 3: environments no task uses are deleted with their last task,
-- and meta is one b-tree.
--
-- Tasks store their environment by reference to a shared envs row, and
-- nothing deleted a row when the last task using it was removed (by
-- retention, clear or remove): a queue fed for months by cron jobs, each
-- submit with a slightly different environment, grew by one row of a few
-- KB per distinct environment, for ever. The trigger deletes the row in
-- the same transaction as the task (tasks_env makes the check one index
-- probe); the DELETE below collects what earlier versions left.
--
-- Written to run on any database of version 2 (also one set back to 2 by
-- hand): IF NOT EXISTS, the DELETE finds nothing the second time, and meta
-- is copied whatever its shape.
CREATE TRIGGER IF NOT EXISTS envs_collect AFTER DELETE ON tasks
    WHEN OLD.env_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM tasks WHERE env_id = OLD.env_id) BEGIN
    DELETE FROM envs WHERE id = OLD.env_id;
END;
DELETE FROM envs WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.env_id = envs.id);

-- meta WITHOUT ROWID: a submit through the supervisor stores its token
-- there, and a rowid table with a TEXT primary key wrote two pages for it
-- (the table and its key's index) on every submit.
DROP TABLE IF EXISTS meta_v3;
CREATE TABLE meta_v3 (
    key    TEXT PRIMARY KEY,
    value  TEXT
) WITHOUT ROWID;
INSERT INTO meta_v3(key, value) SELECT key, value FROM meta;
DROP TABLE meta;
ALTER TABLE meta_v3 RENAME TO meta;

PRAGMA user_version = 3;
