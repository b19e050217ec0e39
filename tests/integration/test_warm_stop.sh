#!/usr/bin/env bash
# test_warm_stop.sh - warm agents and the supervisor's stops (issue 19),
# with the fake agent WARM_AGENT in its stream-input mode (lib_warm.sh;
# claude, and as warm_stop_gemini, _codex, _opencode the others):
#   - shutdown --now during a turn: the turn is interrupted and its message
#     requeued, the agent ended; no agent process is left once serve has
#     exited; the next supervisor runs the message again on a new process
#     that resumes the session;
#   - a supervisor SIGKILLed while its agent idles (one that stays up
#     without its stdin): the next supervisor ends what it left, found by
#     its marks, and the session's next message resumes on a new process;
#   - a supervisor SIGKILLed during a turn: the worker finishes the turn
#     (it holds the pipes), cannot give the process back, and ends it
#     itself (through its pidfd): no process is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
warm_fake_args --key-order real --result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

serve_start 2

a=$(warm_ask k1 "first")
wait_state "$a" succeeded
pa=$(turn_pid "$a")

check "shutdown --now interrupts a turn, requeues it and ends the agent"
b=$(warm_ask k1 "second [sleep 3]")
wait_state "$b" running
wait_for "[ \"\$(turn_pid $b)\" = $pa ]" 10 || fail "task $b did not run on pid $pa"
"$TASKQ_BIN" shutdown --now >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
assert_eq "" "$(warm_pids)" "warm agent processes after shutdown --now"
assert_eq queued "$(state_of "$b")" "the interrupted message"
assert_contains "$(attempt_field "$b" 1 reason)" "interrupted by shutdown" "its attempt"
serve_start 2
wait_state "$b" succeeded 30
pb=$(turn_pid "$b")
[ "$pb" != "$pa" ] || fail "the message ran again on the ended process's pid"
# the interrupted turn is in the conversation (the CLI keeps it), as here
assert_eq "R:second [sleep 3] turn3 pid$pb h[first | second [sleep 3]]" \
	"$(attempt_field "$b" last result)" "the message run again"

check "a supervisor killed while its agent idles: the next one ends what it left"
warm_fake_args --key-order real --ignore-eof \
	--result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
serve_start 2
c=$(warm_ask k1 "third")
wait_state "$c" succeeded
pc=$(turn_pid "$c")
kill -KILL "$SERVE_PID"
wait_for "! _tq_alive $SERVE_PID" 10 || fail "the supervisor outlived SIGKILL"
# without its stdin's holder the agent stays up (--ignore-eof): left over
_tq_alive "$pc" || fail "the agent (pid $pc) did not outlive its supervisor"
serve_start 2
wait_for "! _tq_alive $pc" 10 || fail "the new supervisor left the old agent (pid $pc)"
serve_log_has "ended 1 warm agent process a previous supervisor left" ||
	fail "the new supervisor's log does not say it: $(cat "$TQ_TMP/serve.log")"
d=$(warm_ask k1 "fourth")
wait_state "$d" succeeded
pd=$(turn_pid "$d")
[ "$pd" != "$pc" ] || fail "the next message ran on the old agent's pid"
assert_eq "R:fourth turn5 pid$pd h[first | second [sleep 3] | second [sleep 3] | third]" \
	"$(attempt_field "$d" last result)" "the next message"

check "a supervisor killed during a turn: its worker finishes it and ends the agent"
warm_fake_args --key-order real --result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
e=$(warm_ask k1 "fifth [sleep 2]")
wait_state "$e" running
wait_for "[ -n \"\$(turn_pid $e)\" ]" 10 || fail "task $e has no agent pid"
pe=$(turn_pid "$e")
kill -KILL "$SERVE_PID"
wait_state "$e" succeeded 20
assert_eq "R:fifth [sleep 2] turn6 pid$pe h[first | second [sleep 3] | second [sleep 3] | third | fourth]" \
	"$(attempt_field "$e" last result)" "the turn its supervisor did not see end"
wait_for "! _tq_alive $pe" 10 || fail "the agent (pid $pe) outlived its turn without a supervisor"
