#!/usr/bin/env bash
# test_warm_real.sh - warm sessions (issue 19) with the REAL Claude Code CLI
# (pinned, tests/agents/install-claude.sh; skipped, exit 77, when it cannot
# be had) in its stream-input mode, against the mock Anthropic API
# (tests/agents/mock_api.py) on 127.0.0.1, HOME a temp dir:
#   - the second message runs on the same process (same pid) and its
#     conversation: the mock sees the first prompt in the second request;
#   - three messages submitted at once finish in order on that process,
#     each with its own result;
#   - taskq kill interrupts a turn (the control message) and keeps the
#     process;
#   - the process SIGKILLed between messages: the next message resumes on a
#     new process (--resume), the conversation kept;
#   - SIGKILLed during a turn: the attempt is recorded with the signal, and
#     the next message resumes on a new process;
#   - the idle timeout ends the process; the next message resumes;
#   - shutdown leaves no agent process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

claude_bin
mock_start ok
PATH="$(claude_path):$PATH"
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

att() { attempt_field "$1" last "${@:2}"; }
cmdline() { tr '\0' ' ' <"/proc/$1/cmdline"; }

serve_start 2

check "the second message reuses the process and its conversation"
a=$(warm_ask chat --retries 0 "remember the word kiwi")
wait_state "$a" succeeded 90
pa=$(turn_pid "$a")
assert_eq "Hello from the mock.|false|success" "$(att "$a" result is_error subtype)"
sid=$(att "$a" agent_session)
[[ $sid =~ ^[0-9a-f-]{36}$ ]] || fail "task $a: agent_session is [$sid]"
n=$(mock_requests)
b=$(warm_ask chat --retries 0 "which word?")
wait_state "$b" succeeded 60
assert_eq "$pa" "$(turn_pid "$b")" "the second message's agent pid"
assert_eq "$sid" "$(att "$b" agent_session)" "the agent session"
assert_eq $((n + 1)) "$(mock_requests)" "model requests for the second message"
mock_request_has -1 "remember the word kiwi" || fail "the second request lacks the first turn"
mock_request_has -1 "which word?" || fail "the second request lacks its own prompt"
assert_contains "$(cmdline "$pa")" "--input-format stream-json" "the agent's command"

check "three messages submitted at once finish in order, each with its own result"
c1=$(warm_ask chat --retries 0 "one")
c2=$(warm_ask chat --retries 0 "two")
c3=$(warm_ask chat --retries 0 "three")
wait_state "$c3" succeeded 60
for c in "$c1" "$c2" "$c3"; do
	assert_eq "succeeded" "$(state_of "$c")" "task $c"
	assert_eq "Hello from the mock.|false|$pa" "$(att "$c" result is_error pid)" "task $c"
done
[ "$(att "$c2" started_at)" -ge "$(att "$c1" ended_at)" ] &&
	[ "$(att "$c3" started_at)" -ge "$(att "$c2" ended_at)" ] ||
	fail "the three messages overlapped"
# the requests came in that order, each with the ones before it
mock_request_has -3 '"one"' && ! mock_request_has -3 '"two"' || fail "request of one"
mock_request_has -2 '"two"' && ! mock_request_has -2 '"three"' || fail "request of two"
mock_request_has -1 '"one"' && mock_request_has -1 '"three"' || fail "request of three"

check "kill interrupts a turn and keeps the process"
mock_mode slow:30
k=$(warm_ask chat --retries 0 "take your time")
wait_for "[ \"\$(mock_requests)\" -ge $((n + 5)) ]" 30 || fail "the slow turn never asked the mock"
"$TASKQ_BIN" kill "$k" >/dev/null
wait_state "$k" killed 20
assert_eq "killed by taskq kill (its turn interrupted, its agent kept)" \
	"$(att "$k" reason)" "the killed turn"
_tq_alive "$pa" || fail "the interrupt ended the agent"
mock_mode ok
k2=$(warm_ask chat --retries 0 "after the interrupt")
wait_state "$k2" succeeded 60
assert_eq "$pa" "$(turn_pid "$k2")" "the agent after the interrupt"

check "SIGKILLed between messages: the next message resumes on a new process"
kill -KILL "$pa"
wait_for "serve_log_has 'its agent (pid $pa) died between messages'" 10 ||
	fail "the supervisor did not see its agent die"
d=$(warm_ask chat --retries 0 "still there?")
wait_state "$d" succeeded 90
pd=$(turn_pid "$d")
[ "$pd" != "$pa" ] || fail "the message ran on the dead process's pid"
assert_contains "$(cmdline "$pd")" "--resume $sid" "the new process's command"
assert_eq "$sid" "$(att "$d" agent_session)" "the agent session"
mock_request_has -1 "remember the word kiwi" || fail "the resumed conversation lost its first turn"

check "SIGKILLed during a turn: the attempt says so; the next message resumes"
mock_mode slow:30
n=$(mock_requests)
e=$(warm_ask chat --retries 0 "slow one")
wait_for "[ \"\$(mock_requests)\" -gt $n ]" 30 || fail "the turn never asked the mock"
kill -KILL "$pd"
wait_state "$e" failed 20
assert_eq signaled "$(att "$e" outcome)" "the attempt's outcome"
assert_contains "$(att "$e" reason)" "SIGKILL" "the attempt's reason"
mock_mode ok
f=$(warm_ask chat --retries 0 "and now?")
wait_state "$f" succeeded 90
pf=$(turn_pid "$f")
[ "$pf" != "$pd" ] || fail "the message ran on the dead process's pid"
mock_request_has -1 "remember the word kiwi" || fail "the conversation was lost"

check "the idle timeout ends the process; the next message resumes on a new one"
g=$(warm_ask chat --retries 0 --idle-timeout 2s "a quick one")
wait_state "$g" succeeded 60
assert_eq "$pf" "$(turn_pid "$g")" "the agent of a message in time"
wait_for "! _tq_alive $pf" 20 || fail "the idle agent (pid $pf) was not ended"
serve_log_has "ending its agent (pid $pf): idle timeout" ||
	fail "the supervisor's log does not say why pid $pf ended"
h=$(warm_ask chat --retries 0 --idle-timeout 2s "after the pause")
wait_state "$h" succeeded 90
pf=$(turn_pid "$h")
[ "$pf" != "$(turn_pid "$g")" ] || fail "the message ran on the ended process's pid"
assert_contains "$(cmdline "$pf")" "--resume $sid" "the new process's command"
mock_request_has -1 "remember the word kiwi" || fail "the conversation was lost"

check "shutdown leaves no agent process"
"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 30 || fail "the supervisor did not stop"
wait_for '[ -z "$(warm_pids)" ]' 10 || fail "agent processes left: $(warm_pids)"
_tq_alive "$pf" && fail "the agent (pid $pf) outlived shutdown"
mock_stop
