#!/usr/bin/env bash
# test_warm_death.sh - a warm session's agent process dies (issue 19), with
# the fake agent WARM_AGENT in its stream-input mode (lib_warm.sh; claude,
# and as warm_death_gemini, _codex, _opencode the others):
#   - SIGKILLed between messages: the supervisor reaps it and says so; the
#     next message starts a new process that resumes the session
#     (claude's --resume, a protocol's session load: the conversation and
#     the agent session kept);
#   - SIGKILLed during a turn: that attempt is recorded with its reason (the
#     signal), what the agent had started in a session of its own (a tool's
#     grandchild) is killed, no process is left, and the next message
#     resumes on a new process;
#   - its worker SIGKILLed mid-turn: the supervisor ends the process (no
#     turn is left that nobody reads), the attempt is lost, and its retry
#     (--retry-lost) runs on a new process that resumes.
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

serve_start 2

check "SIGKILLed between messages: the next message resumes on a new process"
a=$(warm_ask k1 "first")
wait_state "$a" succeeded
pa=$(turn_pid "$a")
sid=$(attempt_field "$a" last agent_session)
kill -KILL "$pa"
wait_for "serve_log_has 'its agent (pid $pa) died between messages'" 10 ||
	fail "the supervisor did not see its warm agent die: $(cat "$TQ_TMP/serve.log")"
b=$(warm_ask k1 "second")
wait_state "$b" succeeded
pb=$(turn_pid "$b")
[ "$pb" != "$pa" ] || fail "the second message ran on the dead process's pid"
assert_eq "R:second turn2 pid$pb h[first]" "$(attempt_field "$b" last result)" "second result"
warm_assert_resumes "$pb" "$sid"
assert_eq "$sid" "$(attempt_field "$b" last agent_session)" "the agent session"

check "SIGKILLed during a turn: the attempt says why, nothing is left, the next resumes"
rm -f "$TQ_TMP/grandchild"
c=$(warm_ask k1 "third [grandchild] [hang]")
wait_for "[ -s '$TQ_TMP/grandchild' ]" 10 || fail "the turn did not start its grandchild"
gc=$(cat "$TQ_TMP/grandchild")
_tq_alive "$gc" || fail "the grandchild is not running"
# (a running turn's pid is stored up to 50 ms after it began: runner.c)
wait_for "[ \"\$(turn_pid $c)\" = $pb ]" 10 ||
	fail "the third message's agent: expected [$pb], got [$(turn_pid "$c")]"
kill -KILL "$pb"
wait_state "$c" failed
assert_eq signaled "$(attempt_field "$c" last outcome)" "the attempt's outcome"
assert_contains "$(attempt_field "$c" last reason)" "SIGKILL" "the attempt's reason"
assert_contains "$(attempt_field "$c" last reason)" "warm agent (pid $pb)" "the attempt's reason"
wait_for "! _tq_alive $gc" 10 || fail "the agent's grandchild (pid $gc) outlived it"
wait_for '[ -z "$(warm_pids)" ]' 10 || fail "processes left: $(warm_pids)"
d=$(warm_ask k1 "fourth")
wait_state "$d" succeeded
pd=$(turn_pid "$d")
[ "$pd" != "$pb" ] || fail "the fourth message ran on the dead process's pid"
# the turn that died never finished: the conversation is the one before it
assert_eq "R:fourth turn3 pid$pd h[first | second]" "$(attempt_field "$d" last result)" \
	"fourth result"

check "its worker SIGKILLed mid-turn: the process is ended, the retry resumes on a new one"
e=$(warm_ask k1 --retry-lost --retries 1 --backoff 1s "fifth [sleep 4]")
wait_state "$e" running
wait_for "[ -n \"\$(running_worker_pid $e)\" ]" 10 || fail "no worker runs task $e"
wait_for "[ \"\$(turn_pid $e)\" = $pd ]" 10 || fail "task $e did not run on pid $pd"
w=$(running_worker_pid "$e")
kill -KILL "$w"
wait_for "! _tq_alive $pd" 10 || fail "the warm agent (pid $pd) outlived the worker of its turn"
serve_log_has "ending its agent (pid $pd): the worker that ran its turn is gone" ||
	fail "the supervisor's log does not say why it ended pid $pd"
wait_state "$e" succeeded 30
assert_eq lost "$(attempt_field "$e" 1 outcome)" "the first attempt"
pe=$(turn_pid "$e")
[ "$pe" != "$pd" ] || fail "the retry ran on the ended process's pid"
assert_eq "R:fifth [sleep 4] turn4 pid$pe h[first | second | fourth]" \
	"$(attempt_field "$e" last result)" "the retry's result"
warm_assert_resumes "$pe" "$sid"
assert_eq "$sid" "$(attempt_field "$e" last agent_session)" "the retry's agent session"
