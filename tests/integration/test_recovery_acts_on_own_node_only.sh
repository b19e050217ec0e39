#!/usr/bin/env bash
# Two nodes on one store: TASKQ_NODE=h2, then h1, on one state directory and
# its SQLite file, as issue 20's nodes share one database. A supervisor
# recovers another node's expired lease (the attempt is lost) but never
# signals that attempt's processes: their pids are the other node's. Its
# own node's leftovers it kills, as before.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "h2's supervisor and worker SIGKILLed under a running task: h1 records it lost and leaves its process"
export TASKQ_NODE=h2
serve_start 1
t1=$(submit_id -- sleep 1000)
wait_for "[ -n \"\$(task_pid $t1)\" ]" 10
p1=$(task_pid "$t1")
wait_for "[ -n \"\$(running_worker_pid $t1)\" ]" 10
w1=$(running_worker_pid "$t1")
assert_eq h2 "$("$TASKQ_BIN" status --json | json_get --in worker_list --each node)"
kill -9 "$SERVE_PID" "$w1"
wait_for "! _tq_alive $SERVE_PID && ! _tq_alive $w1" 5 || fail "h2 did not die"
_tq_alive "$p1" || fail "task process $p1 died with its worker"
export TASKQ_NODE=h1
serve_start 1
wait_state "$t1" failed 20
assert_eq lost "$(outcome_of "$t1")"
assert_contains "$(task_field "$t1" reason)" "node h2"
# recovery has run (the task is lost): had it signalled, p1 would be gone
_tq_alive "$p1" || fail "h1 killed h2's task process $p1"
kill -9 -- "-$p1" 2>/dev/null || kill -9 "$p1"
wait_for "! _tq_alive $p1" 5

check "the same crash on h1: h1 started again kills its own task's process"
t2=$(submit_id -- sleep 1000)
wait_for "[ -n \"\$(task_pid $t2)\" ]" 10
p2=$(task_pid "$t2")
wait_for "[ -n \"\$(running_worker_pid $t2)\" ]" 10
w2=$(running_worker_pid "$t2")
kill -9 "$SERVE_PID" "$w2"
wait_for "! _tq_alive $SERVE_PID && ! _tq_alive $w2" 5 || fail "h1 did not die"
serve_start 1
wait_state "$t2" failed 20
assert_eq lost "$(outcome_of "$t2")"
wait_for "! _tq_alive $p2" 5 || fail "h1 left its own task process $p2"

check "a TASKQ_NODE that is no node name: serve refuses to start, saying why"
assert_exit 1 env TASKQ_HOME="$TQ_TMP/other" TASKQ_NODE="no spaces" "$TASKQ_BIN" serve \
	--foreground --workers 1
assert_contains "$(err)" 'TASKQ_NODE "no spaces": expected a node name'
