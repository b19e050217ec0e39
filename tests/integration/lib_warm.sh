# lib_warm.sh - helpers for the tests of warm sessions (issue 19: a
# session's agent process kept between messages). Source after lib.sh,
# lib_agents.sh and lib_serve.sh.
#
#   warm_ask KEY ARGS...   `taskq ask --session KEY --warm ARGS...`, the id
#   warm_pids              the live processes this test's warm agents (and
#                          what they started) are, found by their marks, one
#                          a line
#   turn_pid ID            the agent pid task ID's last attempt ran on
#   serve_log_has TEXT     the supervisor's log (serve --foreground's
#                          stderr) holds TEXT

warm_ask() {
	local key=$1
	shift
	"$TASKQ_BIN" ask --session "$key" --warm "$@"
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

turn_pid() { attempt_field "$1" last pid; }

serve_log_has() { grep -qF -- "$1" "$TQ_TMP/serve.log"; }
