#!/usr/bin/env bash
# Timeouts and `taskq kill`: TERM to the group, KILL after the grace when
# TERM is ignored, decided by the real exit; and nothing the task started
# (a setsid'd, double-forked daemon) outlives it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

FIX=${TASKQ_FIXTURES:?}
serve_start 2

check "a timed-out task and the daemon it left are gone"
t1=$(submit_id --timeout 1s --shell "$FIX/daemonize.sh > $TQ_TMP/d1.pid; exec sleep 1000")
wait_state "$t1" timed_out 20
assert_eq timed_out "$(outcome_of "$t1")"
assert_contains "$(task_field "$t1" reason)" "timed out after 1.0s"
d1=$(cat "$TQ_TMP/d1.pid")
[ -n "$d1" ] || fail "no daemon pid"
wait_for "! _tq_alive $d1" 5 || fail "daemon $d1 outlived its task"
assert_eq 15 "$(task_field "$t1" signal)"

check "kill: TERM ignored, so KILL after the kill grace; the daemon is gone too"
t2=$(submit_id --kill-grace 1s --shell "$FIX/daemonize.sh > $TQ_TMP/d2.pid; trap '' TERM; while :; do sleep 1; done")
wait_state "$t2" running
wait_for "[ -s $TQ_TMP/d2.pid ]" 10
p2=$(task_pid "$t2")
assert_exit 0 tq kill "$t2"
assert_contains "$(out)" "$t2 killed"
assert_eq killed "$(state_of "$t2")"
assert_eq 9 "$(task_field "$t2" signal)"
assert_contains "$(task_field "$t2" reason)" "killed by taskq kill"
wait_for "! _tq_alive $p2" 5 || fail "task process $p2 survived"
wait_for "! _tq_alive $(cat "$TQ_TMP/d2.pid")" 5 || fail "daemon survived kill"

check "kill --signal INT reaches the task"
t3=$(submit_id --shell "trap 'exit 42' INT; while :; do sleep 0.1; done")
wait_state "$t3" running
wait_for "[ -n \"\$(task_pid $t3)\" ]" 10
assert_exit 0 tq kill --signal INT "$t3"
assert_eq killed "$(state_of "$t3")"
assert_eq 42 "$(task_field "$t3" exit_code)"

check "kill of a task that has not started cancels it"
b1=$(submit_id -- sleep 1000)
b2=$(submit_id -- sleep 1000)
wait_state "$b1" running
wait_state "$b2" running
t4=$(submit_id -- true)
assert_eq queued "$(state_of "$t4")"
assert_exit 0 tq kill "$t4"
assert_contains "$(out)" "canceled"
assert_eq canceled "$(state_of "$t4")"
assert_exit 0 tq kill "$b1" "$b2"
assert_eq killed "$(state_of "$b1")"

check "a bad signal name is a usage error"
assert_exit 2 tq kill --signal BOGUS 1
assert_one_line_error

check "kill of a finished task says so"
assert_exit 1 tq kill "$t1"
assert_contains "$(err)" "already ended"
