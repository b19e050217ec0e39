#!/usr/bin/env bash
# Whatever lies in HOME/ends/ under a record's name that is not a record
# taskq wrote -- a FIFO, a symlink, a directory, or ends/ itself replaced by
# a symlink -- never hangs a command or the supervisor, and never keeps a
# task from being recovered: kill answers at once, a dead worker's task is
# recovered (lost: there is no end to trust) with the file set aside, and
# the other dead worker's task is recovered in the same pass. (Before: a
# FIFO made `taskq kill` and the supervisor's recovery wait for ever on
# open(2); a symlink was an I/O error that recovery waited on for ever, and
# while it waited no other expired task was recovered.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

ends="$TASKQ_HOME/ends"
serve_start 3
a=$(submit_id -- sleep 300)
b=$(submit_id -- sleep 300)
c=$(submit_id -- sleep 300)
wait_state "$a" running
wait_state "$b" running
wait_state "$c" running
mkdir -p "$ends"

check "a FIFO under a running task's record name: kill answers, the task ends killed"
mkfifo "$ends/$a.1"
run timeout 20 "$TASKQ_BIN" kill "$a"
assert_eq 0 "$TQ_RC" "kill exit status (124: it hung) ($(err))"
assert_contains "$(out)" "$a killed"
wait_state "$a" killed

check "a FIFO and a symlink as the records of two dead workers' tasks: both recovered"
mkfifo "$ends/$b.1"
ln -s /etc/hostname "$ends/$c.1"
pb=$(task_worker_pid "$b")
pc=$(task_worker_pid "$c")
[ -n "$pb" ] && [ -n "$pc" ] || fail "no worker for $b ($pb) or $c ($pc)"
kill -KILL "$pb" "$pc"
wait_for "[ \"\$(state_of $b)\" = failed ] && [ \"\$(state_of $c)\" = failed ]" 30 ||
	fail "not recovered: $b $(state_of "$b"), $c $(state_of "$c"): $(tail -5 "$TQ_TMP/serve.log")"
assert_eq lost "$(outcome_of "$b")" "outcome of $b"
assert_eq lost "$(outcome_of "$c")" "outcome of $c"
[ -p "$ends/$b.1.damaged" ] || fail "the FIFO was not set aside: $(ls -la "$ends")"
[ -L "$ends/$c.1.damaged" ] || fail "the symlink was not set aside: $(ls -la "$ends")"
assert_contains "$(cat "$TQ_TMP/serve.log")" "not trusted"

check "the supervisor still answers: a new task runs"
wait_for "[ \"\$(live_workers)\" -ge 3 ]" 30 || fail "workers not restarted"
d=$(submit_id -- true)
wait_state "$d" succeeded 30

check "ends/ replaced by a symlink: a dead worker's task is recovered all the same"
e=$(submit_id -- sleep 300)
wait_state "$e" running
mv "$ends" "$TQ_TMP/ends.real"
ln -s "$TQ_TMP/ends.real" "$ends"
pe=$(task_worker_pid "$e")
[ -n "$pe" ] || fail "no worker for $e"
kill -KILL "$pe"
wait_for "[ \"\$(state_of $e)\" = failed ]" 30 ||
	fail "task $e is $(state_of "$e"): $(tail -5 "$TQ_TMP/serve.log")"
assert_eq lost "$(outcome_of "$e")" "outcome of $e"
[ -L "$ends" ] || fail "ends/ was followed or replaced"
