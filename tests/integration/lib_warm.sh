# lib_warm.sh - helpers for the tests of warm sessions (issue 19: a
# session's agent process kept between messages). Source after lib.sh,
# lib_agents.sh and lib_serve.sh.
#
# A test of warm sessions runs for the agent WARM_AGENT (claude when
# unset; meson runs some again for gemini, codex and opencode, as
# NAME_AGENT): what differs by agent is said by the helpers below.
#
#   warm_ask KEY ARGS...   `taskq ask --agent WARM_AGENT --session KEY --warm
#                          ARGS...`, the id
#   warm_fake_args ARGS... the fake WARM_AGENT's options (fake_agent_args)
#   warm_mode              what the warm agent's command line holds: its
#                          stream-input mode ("--input-format stream-json",
#                          "--acp", " acp", " app-server")
#   warm_model_arg M       how the warm agent's command line names model M
#                          (the profile's "{?model}" elements); "" for an
#                          agent told its model over its protocol instead
#                          (opencode's session/set_config_option, codex's
#                          thread/start)
#   warm_assert_resumes PID SID   the process PID resumed agent session
#                          SID: claude by its command line (--resume);
#                          the others by their protocol, which the turn's
#                          history and agent session show
#   warm_interrupted       the subtype of an interrupted turn's result
#   warm_turn_lines        the lines a kept process's one turn logs with
#                          the fake (its answer and its text)
#   warm_start_marker      a text of a new process's start (handshake)
#                          that no turn's log may hold, "" for none
#   warm_pids              the live processes this test's warm agents (and
#                          what they started) are, found by their marks, one
#                          a line
#   turn_pid ID            the agent pid task ID's last attempt ran on
#   serve_log_has TEXT     the supervisor's log (serve --foreground's
#                          stderr) holds TEXT

WARM_AGENT=${WARM_AGENT:-claude}

warm_ask() {
	local key=$1
	shift
	"$TASKQ_BIN" ask --agent "$WARM_AGENT" --session "$key" --warm "$@"
}

warm_fake_args() { fake_agent_args "$WARM_AGENT" "$@"; }

warm_mode() {
	case $WARM_AGENT in
	claude) echo "--input-format stream-json" ;;
	gemini) echo "--acp" ;;
	opencode) echo " acp" ;;
	codex) echo " app-server" ;;
	esac
}

warm_model_arg() {
	case $WARM_AGENT in
	claude) echo "--model $1" ;;
	gemini) echo "--model=$1" ;;
	opencode | codex) echo "" ;;
	esac
}

warm_assert_resumes() {
	[ "$WARM_AGENT" != claude ] ||
		assert_contains "$(tr '\0' ' ' <"/proc/$1/cmdline")" "--resume $2" \
			"the new process's command"
}

warm_interrupted() {
	case $WARM_AGENT in
	claude) echo error_during_execution ;;
	gemini | opencode) echo cancelled ;;
	codex) echo interrupted ;;
	esac
}

warm_turn_lines() {
	case $WARM_AGENT in
	claude) echo 2 ;;   # assistant, result
	gemini) echo 2 ;;   # agent_message_chunk, the prompt's answer
	opencode) echo 3 ;; # two agent_message_chunks, the prompt's answer
	codex) echo 5 ;;    # turn/started, the delta, item/completed,
		# tokenUsage, turn/completed (turn/start's answer is its start)
	esac
}

warm_start_marker() {
	case $WARM_AGENT in
	claude) echo "" ;;
	gemini | opencode) echo '"protocolVersion"' ;;
	codex) echo '"userAgent"' ;;
	esac
}

# Every process whose environment holds the warm mark and this test's
# home (src/worker/warm.h, TQ_WARM_MARK): the agents and their children.
warm_pids() {
	local p
	for p in /proc/[0-9]*; do
		grep -qzx 'TASKQ_TASK_ID=warm' "$p/environ" 2>/dev/null &&
			grep -qzxF "TASKQ_TASK_HOME=$TASKQ_HOME" "$p/environ" 2>/dev/null &&
			# a zombie is gone already
			[ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" != Z ] && echo "${p#/proc/}"
	done
	return 0
}

# The pid of the agent that ran (runs) message ID's turn: the current
# attempt's, waited for while it runs (stored up to 50 ms after the turn's
# start: task_pid).
turn_pid() { task_pid "$1"; }

serve_log_has() { grep -qF -- "$1" "$TQ_TMP/serve.log"; }
