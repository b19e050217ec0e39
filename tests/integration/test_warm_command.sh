#!/usr/bin/env bash
# test_warm_command.sh - a warm session's message whose command differs from
# the one its held process was started with (issue 19), with the fake
# WARM_AGENT (claude unless meson says another) in its stream-input mode:
#   - another --model: the idle process is ended, a new one of the message's
#     command starts and resumes the conversation (the first message's
#     agent session: claude's --resume, the others' protocol; the first
#     prompt in its history); the
#     supervisor's log says why;
#   - the same command again: the same process (no restart), also from a
#     shell whose OLDPWD, _ and SHLVL differ (a shell's bookkeeping, not
#     the user's wish);
#   - another environment (--env): a new process again, said as such.
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

cmdline() { tr '\0' ' ' <"/proc/$1/cmdline"; }

check "another --model: a new process of that model, resuming the conversation"
a=$(warm_ask k1 --model model-a "first")
wait_state "$a" succeeded
pa=$(turn_pid "$a")
sid=$(attempt_field "$a" last agent_session)
# the model: on the command line, or over the protocol (then the model the
# turn ran, as the agent said it)
assert_model() {  # ID PID MODEL
	if [ -n "$(warm_model_arg "$3")" ]; then
		assert_contains "$(cmdline "$2")" "$(warm_model_arg "$3")" "process $2's command"
	else
		assert_eq "$3" "$(attempt_field "$1" last model)" "the model task $1 ran"
	fi
}
assert_model "$a" "$pa" model-a
b=$(warm_ask k1 --model model-b "second")
wait_state "$b" succeeded
pb=$(turn_pid "$b")
[[ $pb =~ ^[0-9]+$ ]] || fail "no agent pid recorded for task $b: [$pb]"
[ "$pb" != "$pa" ] || fail "the message with --model model-b ran on the model-a process $pa"
argv=$(cmdline "$pb")
assert_model "$b" "$pb" model-b
assert_not_contains "$argv" "model-a" "the second process's command"
warm_assert_resumes "$pb" "$sid"
assert_eq "R:second turn2 pid$pb h[first]" "$(attempt_field "$b" last result)" "second result"
wait_for "! _tq_alive $pa" 10 || fail "the model-a process (pid $pa) was left running"
serve_log_has "warm session k1: the message's command differs (model); starting it anew" ||
	fail "the supervisor's log does not say why: $(cat "$TQ_TMP/serve.log")"

check "the same command again: the same process"
c=$(warm_ask k1 --model model-b "third")
wait_state "$c" succeeded
assert_eq "$pb" "$(turn_pid "$c")" "the third message's agent pid"
assert_eq "R:third turn3 pid$pb h[first | second]" "$(attempt_field "$c" last result)" \
	"third result"

check "a shell's own bookkeeping changed (OLDPWD, _, SHLVL): still the same process"
e=$(cd / && cd "$TQ_TMP/proj" && OLDPWD=/elsewhere SHLVL=7 _=/some/other/program \
	"$TASKQ_BIN" ask --agent "$WARM_AGENT" --session k1 --warm --model model-b \
	"third and a half")
wait_state "$e" succeeded
assert_eq "$pb" "$(turn_pid "$e")" "the agent pid of a message from a shell that moved about"

check "another environment: a new process that resumes"
d=$(warm_ask k1 --model model-b --env WARM_TEST_VAR=1 "fourth")
wait_state "$d" succeeded
pd=$(turn_pid "$d")
[ "$pd" != "$pb" ] || fail "the message with another environment ran on process $pb"
grep -qx WARM_TEST_VAR=1 < <(tr '\0' '\n' <"/proc/$pd/environ") ||
	fail "the new process (pid $pd) lacks the message's environment"
assert_eq "R:fourth turn5 pid$pd h[first | second | third | third and a half]" \
	"$(attempt_field "$d" last result)" "fourth result"
serve_log_has "warm session k1: the message's command differs (environment); starting it anew" ||
	fail "the supervisor's log does not say why: $(cat "$TQ_TMP/serve.log")"

"$TASKQ_BIN" shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
wait_for '[ -z "$(warm_pids)" ]' 10 || fail "warm agents left after shutdown: $(warm_pids)"
