#!/usr/bin/env bash
# Tasks run under a supervisor: exit statuses, spawn failures, env scrub,
# cwd, output captured, process titles, one supervisor per state directory.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

mkdir -p "$TQ_TMP/gone"
check "a cwd that is gone before the task runs is a spawn failure"
gone=$(submit_id --cwd "$TQ_TMP/gone" -- true)
rmdir "$TQ_TMP/gone"
check "a command that does not exist is a spawn failure"
missing=$(submit_id -- no-such-command-xyz)
# its path not UTF-8: the reason quotes it with U+FFFD for the byte (the
# store keeps reasons as text; PostgreSQL's refused the end, and the task
# stayed running)
rawpath=$(submit_id -- $'/no-such-dir/raw\xffcmd')
check "exit statuses and output"
ok=$(submit_id -- true)
three=$(submit_id --shell 'echo out; echo err >&2; exit 3')
check "agent-session variables do not reach the task; the user's do"
envt=$(CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=x AI_AGENT=y FOO=bar submit_id --shell "env > $TQ_TMP/env.txt")

serve_start 2
for id in "$gone" "$missing" "$rawpath" "$ok" "$three" "$envt"; do
	wait_for "[ -n \"\$(task_field $id finished_at)\" ]" 20 ||
		fail "task $id did not finish"
done
assert_eq failed "$(state_of "$gone")"
assert_eq spawn_failed "$(outcome_of "$gone")"
assert_contains "$(task_field "$gone" reason)" "chdir"
assert_eq spawn_failed "$(outcome_of "$missing")"
assert_contains "$(task_field "$missing" reason)" 'no-such-command-xyz'
assert_eq spawn_failed "$(outcome_of "$rawpath")"
assert_contains "$(task_field "$rawpath" reason)" $'/no-such-dir/raw\xef\xbf\xbdcmd'
assert_eq succeeded "$(state_of "$ok")"
assert_eq 0 "$(task_field "$ok" exit_code)"
assert_eq failed "$(state_of "$three")"
assert_eq 3 "$(task_field "$three" exit_code)"
assert_eq "$(printf 'out\nerr')" "$(log_bytes "$three" | sort -r)"
assert_eq succeeded "$(state_of "$envt")"
assert_contains "$(cat "$TQ_TMP/env.txt")" "FOO=bar"
assert_not_contains "$(cat "$TQ_TMP/env.txt")" "CLAUDECODE"
assert_not_contains "$(cat "$TQ_TMP/env.txt")" "CLAUDE_CODE_SESSION_ID"
assert_not_contains "$(cat "$TQ_TMP/env.txt")" "AI_AGENT"

check "each attempt records pid, process group, start time and times"
assert_eq 1 "$(attempt_count "$three")" "attempts"
IFS='|' read -r pid pgid pstart started ended outcome < <(attempt_field "$three" 1 pid pgid proc_start started_at ended_at outcome)
row="$((pid > 0))|$((pgid == pid))|$((pstart > 0))|$((ended >= started))|$outcome"
assert_eq "1|1|1|1|failed" "$row"

check "process titles name the worker and its task"
sleeper=$(submit_id --name napper -- sleep 30)
wait_state "$sleeper" running
wait_for "[ -n \"\$(running_worker_pid $sleeper)\" ]" 10
wpid=$(running_worker_pid "$sleeper")
wait_for "tr '\\0' ' ' < /proc/$wpid/cmdline | grep -q 'worker [0-9]*: task $sleeper napper'" 10 ||
	fail "title: $(tr '\0' ' ' < /proc/$wpid/cmdline)"
assert_exit 0 tq kill "$sleeper"

check "a second supervisor says one runs and exits 0"
assert_exit 0 tq serve --foreground
assert_contains "$(err)" "already running (pid $SERVE_PID)"

check "status reports the supervisor and its workers"
assert_exit 0 tq status --json
assert_eq "True|$SERVE_PID|2" "$(out | pyjson '"|".join(str(x) for x in (d["supervisor_running"], d["supervisor_pid"], len(d["worker_list"])))')"
assert_exit 0 tq status
assert_contains "$(out)" "supervisor: running, pid $SERVE_PID"
