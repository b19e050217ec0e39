#!/usr/bin/env bash
# test_warm_limits.sh - how long and how many warm agents a supervisor
# keeps (issue 19), with the fake agent WARM_AGENT in its stream-input mode
# (lib_warm.sh; claude, and as warm_limits_gemini, _codex, _opencode the
# others):
#   - past serve --max-warm N live processes, the least recently used idle
#     one is ended, as a group (what it started in a session of its own
#     goes too); its session's next message starts a new process that
#     resumes its conversation, and ends the one now least recently used;
#   - a session's idle timeout (ask --idle-timeout) ends its process once no
#     message has come for that long; the next message resumes on a new one;
#     a message in time keeps it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
warm_fake_args --key-order real --grandchild-pid-file "$TQ_TMP/grandchild" \
	--result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

serve_start 2 --max-warm 4

check "past --max-warm 4, the least recently used idle agent is ended"
declare -A pid gc
for k in k1 k2 k3 k4; do
	rm -f "$TQ_TMP/grandchild"
	id=$(warm_ask "$k" "hello $k [grandchild]")
	wait_state "$id" succeeded
	pid[$k]=$(turn_pid "$id")
	gc[$k]=$(cat "$TQ_TMP/grandchild")
done
for k in k1 k2 k3 k4; do
	_tq_alive "${pid[$k]}" || fail "session $k's agent (pid ${pid[$k]}) is gone before the limit"
done
id=$(warm_ask k5 "hello k5")
wait_state "$id" succeeded
pid[k5]=$(turn_pid "$id")
wait_for "! _tq_alive ${pid[k1]}" 10 || fail "k1's agent, the least recently used, was not ended"
serve_log_has "warm session k1: ending its agent (pid ${pid[k1]}): --max-warm" ||
	fail "the supervisor's log does not say why k1's agent ended"
for k in k2 k3 k4 k5; do
	_tq_alive "${pid[$k]}" || fail "session $k's agent (pid ${pid[$k]}) was ended"
done
# what k1's turn started in a session of its own (a tool's grandchild)
# went with it; the others' stay
wait_for "! _tq_alive ${gc[k1]}" 10 || fail "k1's agent's grandchild (pid ${gc[k1]}) outlived it"
for k in k2 k3 k4; do
	_tq_alive "${gc[$k]}" || fail "session $k's grandchild (pid ${gc[$k]}) was killed"
done

check "the ended session's next message resumes on a new process; k2 is the LRU now"
id=$(warm_ask k1 "again k1")
wait_state "$id" succeeded
p1=$(turn_pid "$id")
[ "$p1" != "${pid[k1]}" ] || fail "k1's message ran on the ended process's pid"
assert_eq "R:again k1 turn2 pid$p1 h[hello k1 [grandchild]]" "$(attempt_field "$id" last result)" \
	"k1's resumed conversation"
wait_for "! _tq_alive ${pid[k2]}" 10 || fail "k2's agent, now the least recently used, was not ended"
for k in k3 k4 k5; do
	_tq_alive "${pid[$k]}" || fail "session $k's agent (pid ${pid[$k]}) was ended"
done
assert_eq 4 "$(warm_pids | xargs -r ps -o pid= -o args= -p | grep -c -- "$(warm_mode)")" \
	"warm agents alive"

check "the idle timeout ends a session's process; the next message resumes"
"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
serve_start 2 --max-warm 1
id=$(warm_ask idle --idle-timeout 3s "one")
wait_state "$id" succeeded
pi=$(turn_pid "$id")
# a message within the timeout keeps the process (and starts the clock again)
id=$(warm_ask idle --idle-timeout 3s "two")
wait_state "$id" succeeded
assert_eq "$pi" "$(turn_pid "$id")" "the agent of a message in time"
t0=$(attempt_field "$id" last ended_at)
wait_for "! _tq_alive $pi" 15 || fail "the idle agent (pid $pi) was not ended"
# the turn ended (and the clock started) a little before the end was stored
[ $(($(_tq_now_ms) - t0)) -ge 2500 ] || fail "the agent was ended before its idle timeout"
serve_log_has "warm session idle: ending its agent (pid $pi): idle timeout" ||
	fail "the supervisor's log does not say why pid $pi ended"
id=$(warm_ask idle --idle-timeout 3s "three")
wait_state "$id" succeeded
p3=$(turn_pid "$id")
[ "$p3" != "$pi" ] || fail "the message ran on the ended process's pid"
assert_eq "R:three turn3 pid$p3 h[one | two]" "$(attempt_field "$id" last result)" \
	"the resumed conversation"

check "--max-warm 1: a second session's process ends the first, idle, one"
id=$(warm_ask other "hello")
wait_state "$id" succeeded
wait_for "! _tq_alive $p3" 10 || fail "--max-warm 1 kept two agents"
