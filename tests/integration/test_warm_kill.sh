#!/usr/bin/env bash
# test_warm_kill.sh - stopping a warm message's turn (issue 19), with the
# fake agent WARM_AGENT in its stream-input mode (lib_warm.sh; claude, and
# as warm_kill_gemini, _codex, _opencode the others):
#   - taskq kill writes the CLI's interrupt (claude's control message, ACP's
#     session/cancel, codex's turn/interrupt): the turn ends at once with
#     its result (error_during_execution, cancelled, interrupted), the
#     attempt is killed, and the process is kept: the next message runs on
#     it;
#   - an agent that does not answer the interrupt within the kill grace is
#     ended (TERM to its group), the attempt killed with the signal, and
#     the next message resumes on a new process;
#   - --timeout and --stall-timeout go the same way as a kill: the turn is
#     interrupted, the attempt timed out / stalled, the process kept.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
warm_fake_args --key-order real --result 'R:{prompt} turn{turns} pid{pid}'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

serve_start 2

# runtime_ms ID: how long task ID's last attempt ran.
runtime_ms() {
	echo $(($(attempt_field "$1" last ended_at) - $(attempt_field "$1" last started_at)))
}

a=$(warm_ask k1 "first")
wait_state "$a" succeeded
pa=$(turn_pid "$a")

check "kill interrupts the turn and keeps the process"
b=$(warm_ask k1 --kill-grace 20s "second [hang]")
wait_state "$b" running
wait_for "[ \"\$(turn_pid $b)\" = $pa ]" 10 || fail "task $b did not run on pid $pa"
"$TASKQ_BIN" kill "$b" >/dev/null
wait_state "$b" killed
assert_eq "killed by taskq kill (its turn interrupted, its agent kept)" \
	"$(attempt_field "$b" last reason)" "the killed attempt's reason"
assert_eq "$(warm_interrupted)" "$(attempt_field "$b" last subtype)" "the turn's result"
[ "$(runtime_ms "$b")" -lt 15000 ] || fail "the interrupt took the kill grace"
_tq_alive "$pa" || fail "the interrupt ended the process"
c=$(warm_ask k1 "third")
wait_state "$c" succeeded
assert_eq "R:third turn3 pid$pa" "$(attempt_field "$c" last result)" "the next message"

check "--timeout interrupts the turn and keeps the process"
d=$(warm_ask k1 --timeout 1s "fourth [hang]")
wait_state "$d" timed_out
assert_eq "timed out after 1.0s (its turn interrupted, its agent kept)" \
	"$(attempt_field "$d" last reason)" "the timed out attempt's reason"
_tq_alive "$pa" || fail "the timeout ended the process"

check "--stall-timeout interrupts the turn and keeps the process"
s=$(warm_ask k1 --stall-timeout 1s --retries 0 "fifth [hang]")
wait_state "$s" timed_out
assert_eq stalled "$(attempt_field "$s" last outcome)" "the stalled attempt's outcome"
assert_contains "$(attempt_field "$s" last reason)" "its turn interrupted, its agent kept" \
	"the stalled attempt's reason"
_tq_alive "$pa" || fail "the stall ended the process"
e=$(warm_ask k1 "sixth")
wait_state "$e" succeeded
assert_eq "$pa" "$(turn_pid "$e")" "the agent after the timeout and the stall"

check "an agent deaf to the interrupt is ended after the kill grace"
f=$(warm_ask k1 --kill-grace 1s "seventh [deaf]")
wait_state "$f" running
wait_for "[ \"\$(turn_pid $f)\" = $pa ]" 10 || fail "task $f did not run on pid $pa"
"$TASKQ_BIN" kill "$f" >/dev/null
wait_state "$f" killed
assert_contains "$(attempt_field "$f" last reason)" "killed by taskq kill" "its reason"
assert_contains "$(attempt_field "$f" last reason)" "warm agent (pid $pa) ended in the turn" \
	"its reason"
wait_for "! _tq_alive $pa" 10 || fail "the deaf agent (pid $pa) was not ended"
serve_log_has "ending its agent (pid $pa): its turn asked for it" ||
	fail "the supervisor's log does not say why it ended pid $pa"
g=$(warm_ask k1 "eighth")
wait_state "$g" succeeded
pg=$(turn_pid "$g")
[ "$pg" != "$pa" ] || fail "the next message ran on the ended process's pid"
assert_contains "$(attempt_field "$g" last result)" "R:eighth" "the next message"
