#!/usr/bin/env bash
# test_warm_close.sh - the store's side of a warm session's process and
# `taskq sessions close` (issue 19), with the fake claude in its
# stream-input mode and the supervisor that holds it:
#   - taskq sessions --json shows the process the supervisor started (pid,
#     start time, node), busy while a turn runs, idle after;
#   - sessions close of an idle process ends it (the command returns once it
#     has), the row shows none, and the next message resumes on a new
#     process;
#   - sessions close during a turn lets the turn finish (its message
#     succeeds), then ends the process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
fake_agent_args claude --key-order real --result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

# sess KEY FIELD: a field of KEY's row in sessions --json ("" for null).
sess() { tq_json sessions --json -- --where key "$1" "$2"; }

serve_start 2

check "sessions --json shows the process: busy during a turn, idle after"
a=$(warm_ask k1 "first [sleep 2]")
wait_state "$a" running
wait_for "[ -n \"\$(turn_pid $a)\" ]" 10 || fail "task $a has no agent pid"
pa=$(turn_pid "$a")
assert_eq "$pa" "$(sess k1 warm_pid)" "the recorded pid"
assert_eq "$(awk '{print $22}' "/proc/$pa/stat")" "$(sess k1 warm_start)" "its start time"
assert_eq "${TASKQ_NODE:-$(hostname)}" "$(sess k1 warm_node)" "its node"
assert_eq "" "$(sess k1 idle_since)" "idle_since during the turn"
wait_state "$a" succeeded
wait_for "[ -n \"\$(sess k1 idle_since)\" ]" 10 || fail "the row never said idle"

check "sessions close ends an idle process; the next message resumes"
assert_exit 0 "$TASKQ_BIN" sessions close k1
_tq_alive "$pa" && fail "sessions close returned with the agent (pid $pa) alive"
serve_log_has "warm session k1: ending its agent (pid $pa): taskq sessions close" ||
	fail "the supervisor's log does not say why pid $pa ended"
assert_eq "" "$(sess k1 warm_pid)" "the row after close"
b=$(warm_ask k1 "second")
wait_state "$b" succeeded
pb=$(turn_pid "$b")
[ "$pb" != "$pa" ] || fail "the message ran on the closed process's pid"
assert_eq "R:second turn2 pid$pb h[first [sleep 2]]" "$(attempt_field "$b" last result)" \
	"the resumed conversation"

check "sessions close during a turn: the turn finishes, then the process ends"
c=$(warm_ask k1 "third [sleep 2]")
wait_state "$c" running
wait_for "[ \"\$(turn_pid $c)\" = $pb ]" 10 || fail "task $c did not run on pid $pb"
assert_exit 0 "$TASKQ_BIN" sessions close k1
# its turn gave the process back before its end was stored
wait_state "$c" succeeded
assert_eq "R:third [sleep 2] turn3 pid$pb h[first [sleep 2] | second]" \
	"$(attempt_field "$c" last result)" "its result"
_tq_alive "$pb" && fail "the agent (pid $pb) outlived sessions close"
assert_eq "" "$(sess k1 warm_pid)" "the row after close"
