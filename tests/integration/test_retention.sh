#!/usr/bin/env bash
# Retention and taskq clear. The supervisor removes finished tasks older
# than its retention (default 7d; serve/drain --retention DUR, 0 = forever,
# remembered in the database for later supervisors) with their attempts,
# labels, cursors and logs, and keeps the rest: newer finished tasks and
# unfinished ones however old. Tasks are made "old" by moving finished_at
# back with the sqlite3 shell; `taskq drain` runs the housekeeping at start
# and exits, so no test waits on the one-minute timer.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

day=$((24 * 3600 * 1000))
age() { # age ID DAYS: it finished DAYS days ago
	tq_sql "update tasks set finished_at = finished_at - $2 * $day where id = $1" # SQL: the database itself (setup: age a timestamp)
}
exists() { task_exists "$1"; }
has_log() { [ -e "$TASKQ_HOME/logs/$1.log" ] && echo yes || echo no; }
drain() { tq drain --workers 1 "$@" 2>>"$TQ_TMP/serve.log"; }

t1=$(submit_id --label k=v -- echo one)
t2=$(submit_id -- sh -c 'echo two; exit 2')
t3=$(submit_id -- echo three)
drain || true
tq poll "$t1" >/dev/null   # a cursor row
held=$(submit_id --group held -- echo held)
tq pause held >/dev/null
tq_sql "update tasks set created_at = created_at - 30 * $day where id = $held" # SQL: the database itself (setup: age a timestamp)
age "$t1" 10
age "$t2" 8
age "$t3" 6

check "setup: logs, attempts, labels and a cursor exist"
assert_eq "yes yes yes" "$(has_log "$t1") $(has_log "$t2") $(has_log "$t3")"
assert_exit 0 tq poll "$t1" --json
assert_eq "[]|1" "$(out | json_get lines total)" "the default reader's cursor, past the task's one line"
assert_eq '{"k": "v"}' "$(task_field "$t1" labels)"
assert_eq "1 1" "$(attempt_count "$t1") $(attempt_count "$t2")" "attempts"

check "status shows the default retention before any supervisor stored one"
assert_exit 0 tq status
assert_contains "$(out)" "retention: finished tasks are removed after 7d"

check "a supervisor with the default (7d) removes what finished 8 and 10 days ago at start"
serve_start 1
wait_for "[ \"\$(exists $t1)\$(exists $t2)\" = 00 ]" 20 || fail "old tasks were not removed"
assert_eq "no no" "$(has_log "$t1") $(has_log "$t2")"
assert_eq no "$([ -e "$TASKQ_HOME/logs/$t1.idx" ] && echo yes || echo no)" "index removed"
assert_eq 0 "$(tq_sql "select count(*) from attempts where task_id in ($t1, $t2)")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq 0 "$(tq_sql "select count(*) from labels where task_id = $t1")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq 0 "$(tq_sql "select count(*) from cursors where task_id = $t1")" # SQL: the database itself (no row of a removed task is left; no command reads one)
check "and keeps the rest: a newer finished task, an old unfinished one"
assert_eq 1 "$(exists "$t3")"
assert_eq yes "$(has_log "$t3")"
assert_eq 1 "$(exists "$held")"
assert_eq queued "$(state_of "$held")"
wait_for "grep -q 'retention: removed 2 finished tasks older than 7d' '$TQ_TMP/serve.log'" 10 ||
	fail "no retention line in the log: $(cat "$TQ_TMP/serve.log")"
tq shutdown >/dev/null

check "--retention 0 keeps everything, and is remembered by the next supervisor"
age "$t3" 400
drain --retention 0
assert_eq 0 "$(tq_json status --json -- retention_ms)" "the retention stored"
assert_eq 1 "$(exists "$t3")"
assert_exit 0 tq status
assert_contains "$(out)" "retention: finished tasks are kept forever"
assert_exit 0 tq status --json
assert_eq 0 "$(out | pyjson 'd["retention_ms"]')"
drain   # no --retention: the stored 0 holds
assert_eq 1 "$(exists "$t3")"

check "--retention 1d: the old task goes, the setting is stored"
drain --retention 1d
assert_eq 0 "$(exists "$t3")"
assert_eq no "$(has_log "$t3")"
assert_eq $day "$(tq_json status --json -- retention_ms)" "the retention stored"
assert_exit 0 tq status
assert_contains "$(out)" "retention: finished tasks are removed after 1d"
assert_exit 2 tq serve --retention forever
assert_contains "$(err)" "--retention"

# ---------------------------------------------------------------------------
# taskq clear

check "clear: usage errors"
assert_exit 2 tq clear
assert_one_line_error
assert_contains "$(err)" "nothing to clear"
assert_exit 2 tq clear --older-than 5x
assert_contains "$(err)" '--older-than "5x"'
assert_exit 2 tq clear --finished 1
assert_one_line_error
assert_exit 2 tq clear 1x
assert_one_line_error

a=$(submit_id -- echo a)
b=$(submit_id -- echo b)
c=$(submit_id --label x=y -- echo c)
d=$(submit_id -- echo d)
drain || true
age "$a" 3
age "$b" 2

check "clear ID: a finished task and its log; an unfinished one is refused"
assert_exit 0 tq clear "$d"
assert_eq "$d removed" "$(out)"
assert_eq 0 "$(exists "$d")"
assert_eq no "$(has_log "$d")"
assert_exit 1 tq clear "$held"
assert_one_line_error
assert_contains "$(err)" "task $held is queued, not finished"
assert_eq 1 "$(exists "$held")"
assert_exit 2 tq clear 9999
assert_eq "taskq: clear: task 9999: no such task" "$(err)"

check "clear --older-than: only what ended before then"
assert_exit 0 tq clear --older-than 60h
assert_eq "1 task removed" "$(out)"
assert_eq "0 1" "$(exists "$a") $(exists "$b")"
assert_exit 0 tq clear --older-than 1d
assert_eq "1 task removed" "$(out)"
assert_eq "0 no" "$(exists "$b") $(has_log "$b")"

check "clear --finished: every finished task, never an unfinished one"
assert_eq '{"x": "y"}|1' "$(task_field "$c" labels attempts.0.attempt)" "its label and attempt, before"
assert_exit 0 tq clear --finished
assert_eq "1 task removed" "$(out)"
assert_eq 0 "$(exists "$c")"
assert_eq 0 "$(tq_sql "select count(*) from labels where task_id = $c")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq 0 "$(tq_sql "select count(*) from attempts where task_id = $c")" # SQL: the database itself (no row of a removed task is left; no command reads one)
assert_eq 1 "$(exists "$held")"
assert_exit 0 tq clear --finished
assert_eq "0 tasks removed" "$(out)"
