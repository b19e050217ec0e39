#!/usr/bin/env bash
# A task whose end cannot be written (another connection holds the write
# lock past every busy timeout) is never lost: its worker keeps the end in
# HOME/ends/TASK.ATTEMPT and writes it once the lock goes; meanwhile kill,
# remove and wait answer at once with one line, status shows the worker
# recording, and drain exits when the end is in. After the supervisor and
# the worker die in that state, a new supervisor writes the true end from
# the record: the task is never recorded lost, never run twice (with
# --retry-lost), and keeps its real exit code.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

HOLD_MS=12000   # past the workers' busy timeout (10 s): the old code gave up

# timed CMD...: run CMD (as run does); TQ_TOOK gets how long it took (ms)
timed() {
	local t0
	t0=$(_tq_now_ms)
	run "$@"
	TQ_TOOK=$(($(_tq_now_ms) - t0))
}

# ---------------------------------------------------------------------------
check "a task ends while the lock is held: drain keeps going, then exits 0"
tq submit --retry-lost -- sh -c "echo run >>'$TQ_TMP/runs1'; while [ ! -e '$TQ_TMP/go1' ]; do sleep 0.02; done; exit 0" >"$TQ_TMP/id1"
id=$(cat "$TQ_TMP/id1")
tq_bg "$TASKQ_BIN" drain --workers 1 --lease 1s 2>>"$TQ_TMP/serve.log"
DRAIN_PID=$TQ_LAST_PID
wait_for "[ \"\$(state_of $id)\" = running ] && [ -s '$TQ_TMP/runs1' ]" 20 || fail "task did not start"
hold_lock a
t_end=$(_tq_now_ms)
touch "$TQ_TMP/go1"

check "its end is kept in an end record while the store refuses it"
wait_for "ls '$TASKQ_HOME/ends/' | grep -qx '$id.1'" 20 ||
	fail "no end record: $(ls -la "$TASKQ_HOME/ends" 2>&1); $(tail -5 "$TQ_TMP/serve.log")"
assert_eq "600" "$(stat -c %a "$TASKQ_HOME/ends/$id.1")" "end record mode"
assert_eq running "$(state_of "$id")" "state while the lock is held"

check "kill answers at once with one line: the task has ended, its end is being recorded"
timed tq kill "$id"
assert_eq 1 "$TQ_RC" "kill exit status ($(err))"
assert_one_line_error
assert_contains "$(err)" "task $id has already ended (succeeded, exit code 0); its end is being recorded"
[ "$TQ_TOOK" -lt 3000 ] || fail "kill took $TQ_TOOK ms"

check "remove answers at once, removes nothing"
timed tq remove "$id"
assert_eq 1 "$TQ_RC" "remove exit status ($(err))"
assert_one_line_error
assert_contains "$(err)" "its end is being recorded: not removed yet"
[ "$TQ_TOOK" -lt 3000 ] || fail "remove took $TQ_TOOK ms"

check "wait --timeout says why it timed out"
timed tq wait "$id" --timeout 1s
assert_eq 124 "$TQ_RC" "wait exit status"
assert_contains "$(err)" "task $id has ended (succeeded, exit code 0) and its end is being recorded"
[ "$TQ_TOOK" -lt 4000 ] || fail "wait --timeout 1s took $TQ_TOOK ms"

check "status shows the worker recording the end, not idle"
assert_exit 0 tq status
assert_contains "$(out)" "recording the end of task $id"
assert_exit 0 tq status --json
assert_eq true "$(pyjson 'd["worker_list"][0]["recording"]' <"$TQ_OUT")" "status --json recording"

# hold the lock past every busy timeout since the end
wait_for "[ \$((\$(_tq_now_ms) - $t_end)) -ge $HOLD_MS ]" 60
release_lock a

check "once the lock goes: succeeded, exit code 0, run once, record removed, drain exits 0"
wait_state "$id" succeeded 30
assert_exit 0 tq show "$id" --json
assert_eq 0 "$(pyjson 'd["exit_code"]' <"$TQ_OUT")" "exit code"
assert_eq succeeded "$(pyjson 'd["outcome"]' <"$TQ_OUT")" "outcome"
assert_eq 1 "$(pyjson 'len(d["attempts"])' <"$TQ_OUT")" "attempts"
assert_eq 1 "$(wc -l <"$TQ_TMP/runs1")" "runs"
wait_for "[ ! -e '$TASKQ_HOME/ends/$id.1' ]" 10 || fail "end record left behind"
# the end's time is when it ended, not when it could be written
fin=$(task_field "$id" finished_at)
[ $((fin - t_end)) -lt $((HOLD_MS - 2000)) ] ||
	fail "finished_at $fin is the time of the write, not of the end ($t_end)"
wait_for "! _tq_alive $DRAIN_PID" 30 || fail "drain did not exit: $(tail -5 "$TQ_TMP/serve.log")"
wait "$DRAIN_PID" && drc=0 || drc=$?
assert_eq 0 "$drc" "drain exit status"

# ---------------------------------------------------------------------------
check "a supervisor restart in between: the new one writes the true end from the record"
serve_start 1
tq submit --retry-lost -- sh -c "echo run >>'$TQ_TMP/runs2'; while [ ! -e '$TQ_TMP/go2' ]; do sleep 0.02; done; exit 3" >"$TQ_TMP/id2"
id=$(cat "$TQ_TMP/id2")
wait_for "[ \"\$(state_of $id)\" = running ] && [ -s '$TQ_TMP/runs2' ]" 20 || fail "task 2 did not start"
wpid=$(worker_pids)
hold_lock b
t_end=$(_tq_now_ms)
touch "$TQ_TMP/go2"
wait_for "[ -e '$TASKQ_HOME/ends/$id.1' ]" 20 || fail "no end record for task 2"
# the supervisor and its worker die while the end is not written
kill -KILL "$SERVE_PID" "$wpid"
wait_for "! _tq_alive $wpid && ! _tq_alive $SERVE_PID" 10
wait_for "[ \$((\$(_tq_now_ms) - $t_end)) -ge $HOLD_MS ]" 60
release_lock b
serve_start 1
wait_for "[ \"\$(state_of $id)\" = failed ]" 30 ||
	fail "task 2 is $(state_of "$id") ($(task_field "$id" outcome reason)): $(tail -5 "$TQ_TMP/serve.log")"
assert_exit 0 tq show "$id" --json
assert_eq 3 "$(pyjson 'd["exit_code"]' <"$TQ_OUT")" "exit code of task 2"
assert_eq failed "$(pyjson 'd["outcome"]' <"$TQ_OUT")" "outcome of task 2 (never lost)"
assert_eq 1 "$(pyjson 'len(d["attempts"])' <"$TQ_OUT")" "attempts of task 2"
assert_contains "$(cat "$TQ_TMP/serve.log")" "written from its end record"
assert_not_contains "$(attempts_of "$id" outcome)" lost
wait_for "[ ! -e '$TASKQ_HOME/ends/$id.1' ]" 10 || fail "end record 2 left behind"
# final, not a retry waiting: it never runs a second time
assert_eq 1 "$(wc -l <"$TQ_TMP/runs2")" "runs of task 2"

check "a record whose attempt is recorded already is removed"
mkdir -p "$TASKQ_HOME/ends"
printf 'taskq end record 1\ntask %s\n' "$id" >"$TASKQ_HOME/ends/$id.1"
wait_for "[ ! -e '$TASKQ_HOME/ends/$id.1' ]" 10 || fail "stale end record not removed"
