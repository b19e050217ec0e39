#!/usr/bin/env bash
# taskq remove ID of a running task: its worker kills the task's process
# group (TERM, then KILL after its kill grace), records the end, and then
# the task is deleted with its attempts and log. A queued task is simply
# removed (its dependents canceled). A running task whose worker is dead is
# refused (test_cancel_remove.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 1

check "a running task and the process it started are killed, then it is removed"
t=$(submit_id --kill-grace 1s --shell "sleep 300 & echo \$! > '$TQ_TMP/child'; echo \$\$ > '$TQ_TMP/main'; echo started; wait")
wait_state "$t" running
wait_for "[ -s '$TQ_TMP/child' ] && [ -s '$TQ_TMP/main' ]" 10
main=$(cat "$TQ_TMP/main")
child=$(cat "$TQ_TMP/child")
wait_for "[ -e '$TASKQ_HOME/logs/$t.log' ]" 10
assert_exit 0 tq remove "$t"
assert_eq "$t removed" "$(out)"
assert_eq "" "$(err)"
assert_eq 0 "$(task_exists "$t")"
assert_eq 0 "$(tq_sql "select count(*) from attempts where task_id = $t")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq no "$([ -e "$TASKQ_HOME/logs/$t.log" ] && echo yes || echo no)" "log removed"
wait_for "! _tq_alive $main && ! _tq_alive $child" 10 || fail "the task's processes survived"
grep -q "task $t attempt 1: killed" "$TQ_TMP/serve.log" || fail "the worker did not record a kill"

check "a task that ignores TERM is killed at its kill grace"
t=$(submit_id --kill-grace 1s --shell "trap '' TERM; echo \$\$ > '$TQ_TMP/stubborn'; while :; do sleep 0.1; done")
wait_state "$t" running
wait_for "[ -s '$TQ_TMP/stubborn' ]" 10
pid=$(cat "$TQ_TMP/stubborn")
start=$(_tq_now_ms)
assert_exit 0 tq remove "$t"
assert_eq "$t removed" "$(out)"
[ $(($(_tq_now_ms) - start)) -ge 900 ] || fail "removed before the kill grace ran out"
wait_for "! _tq_alive $pid" 10 || fail "the stubborn task survived"
assert_eq 0 "$(task_exists "$t")"

check "a queued task is removed at once; a task waiting on it is canceled"
tq pause held >/dev/null
q=$(submit_id --group held -- true)
dep=$(submit_id --after "$q" -- true)
assert_exit 0 tq remove "$q"
assert_eq "$q removed" "$(out)"
assert_eq 0 "$(task_exists "$q")"
wait_state "$dep" canceled 10

check "several ids, running and finished: each removed"
r=$(submit_id --kill-grace 1s -- sleep 300)
wait_state "$r" running
f=$(submit_id -- true)
tq pause sleep >/dev/null  # nothing else of it starts meanwhile
assert_exit 0 tq remove "$r" "$dep"
assert_eq "$r removed"$'\n'"$dep removed" "$(out)"
wait_state "$f" succeeded
assert_exit 0 tq rm "$f"
assert_eq "0 0 0" "$(task_exists "$r") $(task_exists "$dep") $(task_exists "$f")"
assert_exit 2 tq remove "$r"
assert_eq "taskq: remove: task $r: no such task" "$(err)"
