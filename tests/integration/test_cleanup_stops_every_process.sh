#!/usr/bin/env bash
# lib.sh's cleanup stops every process that belongs to a test, also when the
# test fails half-way: a supervisor it KILLs in the middle of its kill grace
# leaves its tasks (each in its own session) behind, and a supervisor that
# a submit autostarted is nobody's child. Proved with a test that fails on
# purpose in a subshell: once it has exited, none of its processes is left.
. "$(dirname "$0")/lib.sh"

lib_dir=$(cd "$(dirname "$0")" && pwd)
export TQ_INNER_OUT="$TQ_TMP/inner"
mkdir -p "$TQ_INNER_OUT"

# Kill what the inner test left (for this test's own cleanup: those
# processes carry the inner test's marks, not ours).
inner_procs() {
	local t
	t=$(cat "$TQ_INNER_OUT/tmp" 2>/dev/null) || return 0
	env -u HOME -u TASKQ_HOME -u TASKQ_TASK_HOME grep -lzsF -e "=$t/" /proc/[0-9]*/environ 2>/dev/null |
		cut -d/ -f3 || true
}
kill_inner() { local p; for p in $(inner_procs); do kill -KILL "$p" 2>/dev/null; done; true; }
trap 'rc=$?; set +e; kill_inner; (exit $rc); _tq_cleanup' EXIT

check "a test that fails half-way, its supervisor's task ignoring TERM for a 60 s grace"
t0=$(_tq_now_ms)
(
	. "$lib_dir/lib.sh"
	. "$lib_dir/lib_serve.sh"
	echo "$TQ_TMP" >"$TQ_INNER_OUT/tmp"
	serve_start 1
	id=$(tq submit --kill-grace 60s -- sh -c 'trap "" TERM; echo up; exec sleep 300')
	wait_state "$id" running
	wait_for "tq log $id | grep -qx up" 20 || fail "the task did not start"
	task_pid "$id" >"$TQ_INNER_OUT/task"
	# and one under a supervisor a submit autostarted
	TASKQ_AUTOSTART=1 TASKQ_HOME="$TQ_TMP/home2" tq submit -- sh -c 'trap "" TERM; exec sleep 301' >/dev/null
	wait_for "[ \"\$(TASKQ_HOME=$TQ_TMP/home2 tq list --state running --json | pyjson 'len(d)')\" = 1 ]" 20 ||
		fail "the autostarted supervisor did not run its task"
	fail "failing on purpose, half-way"
) >"$TQ_TMP/inner.log" 2>&1 &
inner=$!
rc=0
wait "$inner" || rc=$?
took=$(($(_tq_now_ms) - t0))
assert_eq 1 "$rc" "the inner test's exit ($(cat "$TQ_TMP/inner.log"))"
assert_contains "$(cat "$TQ_TMP/inner.log")" "failing on purpose, half-way"
task=$(cat "$TQ_INNER_OUT/task")
[ -n "$task" ] || fail "the inner test named no task: $(cat "$TQ_TMP/inner.log")"

check "none of its processes is left: tasks, workers, supervisors"
left=$(inner_procs | tr '\n' ' ')
[ -z "$left" ] || fail "left after the inner test: $left $(ps -o pid,ppid,pgid,stat,args -p "$(echo $left | tr ' ' ,)")"
_tq_alive "$task" && fail "task process $task outlived its test"

check "its cleanup took a bounded time (not the task's 60 s grace)"
[ "$took" -lt 45000 ] || fail "the failed test took $took ms"
