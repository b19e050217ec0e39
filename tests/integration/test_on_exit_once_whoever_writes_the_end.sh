#!/usr/bin/env bash
# A task's --on-exit hook runs exactly once for its final end, whoever
# writes that end: its own worker, a later supervisor writing it from the
# worker's end record after the worker died, or a recovery recording a lost
# attempt. A hook that had started before its worker died is never run
# again. (Before: an end written by anyone but the task's own worker ran no
# hook at all, so a user relying on it to be told was not told.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

hooks="$TQ_TMP/hooks"
HOOK="echo \"\$TASKQ_ID \$TASKQ_STATE \$TASKQ_EXIT_CODE\" >>'$hooks'"
hook_lines() { grep -c "^$1 " "$hooks" 2>/dev/null || true; }

check "the end written from the record by a later supervisor runs the hook, once"
serve_start 1
a=$(submit_id --on-exit "$HOOK" -- sh -c "while [ ! -e '$TQ_TMP/go' ]; do sleep 0.02; done; exit 4")
wait_state "$a" running
wpid=$(worker_pids)
hold_lock a
touch "$TQ_TMP/go"
wait_for "[ -e '$TASKQ_HOME/ends/$a.1' ]" 20 || fail "no end record: $(tail -3 "$TQ_TMP/serve.log")"
kill -KILL "$SERVE_PID" "$wpid"
wait_for "! _tq_alive $wpid && ! _tq_alive $SERVE_PID" 10
release_lock a
serve_start 1
wait_state "$a" failed 30
assert_eq 4 "$(task_field "$a" exit_code)" "exit code of $a"
wait_for "[ \"\$(hook_lines $a)\" -ge 1 ]" 30 ||
	fail "the hook of task $a did not run: $(grep -i hook "$TQ_TMP/serve.log" | tail -3)"
assert_eq "$a failed 4" "$(grep "^$a " "$hooks")" "the hook's environment"

check "a lost attempt's final end runs the hook, once"
b=$(submit_id --on-exit "$HOOK" -- sleep 300)
wait_state "$b" running
pb=$(task_worker_pid "$b")
[ -n "$pb" ] || fail "no worker for $b"
kill -KILL "$pb"
wait_state "$b" failed 30
assert_eq lost "$(outcome_of "$b")"
wait_for "[ \"\$(hook_lines $b)\" -ge 1 ]" 30 || fail "the hook of lost task $b did not run"
assert_eq "$b failed " "$(grep "^$b " "$hooks")" "the lost task's hook (no exit code)"

check "a hook that had started when its worker died is not run again"
c=$(submit_id --on-exit "echo \$TASKQ_ID started >>'$hooks'; exec sleep 300" -- true)
wait_for "[ \"\$(hook_lines $c)\" -ge 1 ]" 30 || fail "the hook of task $c did not start"
wait_for "[ \"\$(live_workers)\" -ge 1 ]" 30
kill -KILL "$SERVE_PID" $(worker_pids)
serve_start 1

check "a task submitted after all that ran: every hook ran exactly once"
d=$(submit_id --on-exit "$HOOK" -- true)
wait_state "$d" succeeded 30
wait_for "[ \"\$(hook_lines $d)\" -ge 1 ]" 30 || fail "the hook of task $d did not run"
# and none is owed any more: none can run again
assert_exit 0 tq status --json
assert_eq false "$(out | pyjson 'd["on_exit_due"]')" "a hook owed"
for id in "$a" "$b" "$c" "$d"; do
	assert_eq 1 "$(hook_lines "$id")" "runs of the hook of task $id ($(cat "$hooks"))"
done

check "a hook owed when no supervisor runs: status --json says so; the next supervisor runs it"
assert_exit 0 tq shutdown
# (a hook owed, as a recovery or an end record leaves one)
tq_sql "update tasks set on_exit_due = 1 where id = $d" # SQL: the database itself (setup: no command makes a hook owed)
assert_exit 0 tq status --json
assert_eq true "$(out | pyjson 'd["on_exit_due"]')" "a hook owed"
serve_start 1
wait_for "[ \"\$(hook_lines $d)\" -ge 2 ]" 30 || fail "the owed hook of task $d did not run"
assert_exit 0 tq status --json
assert_eq false "$(out | pyjson 'd["on_exit_due"]')" "a hook owed once it ran"
