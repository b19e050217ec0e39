#!/usr/bin/env bash
# A worker whose supervisor is gone (a serve or a drain KILLed: its workers
# keep their tasks for the next supervisor to adopt) and whose state
# directory is then removed can never be adopted: it stops, idle or with a
# task (killed, its grace none), instead of idling for ever, an orphan on
# a deleted database. With its supervisor alive that stays the
# supervisor's to do (test_statedir_replaced).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# live_marked: the live processes whose environment holds our mark (the
# supervisor's workers, and their tasks, inherit it)
mark="TASKQ_TEST_ORPHAN=$TQ_TMP"
live_marked() {
	env -u TASKQ_TEST_ORPHAN grep -lzsxF -e "$mark" /proc/[0-9]*/environ 2>/dev/null |
		while IFS=/ read -r _ _ p _; do
			[[ $p == "$$" || $p == "$BASHPID" ]] || ! _tq_alive "$p" || echo "$p"
		done
	return 0
}

# gone_and_removed SUPERVISOR: KILL it, remove the state directory, and
# wait for every process it left to stop, saying so in the log
gone_and_removed() {
	local w
	w=$(worker_pids)
	[ -n "$w" ] || fail "no worker listed"
	kill -KILL "$1"
	wait "$1" 2>/dev/null || true
	_tq_alive "$w" || fail "worker $w went with its supervisor: nothing to check"
	rm -rf "$TASKQ_HOME"
	if ! wait_for "[ -z \"\$(live_marked)\" ]" 30; then
		left=$(live_marked | paste -sd,)
		fail "left running (pids $left): $(ps -o pid,ppid,stat,args -p "${left:-0}")"
	fi
	assert_contains "$(cat "$TQ_TMP/sup.log")" \
		"taskq worker 1 (pid $w): state directory $TASKQ_HOME was removed and no supervisor runs: stopping"
	: >"$TQ_TMP/sup.log"
}

check "serve KILLed, its worker idle, the state directory removed: the worker stops"
TASKQ_TEST_ORPHAN=$TQ_TMP tq_bg "$TASKQ_BIN" serve --foreground --workers 1 2>>"$TQ_TMP/sup.log"
sup=$TQ_LAST_PID
wait_for "[ \"\$(live_workers)\" -ge 1 ]" 30 || fail "no worker started: $(cat "$TQ_TMP/sup.log")"
gone_and_removed "$sup"

check "drain KILLed, its worker running a task, the state directory removed: both stop"
t=$(tq submit --no-start -- sleep 300)
TASKQ_TEST_ORPHAN=$TQ_TMP tq_bg "$TASKQ_BIN" drain --workers 1 2>>"$TQ_TMP/sup.log"
sup=$TQ_LAST_PID
wait_for "[ \"\$(state_of $t)\" = running ] && [ -n \"\$(task_pid $t)\" ]" 30 ||
	fail "task $t did not start: $(cat "$TQ_TMP/sup.log")"
p=$(task_pid "$t")
gone_and_removed "$sup"
_tq_alive "$p" && fail "its task (pid $p) still runs"
true
