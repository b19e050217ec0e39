#!/usr/bin/env bash
# test_submit_socket_not_followed.sh - a submit hands its task only to a
# socket file at HOME/submit.sock, never through a symlink there: connect(2)
# follows one, and a symlink to another state directory's socket took the
# task to that supervisor, which stored it in its own queue and answered an
# id that meant nothing in ours (the supervisor of HOME itself refuses to
# listen there: "exists and is not a socket"). With anything but a socket
# there, the submit stores its task itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

OTHER="$TQ_TMP/other"
SOCK="$TASKQ_HOME/submit.sock"

count_in() { TASKQ_HOME=$1 task_count --name "$2"; }

# another state directory with its supervisor listening
assert_exit 0 env TASKQ_HOME="$OTHER" "$TASKQ_BIN" submit --no-start --name seed -- true
TASKQ_HOME="$OTHER" tq_bg "$TASKQ_BIN" serve --foreground --workers 1 2>>"$TQ_TMP/other.log"
wait_for "[ -S '$OTHER/submit.sock' ]" 20 || fail "the other supervisor does not listen"

check "a symlink at submit.sock to another supervisor's socket: the task is stored here"
assert_exit 0 tq submit --no-start --name seed -- true
ln -s "$OTHER/submit.sock" "$SOCK"
serve_start 1
assert_exit 0 tq submit --name via-link -- true
id=$(out)
assert_eq 1 "$(count_in "$TASKQ_HOME" via-link)" "stored in our queue"
assert_eq 0 "$(count_in "$OTHER" via-link)" "stored in the other queue"
assert_eq via-link "$(task_field "$id" name)" "the id printed"
wait_state "$id" succeeded
assert_exit 1 env TASKQ_SUBMIT_VIA=supervisor "$TASKQ_BIN" submit --name strict -- true
assert_one_line_error
assert_contains "$(err)" "submit.sock is not a socket"
assert_eq 0 "$(count_in "$OTHER" strict)"

check "a regular file at submit.sock: the task is stored directly"
rm -f "$SOCK"
: >"$SOCK"
assert_exit 0 tq submit --name via-file -- true
id=$(out)
assert_eq 1 "$(count_in "$TASKQ_HOME" via-file)"
wait_state "$id" succeeded
