#!/usr/bin/env bash
# test_cancel_remove.sh - taskq cancel and taskq remove: what each does to
# the database and the log, per id; refusals for running tasks (exit 1:
# cancel always, remove when no live worker holds the task) and unknown ids
# (exit 2); every id is parsed before any is touched.
. "$(dirname "$0")/lib.sh"

state() { task_field "$1" state; }

check "with no state directory yet: exit 2, one line saying so, nothing created"
assert_exit 2 tq cancel 1
assert_one_line_error
assert_contains "$(err)" "state directory $TASKQ_HOME does not exist"
assert_exit 2 tq remove 1 2
assert_one_line_error
assert_eq no "$([ -e "$TASKQ_HOME" ] && echo yes || echo no)"

for i in 1 2 3 4 5 6; do tq submit true >/dev/null; done

check "cancel a queued task: state and outcome canceled, reported on stdout"
assert_exit 0 tq cancel 1
assert_eq "1 canceled" "$(out)"
assert_eq "" "$(err)"
assert_eq "canceled|canceled" "$(task_field 1 state outcome)"
assert_eq 1 "$(task_field 1 finished_at | awk '{ print ($1 > 0) }')" "finished_at set"

check "canceling a canceled task is not an error"
assert_exit 0 tq cancel 1
assert_eq "1 already canceled" "$(out)"

check "several ids: each one handled, the worst exit code wins"
assert_exit 2 tq cancel 2 99 3
assert_eq $'2 canceled\n3 canceled' "$(out)"
assert_eq 'taskq: cancel: task 99: no such task' "$(err)"
assert_eq canceled "$(state 2)"
assert_eq canceled "$(state 3)"

check "a malformed id anywhere: nothing is changed"
assert_exit 2 tq cancel 4 x5
assert_one_line_error
assert_contains "$(err)" '"x5": expected a task id'
assert_eq queued "$(state 4)"
assert_exit 2 tq remove 4 0
assert_eq queued "$(state 4)"

# 5 runs, 6 has finished (as a worker would have recorded; 5 with no
# worker alive, which no command makes)
now=$(($(date +%s) * 1000))
ends="update tasks set state='running', started_at=$now, attempt=1 where id=5;
	update tasks set state='succeeded', started_at=$now-10, finished_at=$now,
	exit_code=0, outcome='succeeded', attempt=1 where id=6;"
tq_sql "$ends" # SQL: the database itself (setup: a task running with no live worker, one ended)

check "cancel refuses a running or finished task: exit 1, untouched"
assert_exit 1 tq cancel 5
assert_one_line_error
assert_contains "$(err)" "task 5"
assert_contains "$(err)" "running"
assert_eq running "$(state 5)"
assert_exit 1 tq cancel 6
assert_contains "$(err)" "succeeded"
assert_eq succeeded "$(state 6)"

check "remove deletes the task, its attempts and labels, and its log"
tq submit --label k=v true >/dev/null # 7
mkdir -p "$TASKQ_HOME/logs"
echo "output" >"$TASKQ_HOME/logs/7.log"
tq_sql "insert into attempts(task_id, attempt, started_at) values (7, 1, $now)" # SQL: the database itself (setup: an attempt without running the task)
assert_eq '{"k": "v"}|1' "$(task_field 7 labels attempts.0.attempt)" "its label and attempt, before"
assert_exit 0 tq remove 7
assert_eq "7 removed" "$(out)"
assert_eq 0 "$(task_exists 7)"
assert_eq 0 "$(tq_sql "select count(*) from attempts where task_id = 7")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq 0 "$(tq_sql "select count(*) from labels where task_id = 7")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq no "$([ -e "$TASKQ_HOME/logs/7.log" ] && echo yes || echo no)" "log removed"
assert_exit 2 tq show 7
assert_exit 2 tq remove 7
assert_eq 'taskq: remove: task 7: no such task' "$(err)"

check "remove works on finished and canceled tasks, without a log file too"
assert_exit 0 tq rm 6 1
assert_eq $'6 removed\n1 removed' "$(out)"
assert_eq "0 0" "$(task_exists 1) $(task_exists 6)"

check "remove refuses a running task no live worker holds: exit 1, the task and its log stay"
# (a running task with a live worker is killed, then removed: test_remove_running.sh)
echo "live" >"$TASKQ_HOME/logs/5.log"
assert_exit 1 tq remove 5
assert_one_line_error
assert_contains "$(err)" "task 5"
assert_contains "$(err)" "worker is not alive"
assert_eq running "$(state 5)"
assert_eq live "$(cat "$TASKQ_HOME/logs/5.log")"

check "ids are never reused after a remove"
assert_exit 0 tq submit true
assert_eq 8 "$(out)"

check "cancel and remove need at least one id"
assert_exit 2 tq cancel
assert_one_line_error
assert_exit 2 tq remove
assert_one_line_error
