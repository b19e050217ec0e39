#!/usr/bin/env bash
# A supervisor whose state directory is removed or replaced notices it,
# stops its workers and their tasks, says so in its log and exits; and a
# supervisor that exits removes only the files it made itself, never those
# of the supervisor that started since in a new directory of the same path
# (issue 16 item 13).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

supervisor_pid() { cat "$TASKQ_HOME/serve.pid" 2>/dev/null; }

check "rm -rf of the state directory, then a submit: exactly one supervisor, status right"
t1=$(TASKQ_AUTOSTART=1 tq submit -- sleep 30)
old=$(supervisor_pid)
[ -n "$old" ] || fail "no supervisor was started"
tq_track "$old"
wait_for "[ \"\$(state_of $t1)\" = running ] && [ -n \"\$(task_pid $t1)\" ]" 20 ||
	fail "task $t1 did not start"
p1=$(task_pid "$t1")
oldworkers=$(worker_pids)
rm -rf "$TASKQ_HOME"
t2=$(TASKQ_AUTOSTART=1 tq submit -- true)
new=$(supervisor_pid)
tq_track "$new"
[ -n "$new" ] && [ "$new" != "$old" ] || fail "no new supervisor (old $old, new $new)"
wait_for "! _tq_alive $old" 15 || fail "the old supervisor $old still runs beside the new one $new"
_tq_alive "$new" || fail "the new supervisor $new is gone"
wait_for "! _tq_alive $p1" 15 || fail "the old supervisor's task (sleep 30, pid $p1) still runs"
for w in $oldworkers; do
	wait_for "! _tq_alive $w" 15 || fail "the old supervisor's worker $w still runs"
done
wait_state "$t2" succeeded 20
assert_exit 0 tq status --json
assert_eq "True $new" "$(pyjson 'str(d["supervisor_running"]) + " " + str(d["supervisor_pid"])' <"$TQ_TMP/out")"
assert_eq "1" "$(pyjson 'd["tasks"]["succeeded"]' <"$TQ_TMP/out")"
[ -S "$TASKQ_HOME/submit.sock" ] || fail "the new supervisor's submit.sock is gone"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $new" 20

check "SIGTERM to the old supervisor leaves the new one's serve.pid and submit.sock"
rm -rf "$TASKQ_HOME"
serve_start 1
old=$SERVE_PID
oldlog=$TQ_TMP/serve.log
rm -rf "$TASKQ_HOME"
tq_bg "$TASKQ_BIN" serve --foreground --workers 1 --lease 1s 2>>"$TQ_TMP/serve2.log"
new=$TQ_LAST_PID
wait_for "[ \"\$(live_workers)\" -ge 1 ] && [ -S $TASKQ_HOME/submit.sock ]" 20 ||
	fail "second supervisor did not start: $(cat "$TQ_TMP/serve2.log")"
# The old one may have noticed already (it looks every second): either
# way, its end must not touch the new one's files.
kill -TERM "$old" 2>/dev/null || true
wait_for "! _tq_alive $old" 20 || fail "the old supervisor did not stop"
[ -e "$TASKQ_HOME/serve.pid" ] || fail "the old supervisor removed the new one's serve.pid"
[ -S "$TASKQ_HOME/submit.sock" ] || fail "the old supervisor removed the new one's submit.sock"
assert_exit 0 tq status --json
assert_eq "True $new" "$(pyjson 'str(d["supervisor_running"]) + " " + str(d["supervisor_pid"])' <"$TQ_TMP/out")"
# submits still reach the new supervisor through its socket
t3=$(TASKQ_SUBMIT_VIA=supervisor tq submit -- true)
wait_state "$t3" succeeded 20
_tq_signal TERM "$new"
wait_for "! _tq_alive $new" 20

check "a supervisor whose state directory was removed says so and exits"
rm -rf "$TASKQ_HOME"
: >"$oldlog"
serve_start 1
old=$SERVE_PID
t4=$(submit_id -- sleep 300)
wait_for "[ -n \"\$(task_pid $t4)\" ]" 20
p4=$(task_pid "$t4")
rm -rf "$TASKQ_HOME"
wait_for "! _tq_alive $old" 20 || fail "supervisor $old did not notice its state directory was removed"
wait_for "! _tq_alive $p4" 20 || fail "its task (pid $p4) still runs"
assert_contains "$(cat "$oldlog")" "state directory $TASKQ_HOME was removed: stopping the workers and their tasks, and exiting"

check "a state directory replaced by another (renamed aside, made again): the same, and its own files go"
rm -rf "$TASKQ_HOME"
: >"$oldlog"
serve_start 1
old=$SERVE_PID
mv "$TASKQ_HOME" "$TQ_TMP/aside"
mkdir -m 700 "$TASKQ_HOME"
wait_for "! _tq_alive $old" 20 || fail "supervisor $old did not notice its state directory was replaced"
assert_contains "$(cat "$oldlog")" "state directory $TASKQ_HOME was replaced by another directory"
# its own files in the directory it held (now aside) are removed, the new
# directory is left as it was
[ ! -e "$TQ_TMP/aside/serve.pid" ] || fail "it left its serve.pid"
[ ! -e "$TQ_TMP/aside/submit.sock" ] || fail "it left its submit.sock"
assert_eq "" "$(ls -A "$TASKQ_HOME")" "the new directory is untouched"
