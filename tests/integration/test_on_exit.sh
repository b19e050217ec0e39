#!/usr/bin/env bash
# submit --on-exit CMD: the worker runs CMD after the task's end is
# recorded, in the task's cwd (/ when it is gone) and environment plus
# TASKQ_ID, TASKQ_STATE, TASKQ_EXIT_CODE, TASKQ_LOG; the hook's failure is
# logged and never changes the task; a hook that hangs is killed (its whole
# process group) at its timeout ($TASKQ_ON_EXIT_TIMEOUT, 1s here) and the
# worker goes on to the next task.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

H="$TQ_TMP/hooks"
mkdir -p "$H" "$TQ_TMP/wd" "$TQ_TMP/gone"
# the hook: its environment and working directory, into $H/NAME
dump() { echo "env > '$H/$1.env'; pwd > '$H/$1.pwd'"; }
envof() { sed -n "s/^$2=//p" "$H/$1.env"; }

cd "$TQ_TMP/wd"
failed=$(submit_id --env FOO=bar --on-exit "$(dump failed)" -- sh -c 'echo out; exit 3')
ok=$(submit_id --on-exit "$(dump ok); echo hook says hi; echo hook complains >&2; exit 7" -- true)
sig=$(submit_id --on-exit "$(dump sig)" -- sh -c 'kill -KILL $$')
cd "$TQ_TMP/gone"
nocwd=$(submit_id --on-exit "$(dump nocwd)" -- true)
cd "$TQ_TMP"
rmdir "$TQ_TMP/gone"
hang=$(submit_id --on-exit "echo \$\$ > '$H/hang.pid'; sleep 300 & echo \$! > '$H/hang.child'; wait" -- true)
after=$(submit_id -- echo after the hang)

export TASKQ_ON_EXIT_TIMEOUT=1s
serve_start 1

check "the hook gets the task's environment and cwd, and the four variables"
wait_for "[ -s '$H/failed.pwd' ]" 20 || fail "the hook did not run: $(cat "$TQ_TMP/serve.log")"
assert_eq failed "$(state_of "$failed")"
assert_eq "$failed" "$(envof failed TASKQ_ID)"
assert_eq failed "$(envof failed TASKQ_STATE)"
assert_eq 3 "$(envof failed TASKQ_EXIT_CODE)"
assert_eq "$TASKQ_HOME/logs/$failed.log" "$(envof failed TASKQ_LOG)"
assert_eq bar "$(envof failed FOO)"
assert_eq "$TQ_TMP/wd" "$(cat "$H/failed.pwd")"
[ -s "$(envof failed TASKQ_LOG)" ] || fail "TASKQ_LOG names no log with output"

check "a failing hook: logged with its output, the task stays succeeded"
wait_for "[ -s '$H/ok.pwd' ]" 20
assert_eq succeeded "$(state_of "$ok")"
assert_eq succeeded "$(outcome_of "$ok")"
assert_eq 0 "$(envof ok TASKQ_EXIT_CODE)"
assert_eq succeeded "$(envof ok TASKQ_STATE)"
wait_for "grep -q 'task $ok on-exit: failed (exit 7)' '$TQ_TMP/serve.log'" 10 ||
	fail "hook failure not logged: $(cat "$TQ_TMP/serve.log")"
grep -q "task $ok on-exit stdout: hook says hi" "$TQ_TMP/serve.log" || fail "hook stdout not logged"
grep -q "task $ok on-exit stderr: hook complains" "$TQ_TMP/serve.log" || fail "hook stderr not logged"

check "a task killed by a signal: no exit code"
wait_for "[ -s '$H/sig.pwd' ]" 20
assert_eq failed "$(envof sig TASKQ_STATE)"
assert_eq "" "$(envof sig TASKQ_EXIT_CODE)"
grep -q '^TASKQ_EXIT_CODE=$' "$H/sig.env" || fail "TASKQ_EXIT_CODE not set (empty)"

check "the task's directory is gone: the task cannot start, the hook runs in /"
wait_for "[ -s '$H/nocwd.pwd' ]" 20
assert_eq / "$(cat "$H/nocwd.pwd")"
assert_eq failed "$(state_of "$nocwd")"
assert_exit 127 tq wait "$nocwd"

check "a hanging hook is killed with its group at the timeout; the worker goes on"
wait_for "[ -s '$H/hang.child' ]" 20
hook_pid=$(cat "$H/hang.pid")
child_pid=$(cat "$H/hang.child")
wait_state "$after" succeeded 20
assert_eq succeeded "$(state_of "$hang")"
wait_for "! _tq_alive $hook_pid && ! _tq_alive $child_pid" 10 ||
	fail "the hook's processes outlived its timeout"
grep -q "task $hang on-exit: still running after 1.0s; stopping it" "$TQ_TMP/serve.log" ||
	fail "no timeout line: $(cat "$TQ_TMP/serve.log")"
grep -q "task $hang on-exit: failed (signal 15 (SIGTERM), at its timeout)" "$TQ_TMP/serve.log" ||
	fail "no failure line: $(grep on-exit "$TQ_TMP/serve.log")"
# it took the timeout, not the sleep: the next task ran within seconds
started=$(task_field "$after" started_at)
ended=$(task_field "$hang" finished_at)
[ $((started - ended)) -lt 15000 ] || fail "the next task waited $((started - ended)) ms"
