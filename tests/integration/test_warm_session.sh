#!/usr/bin/env bash
# test_warm_session.sh - a warm session (issue 19) with the fake agent
# WARM_AGENT (lib_warm.sh: claude, and as warm_session_gemini, _codex,
# _opencode the others) in its stream-input mode (tests/fixtures/fakeagent:
# one process, a result per turn, the earlier prompts of the process's
# conversation in {history}):
#   - the second message runs on the same process (same pid, recorded as
#     the attempt's pid) and its conversation (the first prompt in its
#     history), with no --resume: the process was kept;
#   - each message is a task: its own result, and a log holding only its
#     turn's lines (claude's first has the init line; the second none, and
#     not the first's result; a protocol's handshake is in neither);
#   - three messages submitted at once run one at a time in submission
#     order on that process, each with its own result;
#   - a turn that fails with a rate limit, an overload, an auth error is
#     classified as a cold run's failure is (the agent's error in its
#     protocol), and the process is kept;
#   - a protocol agent's own request (a permission, an approval) is
#     answered, refused: the turn goes on without a person;
#   - a warm message holds a worker only while its turn runs: with one
#     worker, a plain task runs while the process waits, and the process is
#     still there after;
#   - with --isolate, the workspace of the message that started the process
#     is its working directory for its life: still there (not deleted) after
#     each message, owned by the process (removed by the sweep once it is
#     gone);
#   - shutdown ends the warm agent: no process of it is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_warm.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
warm_fake_args --key-order real --result 'R:{prompt} turn{turns} pid{pid} h[{history}]'
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

serve_start 1

check "the second message reuses the first's process and conversation"
a=$(warm_ask k1 "first")
wait_state "$a" succeeded
pa=$(turn_pid "$a")
[[ $pa =~ ^[0-9]+$ ]] || fail "no agent pid recorded for task $a: [$pa]"
assert_eq "R:first turn1 pid$pa h[]" "$(attempt_field "$a" last result)" "first result"
_tq_alive "$pa" || fail "the warm agent (pid $pa) is gone after its first message"
b=$(warm_ask k1 "second")
wait_state "$b" succeeded
assert_eq "$pa" "$(turn_pid "$b")" "the second message's agent pid"
assert_eq "R:second turn2 pid$pa h[first]" "$(attempt_field "$b" last result)" "second result"
argv=$(tr '\0' ' ' <"/proc/$pa/cmdline")
assert_contains "$argv" "$(warm_mode)" "the warm agent's command"
assert_not_contains "$argv" "--resume" "a first process of a new session"
assert_not_contains "$argv" "first" "the prompt is not in the command"

check "each message's log holds only its turn's lines"
"$TASKQ_BIN" log "$a" >"$TQ_TMP/log_a"
"$TASKQ_BIN" log "$b" >"$TQ_TMP/log_b"
if [ "$WARM_AGENT" = claude ]; then
	assert_contains "$(cat "$TQ_TMP/log_a")" '"subtype":"init"' "the first turn's log"
	assert_not_contains "$(cat "$TQ_TMP/log_b")" '"subtype":"init"' "the second turn's log"
	assert_eq 1 "$(grep -c '"type":"result"' "$TQ_TMP/log_b")" "result lines in the second log"
fi
marker=$(warm_start_marker)
if [ -n "$marker" ]; then
	assert_not_contains "$(cat "$TQ_TMP/log_a")" "$marker" "the first turn's log (its handshake)"
	assert_not_contains "$(cat "$TQ_TMP/log_b")" "$marker" "the second turn's log"
fi
assert_contains "$(cat "$TQ_TMP/log_a")" 'turn1 pid' "the first turn's log"
assert_not_contains "$(cat "$TQ_TMP/log_b")" 'turn1 pid' "the second turn's log"
assert_eq "$(warm_turn_lines)" "$(grep -c . "$TQ_TMP/log_b")" "lines in the second log"

check "three messages submitted at once finish in order, each with its own result"
c1=$(warm_ask k1 "m3")
c2=$(warm_ask k1 "m4")
c3=$(warm_ask k1 "m5")
wait_state "$c3" succeeded 30
assert_eq "R:m3 turn3 pid$pa h[first | second]" "$(attempt_field "$c1" last result)" "m3"
assert_eq "R:m4 turn4 pid$pa h[first | second | m3]" "$(attempt_field "$c2" last result)" "m4"
assert_eq "R:m5 turn5 pid$pa h[first | second | m3 | m4]" "$(attempt_field "$c3" last result)" "m5"
e1=$(attempt_field "$c1" last ended_at)
s2=$(attempt_field "$c2" last started_at)
e2=$(attempt_field "$c2" last ended_at)
s3=$(attempt_field "$c3" last started_at)
[ "$s2" -ge "$e1" ] && [ "$s3" -ge "$e2" ] ||
	fail "the messages overlapped: m3 ended $e1, m4 ran $s2..$e2, m5 started $s3"

check "a turn's API errors are classified as a cold run's, the process kept"
for m in rate_limit:rate_limit overload:overload auth:auth; do
	f=$(warm_ask k1 --retries 0 "fails [mode ${m%%:*}]")
	wait_state "$f" failed
	assert_eq "$pa|${m#*:}" "$(attempt_field "$f" last pid category)" "a turn in ${m%%:*} mode"
done
f=$(warm_ask k1 "after the errors")
wait_state "$f" succeeded
assert_eq "$pa" "$(turn_pid "$f")" "the agent after the errors"

if [ "$WARM_AGENT" != claude ]; then
	check "the agent's own requests are answered: a permission is refused"
	f=$(warm_ask k1 "[permission] may I")
	wait_state "$f" succeeded
	case $WARM_AGENT in
	codex) want="perm[decline]" ;;
	*) want="perm[cancel]" ;; # its reject_once option
	esac
	assert_contains "$(attempt_field "$f" last result)" "$want" "the turn's result"
	assert_eq "$pa" "$(turn_pid "$f")" "the agent after the permission"
fi

check "a warm process holds no worker between messages"
p=$("$TASKQ_BIN" submit -- sh -c 'echo plain')
wait_state "$p" succeeded
_tq_alive "$pa" || fail "the warm agent (pid $pa) ended when a plain task ran"
assert_contains " $(warm_pids | tr '\n' ' ')" " $pa " "the warm processes of this home"

check "an isolated warm session keeps its workspace while its process lives"
i1=$(warm_ask iso --isolate "in a workspace")
wait_state "$i1" succeeded
pi=$(turn_pid "$i1")
ws=$(readlink "/proc/$pi/cwd")
assert_contains "$ws" "$TASKQ_HOME/work/taskq-" "the process's working directory"
assert_not_contains "$ws" "(deleted)" "its working directory after the first message"
assert_contains "$(cat "$ws/.taskq-task")" "\"pid\":$pi," "the workspace's owner"
i2=$(warm_ask iso --isolate "again")
wait_state "$i2" succeeded
assert_eq "$pi" "$(turn_pid "$i2")" "the second message's agent"
assert_eq "$ws" "$(readlink "/proc/$pi/cwd")" "its working directory after the second"
[ -d "$ws" ] || fail "the workspace $ws is gone while its process lives"

check "shutdown leaves no agent process"
"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
wait_for '[ -z "$(warm_pids)" ]' 10 || fail "warm agents left after shutdown: $(warm_pids)"
serve_log_has "warm session k1: ending its agent (pid $pa): the supervisor is stopping" ||
	fail "the supervisor's log does not say it ended the agent: $(cat "$TQ_TMP/serve.log")"
