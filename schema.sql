-- taskq database schema.
--
-- This file is compiled into the taskq binary at build time (tools/embed.py) and
-- applied to a new database in one transaction. Its last statement sets
-- PRAGMA user_version; the binary refuses a database whose user_version is
-- newer than this file's. Each later version adds migrations/NNN.sql (moving
-- user_version from NNN-1 to NNN, also compiled in) and this file stays the
-- full, current schema for new databases. A migration must also run on a
-- database set back to its version by hand (IF NOT EXISTS; an ALTER TABLE
-- ADD COLUMN of a column already there is skipped by db.c, migrate_step).
--
-- Conventions, so that the file reads the same from the sqlite3 shell:
--   * times are integer milliseconds since the Unix epoch (UTC); see the
--     task_list view for human-readable columns;
--   * argv and env are BLOBs of NUL-terminated byte strings (the layout of
--     /proc/PID/cmdline and /proc/PID/environ), because a command line may hold
--     any byte but NUL and JSON text cannot carry invalid UTF-8 exactly;
--   * "grp" is the task's group: "group" is an SQL keyword.
--   * no SQLite-only types; the statements in src/queue are the only writers.

-- One row per distinct environment. Submitters from the same shell share one
-- row, so a million queued tasks do not carry a million copies of $PATH.
CREATE TABLE envs (
    id        INTEGER PRIMARY KEY,
    hash      INTEGER NOT NULL,            -- FNV-1a 64 of data, for lookup
    data      BLOB    NOT NULL             -- "K=V\0K=V\0..."
);
CREATE INDEX envs_hash ON envs(hash);

CREATE TABLE tasks (
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

-- The claim reads the head of this index for each group; it holds only
-- runnable tasks, so claim cost does not grow with finished, scheduled or
-- blocked tasks (docs: research/sqlite-limits.md, section 3).
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

-- One row per run of a task. (task_id, attempt) fences every worker write:
-- a worker whose lease was taken over holds an older attempt number.
CREATE TABLE attempts (
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
    output_bytes  INTEGER,                   -- output it stored in the task's log; NULL:
                                             -- not known (an end its worker did not
                                             -- write, or stored before 12). A log file
                                             -- is made by the first output: a task that
                                             -- printed nothing has none
    PRIMARY KEY (task_id, attempt)
) WITHOUT ROWID;                             -- one b-tree: an attempt added is one page

-- task_id waits for dep_id. kind 'success' (--after): dep_id must succeed, or
-- task_id is canceled; kind 'any' (--after-any, and the previous task of a
-- --session): dep_id must only have ended.
CREATE TABLE deps (
    task_id  INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    dep_id   INTEGER NOT NULL,               -- no FK: a removed dependency counts as ended
    kind     TEXT    NOT NULL DEFAULT 'success' CHECK (kind IN ('success','any')),
    PRIMARY KEY (task_id, dep_id)
);
CREATE INDEX deps_dep ON deps(dep_id);

-- tasks.deps_left, kept whatever code changes a task (a worker's finish,
-- cancel, remove, retry, recovery, retention): a dependency added while its
-- task has not ended counts; a dependency that ends, or is removed before it
-- ended, stops counting; one retried (ended -> queued again) counts again.
-- The upsert of a repeated dependency (submit.c) fires no INSERT trigger, so
-- a dependency named twice counts once, as its one deps row.
-- (A state is compared one value at a time, as in the CHECK on tasks.state;
-- deps_left_end, which every end of a task fires, does nothing more unless
-- the task has a dependant: one probe of deps_dep.)
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

-- The highest id given, when the task that had it is deleted: no later task
-- takes it again (ST_TASK_ADD starts past it), as AUTOINCREMENT promised.
-- Written only when the task deleted was the newest.
CREATE TRIGGER tasks_id_floor AFTER DELETE ON tasks
    WHEN NOT EXISTS (SELECT 1 FROM tasks WHERE id > OLD.id) BEGIN
    INSERT INTO meta(key, value) VALUES ('tasks_id_floor', OLD.id)
        ON CONFLICT(key) DO UPDATE SET value = excluded.value
        WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER);
END;

CREATE TABLE labels (
    task_id  INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    key      TEXT    NOT NULL,
    value    TEXT    NOT NULL,
    PRIMARY KEY (task_id, key)
);
CREATE INDEX labels_kv ON labels(key, value);

-- --stdin-file contents, stored at submit.
CREATE TABLE stdin_files (
    task_id  INTEGER PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    data     BLOB NOT NULL
);

-- taskq write ID DATA: kept until the worker has delivered it.
CREATE TABLE stdin_writes (
    id        INTEGER PRIMARY KEY,
    task_id   INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    data      BLOB    NOT NULL,
    eof       INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    delivered_at INTEGER
);
CREATE INDEX stdin_writes_task ON stdin_writes(task_id, id) WHERE delivered_at IS NULL;
CREATE INDEX stdin_writes_all ON stdin_writes(task_id);     -- deletes of a task

-- How many tasks each group has in each state, kept by the triggers below
-- in the transaction of every change, so `taskq status` reads a few rows
-- instead of counting a million (migrations/002.sql says why).
CREATE TABLE task_counts (
    grp    TEXT    NOT NULL,
    state  TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (grp, state)
) WITHOUT ROWID;
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

-- An environment row goes with the last task that uses it (retention, clear,
-- remove); tasks_env makes the check one index probe.
CREATE TRIGGER envs_collect AFTER DELETE ON tasks
    WHEN OLD.env_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM tasks WHERE env_id = OLD.env_id) BEGIN
    DELETE FROM envs WHERE id = OLD.env_id;
END;

-- Groups: parallelism limits and pauses. A row exists for every group any
-- task names (inserted at submit), so the claim can walk groups, not tasks.
CREATE TABLE groups (
    name          TEXT PRIMARY KEY,
    parallel      INTEGER NOT NULL DEFAULT 0, -- 0: unlimited within the worker count
    paused        INTEGER NOT NULL DEFAULT 0, -- taskq pause GROUP
    paused_until  INTEGER NOT NULL DEFAULT 0, -- ms; a rate limit's pause
    pause_reason  TEXT,
    -- 1: when the rate limit's pause lifts, one task is released first (a
    -- half-open probe) and the rest wait until it ended without a rate limit
    probe         INTEGER NOT NULL DEFAULT 0,
    probe_task    INTEGER                    -- the task released as the probe, while it runs
);

-- Sessions (--session KEY): the agent's own session id to resume, and the
-- directory every task of the session runs in. The row is made by the
-- session's first task (agent_session NULL, updated_at 0 until a link
-- reports one) and outlives its tasks: an agent keeps a conversation per
-- directory (Claude under ~/.claude/projects/<cwd>), so resuming it from
-- another directory fails.
--
-- A warm session (--warm) also has its agent process recorded while it is
-- up: its pid and start time together (its identity: a bare pid may be
-- another process by the time it is read), the node that started it (only
-- that node's supervisor signals it) and when; idle_since while no turn
-- runs on it. `taskq sessions close KEY` stores close_requested_at for that
-- supervisor, which ends the process and clears warm_* and the request.
CREATE TABLE sessions (
    key           TEXT PRIMARY KEY,
    agent_session TEXT,
    last_task_id  INTEGER,
    updated_at    INTEGER NOT NULL,          -- ms the agent session last advanced; 0: never
    cwd           TEXT,                      -- its first task's working directory
    agent         TEXT,                      -- the agent CLI of its tasks (registry name)
    warm_pid      INTEGER,                   -- the warm process; NULL: none
    warm_start    INTEGER,                   -- its start time (proc.h), with the pid its identity
    warm_node     TEXT,                      -- the node it runs on
    warm_at       INTEGER,                   -- ms it was started
    idle_since    INTEGER,                   -- ms since no turn has run on it; NULL: one runs
    close_requested_at INTEGER               -- ms `taskq sessions close` asked; NULL: not asked
);
CREATE INDEX sessions_warm ON sessions(warm_node) WHERE warm_pid IS NOT NULL;

-- poll cursors: what each reader has already been shown of a task's log.
CREATE TABLE cursors (
    task_id  INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    reader   TEXT    NOT NULL,
    line     INTEGER NOT NULL,                -- lines shown so far
    updated_at INTEGER NOT NULL,
    log_file INTEGER,                         -- inode of the log file line counts in
                                              -- (NULL: not known); another file at
                                              -- the path (the log was deleted and
                                              -- started again): read from its line 1
    PRIMARY KEY (task_id, reader)
);

-- Worker processes, with heartbeats; a new supervisor counts live ones here.
CREATE TABLE workers (
    id            INTEGER PRIMARY KEY,
    pid           INTEGER NOT NULL,
    proc_start    INTEGER,
    host          TEXT    NOT NULL,
    slot          INTEGER,
    supervisor_pid INTEGER,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    task_id       INTEGER,
    stopped_at    INTEGER
);

-- Each node's supervisor, one row a node: it says here that it runs, with a
-- heartbeat, so that `taskq status` on any node sharing the store lists
-- every node's supervisor (issue 20). stopped_at: it stopped (NULL: it has
-- not said so; a heartbeat older than a few of its beats says it died).
CREATE TABLE supervisors (
    node          TEXT    PRIMARY KEY,
    pid           INTEGER NOT NULL,
    proc_start    INTEGER,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    workers       INTEGER NOT NULL,                -- its --workers
    max_warm      INTEGER NOT NULL DEFAULT 0,      -- its --max-warm
    containment   TEXT,                            -- how its workers contain tasks
    stopped_at    INTEGER
) WITHOUT ROWID;

-- Small settings and facts about this database (retention, who created it).
CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT
) WITHOUT ROWID;                             -- one b-tree: a submit token is one page

-- For people reading the database with the sqlite3 shell.
CREATE VIEW task_list AS
SELECT id, state, name, grp, batch, priority, attempt,
       replace(rtrim(CAST(argv AS TEXT), char(0)), char(0), ' ') AS command,
       cwd,
       datetime(created_at / 1000, 'unixepoch')  AS created,
       datetime(started_at / 1000, 'unixepoch')  AS started,
       datetime(finished_at / 1000, 'unixepoch') AS finished,
       exit_code, signal, outcome, category, reason
FROM tasks;

PRAGMA application_id = 1953721201;  -- 'tskq'
PRAGMA user_version = 12;
