#!/usr/bin/env bash
# test_sessions_close_warm.sh - `taskq sessions` and `taskq sessions close
# KEY` with a warm session running (issue 19), the fake claude in its
# stream-input mode (tests/fixtures/fakeagent):
#   - after a warm message, `taskq sessions` shows the session's warm pid
#     (the agent the message's attempt ran on), its node, idle, 1 message;
#     status counts it, session show names it;
#   - `sessions close KEY` ends that process through the request on the row:
#     it says so and exits 0 once the supervisor has ended it; the process
#     is gone and the list shows "-" with no request left;
#   - the session's next message starts a new process that resumes the
#     conversation (--resume with the agent session of the first);
#   - `sessions close KEY --no-wait` stores the request and returns; the
#     supervisor ends the process all the same;
#   - closing a session with no warm process left says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
fake_agent_args claude --key-order real --result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1
field() { tq sessions --json | pyjson "[s for s in d if s['key'] == '$1'][0]['$2']"; }

serve_start 1

check "sessions shows the warm process a message ran on, idle"
a=$(warm_ask chat "remember kiwi")
wait_state "$a" succeeded
pa=$(turn_pid "$a")
[[ $pa =~ ^[0-9]+$ ]] || fail "no agent pid recorded for task $a: [$pa]"
wait_for "[ \"\$(field chat idle_since)\" != null ]" 10 ||
	fail "the warm process is not recorded idle: $(tq sessions --json)"
assert_eq "$pa" "$(field chat warm_pid)" "the warm pid"
assert_eq "$(hostname)" "$(field chat warm_node)" "its node"
assert_eq 1 "$(field chat messages)"
assert_eq claude "$(field chat agent)"
assert_eq "$(attempt_field "$a" last agent_session)" "$(field chat agent_session)"
assert_exit 0 tq sessions
assert_eq "$pa" "$(out | awk '$1 == "chat" { print $5 }')" "the table's WARM"
assert_eq 1 "$(tq status --json | pyjson 'd["warm_agents"]')" "status's warm agents"
assert_exit 0 tq session show chat
assert_contains "$(out)" "warm process:   pid $pa on node $(hostname), idle "
assert_eq "[$pa, \"$(hostname)\"]" "$(tq session show chat --json | pyjson '[d["warm_pid"], d["warm_node"]]')" \
	"session show --json"

check "sessions close ends it; the next message resumes on a new process"
assert_exit 0 tq sessions close chat
assert_eq "session \"chat\": warm process $pa ended" "$(out)"
wait_for "! _tq_alive $pa" 10 || fail "the warm agent (pid $pa) is still alive"
assert_eq null "$(field chat warm_pid)" "the warm pid after close"
assert_eq null "$(field chat close_requested_at)" "the request after close"
assert_exit 0 tq sessions
assert_eq "-" "$(out | awk '$1 == "chat" { print $5 }')" "the table's WARM after close"
b=$(warm_ask chat "which fruit?")
wait_state "$b" succeeded
pb=$(turn_pid "$b")
[ "$pb" != "$pa" ] || fail "the next message ran on the closed process $pa"
assert_contains "$(tr '\0' ' ' <"/proc/$pb/cmdline")" "--resume $(attempt_field "$a" last agent_session)" \
	"the new process resumes the conversation"
assert_eq 2 "$(field chat messages)"

check "--no-wait stores the request; the supervisor ends the process all the same"
wait_for "[ \"\$(field chat idle_since)\" != null ]" 10 || fail "not idle again"
assert_exit 0 tq sessions close chat --no-wait
assert_eq "session \"chat\": warm process $pb (node $(hostname)) asked to end" "$(out)"
wait_for "! _tq_alive $pb" 15 || fail "the warm agent (pid $pb) was not ended"
wait_for "[ \"\$(field chat warm_pid)\" = null ]" 10 || fail "the warm pid is still recorded"
assert_exit 0 tq sessions close chat
assert_eq 'session "chat": no warm process' "$(out)"
