#!/usr/bin/env bash
# test_harness.sh - lib.sh itself, since every other test leans on it: the
# exit trap stops what a test started (its whole process group, even a
# process that ignores TERM) and removes the temporary directory; wait_for
# succeeds as soon as its condition holds and fails at its deadline; a
# failed assertion stops a test with a non-zero status.
. "$(dirname "$0")/lib.sh"

lib="$(dirname "$0")/lib.sh"
inner="$TQ_TMP/inner.sh"

check "wait_for returns once the condition holds, and fails at the deadline"
flag="$TQ_TMP/flag"
(sleep 0.3; touch "$flag") &
tq_track $!
start=$(_tq_now_ms)
wait_for "[ -e '$flag' ]" 10
elapsed=$(($(_tq_now_ms) - start))
[ "$elapsed" -lt 5000 ] || fail "wait_for took ${elapsed} ms for a 0.3 s event"
start=$(_tq_now_ms)
if wait_for "false" 1 2>"$TQ_TMP/wf.err"; then fail "wait_for 'false' succeeded"; fi
elapsed=$(($(_tq_now_ms) - start))
[ "$elapsed" -ge 1000 ] && [ "$elapsed" -lt 5000 ] || fail "deadline of 1 s took ${elapsed} ms"
assert_contains "$(cat "$TQ_TMP/wf.err")" "timed out after 1s"

check "the exit trap kills every process a test started, and its children"
cat >"$inner" <<EOF
. "$lib"
tq_bg sleep 1000
echo \$TQ_LAST_PID >"$TQ_TMP/pids"
# a child that ignores TERM, in the same group: only KILL stops it
tq_bg bash -c 'trap "" TERM; sleep 1000 & echo \$! >"$TQ_TMP/grandchild"; wait'
echo \$TQ_LAST_PID >>"$TQ_TMP/pids"
wait_for "[ -s '$TQ_TMP/grandchild' ]" 10
echo "\$TQ_TMP" >"$TQ_TMP/inner_tmp"
EOF
assert_exit 0 bash "$inner"
assert_contains "$(out)" "PASS inner"
pids="$(cat "$TQ_TMP/pids") $(cat "$TQ_TMP/grandchild")"
for pid in $pids; do
	wait_for "! _tq_alive $pid" 10 || fail "process $pid outlived its test"
done
inner_tmp=$(cat "$TQ_TMP/inner_tmp")
assert_eq no "$([ -e "$inner_tmp" ] && echo yes || echo no)" "the inner test's directory"

check "a failed assertion stops the test with status 1 and says why"
cat >"$inner" <<EOF
. "$lib"
assert_eq a b "letters"
echo "not reached"
EOF
assert_exit 1 bash "$inner"
assert_not_contains "$(out)" "not reached"
assert_contains "$(err)" "letters: expected [a], got [b]"
assert_contains "$(err)" "FAIL inner"

check "assert_exit reports the command's output when the status differs"
cat >"$inner" <<EOF
. "$lib"
assert_exit 0 sh -c 'echo to-out; echo to-err >&2; exit 3'
EOF
assert_exit 1 bash "$inner"
assert_contains "$(err)" "expected exit 0, got 3"
assert_contains "$(err)" "to-out"
assert_contains "$(err)" "to-err"

check "each test has its own state directory and HOME"
assert_contains "$TASKQ_HOME" "$TQ_TMP"
assert_contains "$HOME" "$TQ_TMP"
