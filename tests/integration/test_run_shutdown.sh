#!/usr/bin/env bash
# Shutdown requeues running tasks without spending an attempt; the
# supervisor exits 143 on SIGTERM; drain runs until nothing is left and
# reports by exit status; autostart from submit.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "shutdown --grace: a running task is stopped and requeued"
serve_start 2
t1=$(submit_id -- sleep 1000)
wait_state "$t1" running
assert_exit 0 tq shutdown --grace 500ms
assert_contains "$(out)" "stopped"
rc=0; wait "$SERVE_PID" || rc=$?
assert_eq 143 "$rc" "supervisor exit status after SIGTERM"
assert_eq queued "$(state_of "$t1")"
assert_eq "killed|false" "$(attempts_of "$t1" outcome counted)"
assert_eq 0 "$(live_workers)"
check "shutdown with nothing running"
assert_exit 0 tq shutdown
assert_contains "$(out)" "no supervisor"
tq cancel "$t1" >/dev/null

check "drain: exit 1 when a task it ran failed"
a=$(submit_id -- true)
b=$(submit_id -- false)
assert_exit 1 tq drain --workers 2
assert_eq succeeded "$(state_of "$a")"
assert_eq failed "$(state_of "$b")"
check "drain: exit 0 when all succeeded; it runs what becomes runnable"
c=$(submit_id --shell 'echo one')
d=$(submit_id -- true)
assert_exit 0 tq drain --workers 1
assert_eq succeeded "$(state_of "$c")"
assert_eq succeeded "$(state_of "$d")"
check "drain with nothing to do exits 0 at once"
assert_exit 0 tq drain

check "SIGINT stops a foreground supervisor with 130"
serve_start 1
kill -INT "$SERVE_PID"
rc=0; wait "$SERVE_PID" || rc=$?
assert_eq 130 "$rc"

check "submit starts a supervisor when none runs"
unset TASKQ_AUTOSTART
e=$(submit_id -- true)
wait_for "tq status | grep -q 'supervisor: running'" 10 || fail "no supervisor started"
spid=$(tq status --json | pyjson 'd["supervisor_pid"]')
tq_track "$spid"
wait_state "$e" succeeded
assert_exit 0 tq shutdown --now
check "TASKQ_AUTOSTART=0 and --no-start keep it stopped"
TASKQ_AUTOSTART=0 submit_id -- true >/dev/null
submit_id --no-start -- true >/dev/null
assert_contains "$(tq status)" "not running"
