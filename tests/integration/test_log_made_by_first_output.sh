#!/usr/bin/env bash
# A task's log file is made by its first output (issue 21): a task that
# printed nothing leaves no logs/ID.log, and `taskq log` and `poll` show an
# empty log for it, not a missing one; a task that printed has its file
# from its first line, and once that file is deleted after the task ended
# log and poll still say it is missing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 1

check "a task that prints nothing: no log file, an empty log"
quiet=$(submit_id -- true)
wait_state "$quiet" succeeded
assert_eq no "$([ -e "$TASKQ_HOME/logs/$quiet.log" ] && echo yes || echo no)" "no log file"
assert_exit 0 tq log "$quiet"
assert_eq "" "$(out)"
assert_eq "" "$(err)"
assert_exit 0 tq poll "$quiet" --json
assert_eq false "$(out | pyjson 'd.get("log_missing", False)')"
assert_eq 0 "$(tq_sql "select output_bytes from attempts where task_id = $quiet")" # SQL: the database itself (what the attempt stored; no command shows it)

check "a task that prints: its file, its lines; deleted after it ended: missing"
loud=$(submit_id -- sh -c 'echo one; echo two >&2')
wait_state "$loud" succeeded
[ -s "$TASKQ_HOME/logs/$loud.log" ] || fail "no log file for task $loud"
assert_exit 0 tq log "$loud"
assert_eq "one
two" "$(out)"
assert_eq 8 "$(tq_sql "select output_bytes from attempts where task_id = $loud")" # SQL: the database itself (what the attempt stored; no command shows it)
rm "$TASKQ_HOME/logs/$loud.log"
assert_exit 1 tq log "$loud"
assert_contains "$(err)" "logs/$loud.log is missing"
assert_exit 0 tq poll "$loud" --json
assert_eq true "$(out | pyjson 'd.get("log_missing", False)')"

