#!/usr/bin/env bash
# Crashes: SIGKILL a worker mid-task (its task is recovered as lost and its
# processes killed; the worker is restarted), SIGKILL the supervisor (tasks
# go on and are recorded; a new supervisor adopts the live workers), and a
# simulated reboot (everything killed: nothing stays running).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 2

check "SIGKILL of a worker: its task becomes lost, its process is killed"
t1=$(submit_id -- sleep 1000)
wait_for "[ -n \"\$(task_pid $t1)\" ]" 10
p1=$(task_pid "$t1")
wait_for "[ -n \"\$(running_worker_pid $t1)\" ]" 10
w1=$(running_worker_pid "$t1")
kill -9 "$w1"
wait_state "$t1" failed 20
assert_eq lost "$(outcome_of "$t1")"
assert_contains "$(task_field "$t1" reason)" "pid $w1"
wait_for "! _tq_alive $p1" 5 || fail "task process $p1 outlived its worker"
check "the dead worker is replaced"
wait_for "[ \"\$(live_workers)\" -eq 2 ]" 20 || fail "worker not restarted"

check "SIGKILL of the supervisor: running tasks finish and are recorded"
t2=$(submit_id --shell "sleep 1; echo done > $TQ_TMP/t2.out")
wait_state "$t2" running
wpids=$(worker_pids | sort -n | tr '\n' ' ')
kill -9 "$SERVE_PID"
wait_state "$t2" succeeded 20
assert_eq done "$(cat "$TQ_TMP/t2.out")"
check "workers keep claiming without a supervisor"
t3=$(submit_id -- true)
wait_state "$t3" succeeded 20

check "a new supervisor adopts the live workers instead of starting more"
serve_start 2
assert_eq "$wpids" "$(worker_pids | sort -n | tr '\n' ' ')"
assert_eq 2 "$(live_workers)"
t4=$(submit_id -- true)
wait_state "$t4" succeeded 20

check "reboot: every process killed; running tasks end lost, queued ones run"
t5=$(submit_id -- sleep 1000)
wait_for "[ -n \"\$(task_pid $t5)\" ]" 10
p5=$(task_pid "$t5")
for pid in $(worker_pids); do
	kill -9 "$pid"
done
kill -9 "$SERVE_PID"
kill -9 "$p5"
wait_for "! _tq_alive $SERVE_PID" 5
t6=$(submit_id -- true)
serve_start 2
wait_state "$t5" failed 20
assert_eq lost "$(outcome_of "$t5")"
wait_state "$t6" succeeded 20
assert_eq 0 "$(tq_json status --json -- tasks.running)"

check "a store locked for longer than the lease does not kill a running task"
t7=$(submit_id --shell "sleep 3; echo ok")
wait_for "[ -n \"\$(task_pid $t7)\" ]" 10
# Hold the write lock for 2 leases (the workers' lease is 1s): their renewals
# wait, the lease expires, but the worker is alive, so its task must go on.
"$TQ_PYTHON" -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)  # SQL: the database itself (its write lock held past a lease)
c.execute("BEGIN EXCLUSIVE")
time.sleep(2)
c.execute("ROLLBACK")
' "$TASKQ_HOME/taskq.db"
wait_state "$t7" succeeded 20
assert_eq 1 "$(attempt_count "$t7")"

check "--retry-lost: a task whose worker died runs again"
t8=$(submit_id --retry-lost --backoff 200ms --shell "if [ -e $TQ_TMP/t8.ran ]; then exit 0; fi; touch $TQ_TMP/t8.ran; exec sleep 1000")
wait_for "[ -n \"\$(task_pid $t8)\" ] && [ -e $TQ_TMP/t8.ran ]" 10
wait_for "[ -n \"\$(running_worker_pid $t8)\" ]" 10
kill -9 "$(running_worker_pid "$t8")"
wait_state "$t8" succeeded 30
assert_eq "lost|succeeded" "$(attempts_of "$t8" outcome | paste -sd'|')"
check "without --retry-lost a lost task is not retried (t1 above)"
assert_eq 1 "$(attempt_count "$t1")"

# A worker killed while its posix_spawn child has not exec'd yet: the child
# shares the worker's memory, so it shows the worker's environment, not the
# task's, and becomes the task once its exec completes. Recovery must find it
# by the worker's mark. The workers are adopted ones (not children of the
# supervisor, whose sweep would hide the bug): strace holds the child in its
# execve long enough to kill the worker then.
check "a worker killed while its task's process is still in exec: that process is killed too"
if ! command -v strace >/dev/null; then
	echo "SKIP: no strace (apt-get install strace) to hold a task in its exec"
else
	kill -9 "$SERVE_PID"
	wait_for "! _tq_alive $SERVE_PID" 5
	serve_start 2
	mapfile -t ws < <(worker_pids)
	sargs=()
	for w in "${ws[@]}"; do sargs+=(-p "$w"); done
	tq_bg strace -f -o /dev/null -e trace=execve -e inject=execve:delay_enter=20000000 "${sargs[@]}"
	traced() { grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$1/status" 2>/dev/null; }
	if ! wait_for "traced ${ws[0]} && traced ${ws[1]}" 5; then
		echo "SKIP: strace cannot attach to the workers here (ptrace refused)"
	else
		mark="CRASH_EXEC_MARK=$$"
		t9=$(env "$mark" "$TASKQ_BIN" submit --shell "sleep 300 & sleep 0.2")
		child=""
		spawned() {
			local w c
			for w in "${ws[@]}"; do
				c=$(cat "/proc/$w/task/$w/children" 2>/dev/null) || continue
				[ -n "${c// /}" ] && child=${c%% *} && worker=$w && return 0
			done
			return 1
		}
		wait_for spawned 10 || fail "no worker started task $t9"
		traced "$child" || fail "task $t9's process $child is not held in its exec"
		kill -9 "$worker"
		wait_state "$t9" failed 20
		assert_eq lost "$(outcome_of "$t9")"
		# strace holds a killed tracee until it lets go (it stops at its
		# exit too): detach, then the child must die, never reach its exec.
		_tq_signal TERM "$TQ_LAST_PID"
		wait_for "! _tq_alive $TQ_LAST_PID" 5
		wait_for "! _tq_alive $child" 5 ||
			fail "task $t9's process $child, spawned but not yet exec'd when its worker died, outlived it"
		marked() { grep -lsz -- "^$mark\$" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" || true; }
		wait_for '[ -z "$(marked)" ]' 5 ||
			fail "processes of task $t9 alive: $(marked)"
	fi
fi
