-- Schema 10 -> 11: fewer pages and less work per submit and per task (issue 21).
--
-- tasks is made again, as schema.sql has it:
--   * no AUTOINCREMENT: its sqlite_sequence row was a page written by every
--     submit. Ids are still never reused (logs and cursors key on them): the
--     next id is one past the highest stored, or past meta's tasks_id_floor,
--     which the new trigger tasks_id_floor writes when the newest task is
--     deleted; here it takes over sqlite_sequence's number when that is past
--     every id stored (the newest tasks were deleted);
--   * the CHECKs on state and stdin_mode compare one value at a time: an IN
--     list of more than two values builds a b-tree of its values each time it
--     is evaluated (an ephemeral table: a pager, a zeroed page, an insert per
--     value), which was every insert and every change of state.
-- tasks_state holds no queued or running task, which the submit, the claim
-- and the end wrote (tasks_ready and tasks_running hold those).
-- attempts is made again WITHOUT ROWID: its primary key was a second b-tree,
-- a page of every claim.
-- The triggers compare states one at a time too, and deps_left_end reads
-- deps_dep before it updates the dependants (most tasks have none).
--
-- Written to run on any database of version 10, also one set back by hand: the
-- tables are copied by column name, whatever their order or shape, and every
-- object made here is dropped first or goes with its table.
-- (db.c runs this with foreign keys off, as every migration: dropping tasks
-- deletes no attempts, dependencies, labels or cursors.)

DROP VIEW IF EXISTS task_list;
DROP TRIGGER IF EXISTS deps_left_add;   -- on deps, but it reads tasks

CREATE TABLE tasks_new (
    -- never reused (logs and cursors key on it): the next id is one past the
    -- highest stored, or past meta's tasks_id_floor (the tasks_id_floor
    -- trigger below) when the highest ever given was deleted; not
    -- AUTOINCREMENT, whose sqlite_sequence row was a page of every submit
    id            INTEGER PRIMARY KEY,
    -- queued:    runnable now (subject to its group's limits)
    -- scheduled: waiting for run_after (a --delay/--at, or a retry's backoff)
    -- blocked:   waiting for the tasks in deps (--after, sessions)
    -- running:   claimed by a worker under a lease
    -- the rest are final.
    -- (the CHECKs compare one value at a time: an IN list of more than two
    -- builds a b-tree of its values each time it is evaluated, here every
    -- insert and every change of state)
    state         TEXT    NOT NULL DEFAULT 'queued' CHECK (
                    state = 'queued' OR state = 'scheduled' OR state = 'blocked' OR
                    state = 'running' OR state = 'succeeded' OR state = 'failed' OR
                    state = 'timed_out' OR state = 'killed' OR state = 'canceled'),
    name          TEXT    NOT NULL,
    argv          BLOB    NOT NULL,          -- "arg0\0arg1\0...\0"
    shell         INTEGER NOT NULL DEFAULT 0, -- 1: argv is /bin/sh -c STRING from --shell
    cwd           TEXT    NOT NULL,
    umask         INTEGER,                   -- the submitter's umask (0..0777); NULL: a
                                             -- task stored before schema 4, which runs
                                             -- with its worker's umask, as it would have
    env_id        INTEGER REFERENCES envs(id),
    batch         TEXT,
    grp           TEXT    NOT NULL,          -- default: the program's name (claude, make, ...)
    session       TEXT,                      -- --session KEY: one at a time, in order
    unique_key    TEXT,                      -- --unique KEY: one unfinished task per key
    priority      INTEGER NOT NULL DEFAULT 0, -- higher runs first; ties by id
    run_after     INTEGER NOT NULL DEFAULT 0, -- ms; a scheduled task becomes queued then
    created_at    INTEGER NOT NULL,

    -- run policy
    timeout_ms    INTEGER NOT NULL,          -- 0: none
    stall_timeout_ms INTEGER NOT NULL DEFAULT 0, -- no output on either stream this
                                             -- long ends the attempt (stalled); 0: off
    kill_grace_ms INTEGER NOT NULL,          -- TERM, then KILL this much later
    max_output    INTEGER NOT NULL,          -- bytes of log; 0: unlimited
    max_retries   INTEGER NOT NULL DEFAULT 3, -- for transient categories
    retry_lost    INTEGER NOT NULL DEFAULT 0,
    backoff_ms    INTEGER NOT NULL DEFAULT 30000,
    backoff_max_ms INTEGER NOT NULL DEFAULT 1800000,
    stdin_mode    TEXT    NOT NULL DEFAULT 'null' CHECK (
                    stdin_mode = 'null' OR stdin_mode = 'file' OR stdin_mode = 'pipe'),
    pty           INTEGER NOT NULL DEFAULT 0,
    on_exit       TEXT,                      -- --on-exit CMD (run with /bin/sh -c)
    on_exit_due   INTEGER NOT NULL DEFAULT 0, -- 1: a final end was written and its
                                             -- on_exit hook has not started (no worker
                                             -- wrote that end); a worker takes it (0)
                                             -- before it runs it: exactly one run
    kill_signal   INTEGER,                   -- taskq kill: the signal asked for
    kill_requested_at INTEGER,               -- ms; the worker escalates to KILL after the grace

    -- agent tasks (taskq ask); NULL for plain commands
    agent         TEXT,
    model         TEXT,
    prompt        TEXT,
    isolate       INTEGER NOT NULL DEFAULT 0,
    sources       TEXT,                      -- JSON object {"name": "path", ...}
    warm          INTEGER NOT NULL DEFAULT 0, -- --warm: a turn on its session's agent
                                             -- process, kept up between messages
    idle_timeout_ms INTEGER NOT NULL DEFAULT 0, -- --idle-timeout: a warm process with
                                             -- no message this long is ended; 0: not warm

    -- How many of this task's dependencies (its deps rows) name a task that
    -- exists and has not ended: kept by the deps_left_* triggers below in the
    -- transaction of every change, so a finish unblocks a dependent by
    -- reading one number instead of counting all of its dependencies
    -- (migrations/004.sql says why). A blocked task is queued when it is 0.
    deps_left     INTEGER NOT NULL DEFAULT 0,

    -- the current (or last) attempt; attempts holds every one
    attempt       INTEGER NOT NULL DEFAULT 0, -- attempts started so far
    worker_id     INTEGER,                   -- holder of the lease while running
    lease_until   INTEGER,                   -- ms; past it the task is recovered as lost
    started_at    INTEGER,
    finished_at   INTEGER,
    exit_code     INTEGER,
    signal        INTEGER,
    outcome       TEXT,                      -- succeeded|failed|signaled|timed_out|killed|
                                             -- output_overflow|spawn_failed|lost|canceled|
                                             -- stalled (--stall-timeout: state timed_out
                                             -- once out of retries)|output_lost (its log
                                             -- could not be written: state failed)
    category      TEXT,                      -- rate_limit|overload|network|auth|unknown
    reason        TEXT
);

INSERT INTO tasks_new (
    id, state, name, argv, shell, cwd, umask, env_id, batch, grp, session,
    unique_key, priority, run_after, created_at, timeout_ms,
    stall_timeout_ms, kill_grace_ms, max_output, max_retries, retry_lost,
    backoff_ms, backoff_max_ms, stdin_mode, pty, on_exit, on_exit_due,
    kill_signal, kill_requested_at, agent, model, prompt, isolate, sources,
    warm, idle_timeout_ms, deps_left, attempt, worker_id, lease_until,
    started_at, finished_at, exit_code, signal, outcome, category, reason)
SELECT
    id, state, name, argv, shell, cwd, umask, env_id, batch, grp, session,
    unique_key, priority, run_after, created_at, timeout_ms,
    stall_timeout_ms, kill_grace_ms, max_output, max_retries, retry_lost,
    backoff_ms, backoff_max_ms, stdin_mode, pty, on_exit, on_exit_due,
    kill_signal, kill_requested_at, agent, model, prompt, isolate, sources,
    warm, idle_timeout_ms, deps_left, attempt, worker_id, lease_until,
    started_at, finished_at, exit_code, signal, outcome, category, reason
FROM tasks;
-- (sqlite_sequence exists once a table with AUTOINCREMENT was made; a database
-- made at version 11 and set back by hand has none: one made for nothing)
CREATE TABLE tq_seq_probe (n INTEGER PRIMARY KEY AUTOINCREMENT);
DROP TABLE tq_seq_probe;
INSERT INTO meta(key, value)
    SELECT 'tasks_id_floor', seq FROM sqlite_sequence
    WHERE name = 'tasks' AND seq > coalesce((SELECT max(id) FROM tasks), 0)
    ON CONFLICT(key) DO UPDATE SET value = excluded.value
    WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER);
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;

CREATE INDEX tasks_ready     ON tasks(grp, priority DESC, id) WHERE state = 'queued';
CREATE INDEX tasks_due       ON tasks(run_after)              WHERE state = 'scheduled';
CREATE INDEX tasks_running   ON tasks(grp)                    WHERE state = 'running';
-- Listing by state; the states a task passes through on every run (queued,
-- running) are left out: the submit, the claim and the end would each write
-- it, and those two have an index of their own (tasks_ready, tasks_running).
-- A query uses it only with this WHERE written out (query.c, stmts.def).
CREATE INDEX tasks_state     ON tasks(state, id)              WHERE state NOT IN ('queued','running');
CREATE INDEX tasks_batch     ON tasks(batch, id)              WHERE batch IS NOT NULL;
CREATE INDEX tasks_name      ON tasks(name, id);
CREATE INDEX tasks_session   ON tasks(session, id)            WHERE session IS NOT NULL;
CREATE INDEX tasks_finished  ON tasks(finished_at)            WHERE finished_at IS NOT NULL;
CREATE INDEX tasks_env       ON tasks(env_id);                -- envs_collect
CREATE INDEX tasks_on_exit ON tasks(id)                 WHERE on_exit_due != 0;
CREATE UNIQUE INDEX tasks_unique ON tasks(unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('queued','scheduled','blocked','running');

CREATE TABLE attempts_new (
    task_id       INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    worker_id     INTEGER,
    pid           INTEGER,
    pgid          INTEGER,
    proc_start    INTEGER,                   -- /proc/PID/stat starttime: pid identity
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    exit_code     INTEGER,
    signal        INTEGER,
    outcome       TEXT,                      -- as tasks.outcome
    category      TEXT,
    reason        TEXT,
    retry_at      INTEGER,                   -- when a retry was scheduled for
    counted       INTEGER NOT NULL DEFAULT 1, -- 0: interrupted by a shutdown, not
                                             -- counted against --retries
    log_offset    INTEGER,                   -- byte offset in the task's log where this attempt began
    log_line      INTEGER,                   -- line number (1-based) where it began
    -- an agent's final result (stream-json/json), when there is one
    result        TEXT,
    is_error      INTEGER,
    subtype       TEXT,
    agent_session TEXT,
    cost_usd      REAL,
    duration_ms   INTEGER,
    num_turns     INTEGER,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    cache_read_tokens     INTEGER,
    cache_creation_tokens INTEGER,
    model         TEXT,
    node          TEXT,                      -- the node its worker ran on (TASKQ_NODE
                                             -- or the host name); NULL: stored before 7
    PRIMARY KEY (task_id, attempt)
) WITHOUT ROWID;
INSERT INTO attempts_new (
    task_id, attempt, worker_id, pid, pgid, proc_start, started_at,
    ended_at, exit_code, signal, outcome, category, reason, retry_at,
    counted, log_offset, log_line, result, is_error, subtype, agent_session,
    cost_usd, duration_ms, num_turns, input_tokens, output_tokens,
    cache_read_tokens, cache_creation_tokens, model, node)
SELECT
    task_id, attempt, worker_id, pid, pgid, proc_start, started_at,
    ended_at, exit_code, signal, outcome, category, reason, retry_at,
    counted, log_offset, log_line, result, is_error, subtype, agent_session,
    cost_usd, duration_ms, num_turns, input_tokens, output_tokens,
    cache_read_tokens, cache_creation_tokens, model, node
FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;

CREATE TRIGGER deps_left_add AFTER INSERT ON deps
    WHEN EXISTS (SELECT 1 FROM tasks WHERE id = NEW.dep_id
                 AND (state = 'queued' OR state = 'scheduled' OR state = 'blocked'
                      OR state = 'running')) BEGIN
    UPDATE tasks SET deps_left = deps_left + 1 WHERE id = NEW.task_id;
END;
CREATE TRIGGER deps_left_end AFTER UPDATE OF state ON tasks
    WHEN (OLD.state = 'succeeded' OR OLD.state = 'failed' OR OLD.state = 'timed_out'
          OR OLD.state = 'killed' OR OLD.state = 'canceled')
      <> (NEW.state = 'succeeded' OR NEW.state = 'failed' OR NEW.state = 'timed_out'
          OR NEW.state = 'killed' OR NEW.state = 'canceled')
     AND EXISTS (SELECT 1 FROM deps WHERE dep_id = NEW.id) BEGIN
    UPDATE tasks SET deps_left = deps_left +
        CASE WHEN NEW.state = 'succeeded' OR NEW.state = 'failed'
                  OR NEW.state = 'timed_out' OR NEW.state = 'killed'
                  OR NEW.state = 'canceled'
             THEN -1 ELSE 1 END
        WHERE id IN (SELECT task_id FROM deps WHERE dep_id = NEW.id);
END;
CREATE TRIGGER deps_left_delete AFTER DELETE ON tasks
    WHEN (OLD.state = 'queued' OR OLD.state = 'scheduled' OR OLD.state = 'blocked'
          OR OLD.state = 'running') BEGIN
    UPDATE tasks SET deps_left = deps_left - 1
        WHERE id IN (SELECT task_id FROM deps WHERE dep_id = OLD.id);
END;
CREATE TRIGGER tasks_id_floor AFTER DELETE ON tasks
    WHEN NOT EXISTS (SELECT 1 FROM tasks WHERE id > OLD.id) BEGIN
    INSERT INTO meta(key, value) VALUES ('tasks_id_floor', OLD.id)
        ON CONFLICT(key) DO UPDATE SET value = excluded.value
        WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER);
END;
CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts(grp, state, n) VALUES (NEW.grp, NEW.state, 1)
        ON CONFLICT(grp, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE grp = OLD.grp AND state = OLD.state;
END;
CREATE TRIGGER task_counts_update AFTER UPDATE OF state, grp ON tasks
    WHEN OLD.state IS NOT NEW.state OR OLD.grp IS NOT NEW.grp BEGIN
    UPDATE task_counts SET n = n - 1 WHERE grp = OLD.grp AND state = OLD.state;
    INSERT INTO task_counts(grp, state, n) VALUES (NEW.grp, NEW.state, 1)
        ON CONFLICT(grp, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER envs_collect AFTER DELETE ON tasks
    WHEN OLD.env_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM tasks WHERE env_id = OLD.env_id) BEGIN
    DELETE FROM envs WHERE id = OLD.env_id;
END;

CREATE VIEW task_list AS
SELECT id, state, name, grp, batch, priority, attempt,
       replace(rtrim(CAST(argv AS TEXT), char(0)), char(0), ' ') AS command,
       cwd,
       datetime(created_at / 1000, 'unixepoch')  AS created,
       datetime(started_at / 1000, 'unixepoch')  AS started,
       datetime(finished_at / 1000, 'unixepoch') AS finished,
       exit_code, signal, outcome, category, reason
FROM tasks;

PRAGMA user_version = 11;
