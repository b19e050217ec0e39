#!/usr/bin/env bash
# test_warm_real.sh - warm sessions (issue 19) with a REAL agent CLI in its
# stream-input mode: WARM_AGENT (lib_warm.sh; claude, and as
# warm_real_gemini, _opencode, _codex the others), pinned
# (tests/agents/install-agent.sh; skipped, exit 77, only when it cannot be
# installed), against the mock API (tests/agents/mock_api.py) on 127.0.0.1,
# HOME a temp dir:
#   - the second message runs on the same process (same pid) and its
#     conversation: the mock sees the first prompt in the second request;
#   - taskq kill interrupts a turn (claude's control message, ACP's
#     session/cancel, codex's turn/interrupt) and keeps the process;
#   - the process SIGKILLed between messages: the next message resumes on a
#     new process (claude's --resume, ACP's session/load, codex's
#     thread/resume), the conversation kept (gemini's load waits for the
#     minute after its session's file was made: research agent-clis.md 4.1);
#   - shutdown leaves no agent process.
# And with claude: three messages submitted at once finish in order on one
# process, each with its own result; SIGKILLed during a turn: the attempt
# is recorded with the signal, the next message resumes on a new process;
# the idle timeout ends the process, the next message resumes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

mock_start ok
case $WARM_AGENT in
claude)
	claude_bin
	PATH="$(claude_path):$PATH"
	ARGS=()
	TEXT="Hello from the mock."
	;;
gemini)
	PATH="$(agent_path gemini):$PATH"
	gemini_setup
	# a model of its own: without one its router asks the model first
	ARGS=(--model gemini-2.5-flash)
	TEXT="Hello from the mock."
	;;
opencode)
	PATH="$(agent_path opencode):$PATH"
	opencode_setup
	ARGS=()
	TEXT="Hello from the mock."
	;;
codex)
	PATH="$(agent_path codex):$PATH"
	codex_setup
	ARGS=()
	TEXT="Hello from the mock."
	;;
esac
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

att() { attempt_field "$1" last "${@:2}"; }
cmdline() { tr '\0' ' ' <"/proc/$1/cmdline"; }
ask() { warm_ask chat --retries 0 "${ARGS[@]}" "$@"; }
# the agent's first start is slow on a loaded machine (gemini, opencode:
# 15-30 s at load 12, research 4.1, 6.1)
START=240

serve_start 2

check "the second message reuses the process and its conversation"
a=$(ask "remember the word kiwi")
wait_state "$a" succeeded $START
pa=$(turn_pid "$a")
assert_eq "$TEXT|false" "$(att "$a" result is_error)"
sid=$(att "$a" agent_session)
[ -n "$sid" ] && [ "$sid" != null ] || fail "task $a: no agent_session"
n=$(mock_requests)
b=$(ask "which word?")
wait_state "$b" succeeded 60
assert_eq "$pa" "$(turn_pid "$b")" "the second message's agent pid"
assert_eq "$sid" "$(att "$b" agent_session)" "the agent session"
assert_eq "$TEXT|false" "$(att "$b" result is_error)" "the second message's result"
[ "$(mock_requests)" -gt "$n" ] || fail "the second message asked the mock nothing"
mock_request_has -1 "remember the word kiwi" || fail "the second request lacks the first turn"
mock_request_has -1 "which word?" || fail "the second request lacks its own prompt"
assert_contains "$(cmdline "$pa")" "$(warm_mode)" "the agent's command"
marker=$(warm_start_marker)
[ -z "$marker" ] || assert_not_contains "$("$TASKQ_BIN" log "$a")" "$marker" \
	"the first message's log (the process's start is not the turn's)"

if [ "$WARM_AGENT" = claude ]; then
	check "three messages submitted at once finish in order, each with its own result"
	c1=$(ask "one")
	c2=$(ask "two")
	c3=$(ask "three")
	wait_state "$c3" succeeded 60
	for c in "$c1" "$c2" "$c3"; do
		assert_eq "succeeded" "$(state_of "$c")" "task $c"
		assert_eq "$TEXT|false|$pa" "$(att "$c" result is_error pid)" "task $c"
	done
	[ "$(att "$c2" started_at)" -ge "$(att "$c1" ended_at)" ] &&
		[ "$(att "$c3" started_at)" -ge "$(att "$c2" ended_at)" ] ||
		fail "the three messages overlapped"
	# the requests came in that order, each with the ones before it
	mock_request_has -3 '"one"' && ! mock_request_has -3 '"two"' || fail "request of one"
	mock_request_has -2 '"two"' && ! mock_request_has -2 '"three"' || fail "request of two"
	mock_request_has -1 '"one"' && mock_request_has -1 '"three"' || fail "request of three"
fi

check "kill interrupts a turn and keeps the process"
n=$(mock_requests)
mock_mode slow:60
k=$(ask "take your time")
wait_for "[ \"\$(mock_requests)\" -gt $n ]" 60 || fail "the slow turn never asked the mock"
"$TASKQ_BIN" kill "$k" >/dev/null
wait_state "$k" killed 30
assert_eq "killed by taskq kill (its turn interrupted, its agent kept)" \
	"$(att "$k" reason)" "the killed turn"
assert_eq "$(warm_interrupted)" "$(att "$k" subtype)" "the killed turn's result"
_tq_alive "$pa" || fail "the interrupt ended the agent"
mock_mode ok
k2=$(ask "after the interrupt")
wait_state "$k2" succeeded 60
assert_eq "$pa" "$(turn_pid "$k2")" "the agent after the interrupt"
assert_eq "$TEXT|false" "$(att "$k2" result is_error)" "the message after the interrupt"

check "SIGKILLed between messages: the next message resumes on a new process"
kill -KILL "$pa"
wait_for "serve_log_has 'its agent (pid $pa) died between messages'" 10 ||
	fail "the supervisor did not see its agent die"
d=$(ask "still there?")
# gemini's load may wait for the next minute (research 4.1)
wait_state "$d" succeeded $((START + 70))
pd=$(turn_pid "$d")
[ "$pd" != "$pa" ] || fail "the message ran on the dead process's pid"
warm_assert_resumes "$pd" "$sid"
assert_eq "$sid" "$(att "$d" agent_session)" "the agent session"
# its result is its own turn's text, not the history a load replays
assert_eq "$TEXT|false" "$(att "$d" result is_error)" "the resumed message's result"
assert_not_contains "$("$TASKQ_BIN" log "$d")" "remember the word kiwi" \
	"the resumed message's log (the replayed history is not its turn)"
mock_request_has -1 "remember the word kiwi" || fail "the resumed conversation lost its first turn"
mock_request_has -1 "still there?" || fail "the resumed conversation's request lacks its prompt"

if [ "$WARM_AGENT" = claude ]; then
	check "SIGKILLed during a turn: the attempt says so; the next message resumes"
	mock_mode slow:30
	n=$(mock_requests)
	e=$(ask "slow one")
	wait_for "[ \"\$(mock_requests)\" -gt $n ]" 30 || fail "the turn never asked the mock"
	kill -KILL "$pd"
	wait_state "$e" failed 20
	assert_eq signaled "$(att "$e" outcome)" "the attempt's outcome"
	assert_contains "$(att "$e" reason)" "SIGKILL" "the attempt's reason"
	mock_mode ok
	f=$(ask "and now?")
	wait_state "$f" succeeded 90
	pf=$(turn_pid "$f")
	[ "$pf" != "$pd" ] || fail "the message ran on the dead process's pid"
	mock_request_has -1 "remember the word kiwi" || fail "the conversation was lost"

	check "the idle timeout ends the process; the next message resumes on a new one"
	g=$(ask --idle-timeout 2s "a quick one")
	wait_state "$g" succeeded 60
	assert_eq "$pf" "$(turn_pid "$g")" "the agent of a message in time"
	wait_for "! _tq_alive $pf" 20 || fail "the idle agent (pid $pf) was not ended"
	serve_log_has "ending its agent (pid $pf): idle timeout" ||
		fail "the supervisor's log does not say why pid $pf ended"
	h=$(ask --idle-timeout 2s "after the pause")
	wait_state "$h" succeeded 90
	pd=$(turn_pid "$h")
	[ "$pd" != "$(turn_pid "$g")" ] || fail "the message ran on the ended process's pid"
	assert_contains "$(cmdline "$pd")" "--resume $sid" "the new process's command"
	mock_request_has -1 "remember the word kiwi" || fail "the conversation was lost"
fi

check "shutdown leaves no agent process"
"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 60 || fail "the supervisor did not stop"
wait_for '[ -z "$(warm_pids)" ]' 10 || fail "agent processes left: $(warm_pids)"
_tq_alive "$pd" && fail "the agent (pid $pd) outlived shutdown"
mock_stop
