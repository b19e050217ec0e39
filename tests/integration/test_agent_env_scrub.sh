#!/usr/bin/env bash
# test_agent_env_scrub.sh - issue 17.8: a task submitted from inside Gemini
# CLI, Codex or OpenCode does not inherit their marker variables (the
# environments their shell tools really give, recorded from the real CLIs in
# tests/fixtures/agent-outputs/*-tool-child.env), nor what Gemini sets for
# git; the user's own settings pass; the list is data (agent-env.json) and a
# user's config adds to it ("scrub_env"); and a marker that reaches the store
# anyway (--env) is removed again when the task starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

FIX="$TASKQ_FIXTURES/agent-outputs"
cd "$TQ_TMP" || exit 1

# submit_from FILE ARGS...: taskq submit run in the environment recorded in
# FILE (plus PATH and this test's TASKQ_HOME), printing the id.
submit_from() {
	local file=$1
	shift
	mapfile -t vars < <(grep -v -e '^PATH=' -e '^HOME=' -e '^_=' "$file")
	env -i "${vars[@]}" PATH="$PATH" HOME="$HOME" TASKQ_HOME="$TASKQ_HOME" \
		${TASKQ_DB:+TASKQ_DB="$TASKQ_DB"} TASKQ_AUTOSTART=0 "$TASKQ_BIN" submit "$@"
}

check "the markers each real CLI gives its children are not stored"
for f in gemini-0.61-tool-child.env codex-0.169-tool-child.env opencode-1.18-tool-child.env \
	claude-2.1-tool-child.env; do
	id=$(submit_from "$FIX/$f" -- true)
	task_env "$id" >"$TQ_TMP/stored.env"
	if grep -E '^(GEMINI_CLI|GEMINI_CLI_NO_RELAUNCH|GIT_CONFIG_[A-Z_0-9]*|GIT_TERMINAL_PROMPT|GIT_EDITOR|CODEX_THREAD_ID|CODEX_SESSION_ID|CODEX_CI|CODEX_TOOL_CALL_ID|CODEX_MANAGED_[A-Z_]*|CODEX_VERSION|OPENCODE|OPENCODE_PID|AGENT|CLAUDECODE|AI_AGENT|CLAUDE_CODE_SESSION_ID|npm_config_user_agent)=' \
		"$TQ_TMP/stored.env"; then
		fail "$f: a marker was stored"
	fi
done
grep -qx 'OPENCODE_DISABLE_MODELS_FETCH=1' "$TQ_TMP/stored.env" 2>/dev/null ||
	grep -q '^ANTHROPIC_BASE_URL=' "$TQ_TMP/stored.env" || fail "the user's own settings were not kept"

check "CODEX_SANDBOX and CODEX_SANDBOX_NETWORK_DISABLED are not stored"
id=$(CODEX_SANDBOX=seccomp CODEX_SANDBOX_NETWORK_DISABLED=1 KEEP_ME=1 tq submit -- true)
task_env "$id" >"$TQ_TMP/stored.env"
grep -q '^CODEX_SANDBOX' "$TQ_TMP/stored.env" && fail "CODEX_SANDBOX stored"
grep -qx 'KEEP_ME=1' "$TQ_TMP/stored.env" || fail "KEEP_ME lost"

check "a user's git settings stay when no Gemini marker is there"
id=$(GIT_CONFIG_GLOBAL="$HOME/.gitconfig-work" GIT_EDITOR=vim tq submit -- true)
task_env "$id" >"$TQ_TMP/stored.env"
grep -qx "GIT_CONFIG_GLOBAL=$HOME/.gitconfig-work" "$TQ_TMP/stored.env" || fail "GIT_CONFIG_GLOBAL lost"
grep -qx "GIT_EDITOR=vim" "$TQ_TMP/stored.env" || fail "GIT_EDITOR lost"

check "the user's config adds an entry (scrub_env)"
cat >"$TQ_TMP/config.json" <<'JSON'
{"scrub_env": [{"id": "mine", "names": ["MY_AGENT_MARK"], "prefixes": ["MYAGENT_"]}]}
JSON
id=$(TASKQ_CONFIG="$TQ_TMP/config.json" MY_AGENT_MARK=1 MYAGENT_X=2 tq submit -- true)
task_env "$id" >"$TQ_TMP/stored.env"
grep -q '^MY' "$TQ_TMP/stored.env" && fail "the user's entries were not scrubbed: $(grep '^MY' "$TQ_TMP/stored.env")"

# main reads the config for "database" and the scrub for "scrub_env": one
# read kept for the command (tq_config_keep), not two.
check "a submit opens the config file once, and the scrub still applies it"
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
	id=$(TASKQ_CONFIG="$TQ_TMP/config.json" MY_AGENT_MARK=1 TASKQ_AUTOSTART=0 \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -e trace=open,openat -o "$TQ_TMP/open.trace" "$TASKQ_BIN" submit -- true) ||
		fail "submit under strace failed"
	assert_eq 1 "$(grep -c 'config\.json' "$TQ_TMP/open.trace")" "opens of the config file"
	task_env "$id" >"$TQ_TMP/stored.env"
	grep -q '^MY' "$TQ_TMP/stored.env" && fail "the user's entry was not applied"
else
	echo "    (SKIP: no strace, or it cannot trace here)"
fi

check "a marker stored anyway (--env) is removed when the task starts"
serve_start 1
id=$(tq submit --env OPENCODE=1 --env AGENT=1 --env GEMINI_CLI=1 --env KEPT=1 -- env)
wait_state "$id" succeeded 20
assert_exit 0 tq log "$id"
grep -E '^(OPENCODE|AGENT|GEMINI_CLI)=' "$TQ_OUT" && fail "a marker reached the task"
grep -qx 'KEPT=1' "$TQ_OUT" || fail "KEPT lost"

echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
