#!/usr/bin/env bash
# An --on-exit hook is stopped as a task is (src/proc/term.h): at its
# timeout SIGTERM to its process group, then SIGKILL to the group when it
# has not exited 2 s later (ON_EXIT_KILL_GRACE_MS); and a shutdown whose
# grace ends before the hook's timeout stops it then, saying so as a
# timeout. test_on_exit.sh covers a hook that dies of the SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

H="$TQ_TMP/hooks"
mkdir -p "$H"

check "a hook that ignores SIGTERM is SIGKILLed, with its group, after the grace"
# the shell and its child both ignore TERM: only the KILL ends them
deaf=$(submit_id --on-exit "trap '' TERM; echo \$\$ > '$H/deaf.pid'; sleep 300 & echo \$! > '$H/deaf.child'; wait; wait" -- true)
after=$(submit_id -- echo after the deaf hook)
export TASKQ_ON_EXIT_TIMEOUT=1s
serve_start 1
wait_for "[ -s '$H/deaf.child' ]" 20 || fail "the hook did not run: $(cat "$TQ_TMP/serve.log")"
hook_pid=$(cat "$H/deaf.pid")
child_pid=$(cat "$H/deaf.child")
wait_for "grep -q 'task $deaf on-exit: failed' '$TQ_TMP/serve.log'" 20 ||
	fail "the hook was not ended: $(grep on-exit "$TQ_TMP/serve.log")"
grep -q "task $deaf on-exit: still running after 1.0s; stopping it" "$TQ_TMP/serve.log" ||
	fail "no timeout line: $(grep on-exit "$TQ_TMP/serve.log")"
grep -q "task $deaf on-exit: failed (signal 9 (SIGKILL), at its timeout)" "$TQ_TMP/serve.log" ||
	fail "not ended by SIGKILL: $(grep on-exit "$TQ_TMP/serve.log")"
wait_for "! _tq_alive $hook_pid && ! _tq_alive $child_pid" 10 ||
	fail "the hook's processes outlived its SIGKILL"
wait_state "$after" succeeded 20
assert_eq succeeded "$(state_of "$deaf")"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"

check "a shutdown's grace cuts a hook's time short: stopped as at its timeout"
long=$(submit_id --on-exit "echo \$\$ > '$H/long.pid'; exec sleep 300" -- true)
export TASKQ_ON_EXIT_TIMEOUT=5m
serve_start 1
wait_for "[ -s '$H/long.pid' ]" 20 || fail "the hook did not run: $(cat "$TQ_TMP/serve.log")"
hook_pid=$(cat "$H/long.pid")
assert_exit 0 tq shutdown --grace 500ms
wait_for "! _tq_alive $hook_pid" 20 || fail "the hook outlived the shutdown's grace"
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
grep -q "task $long on-exit: still running after 5m00s; stopping it" "$TQ_TMP/serve.log" ||
	fail "no timeout line: $(grep on-exit "$TQ_TMP/serve.log")"
grep -q "task $long on-exit: failed (signal 15 (SIGTERM), at its timeout)" "$TQ_TMP/serve.log" ||
	fail "not ended by SIGTERM: $(grep on-exit "$TQ_TMP/serve.log")"
assert_eq succeeded "$(state_of "$long")"
