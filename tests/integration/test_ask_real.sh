#!/usr/bin/env bash
# test_ask_real.sh - issue 7 against the REAL Claude Code CLI (pinned,
# tests/agents/install-claude.sh; skipped, exit 77, when it cannot be had),
# driven by `taskq ask` with the built-in claude profile, talking to the mock
# Anthropic API (tests/agents/mock_api.py) on 127.0.0.1, HOME a temp dir:
#   - ask -> the result text, cost and session id stored on the attempt, and
#     `taskq result` prints the text;
#   - a two-task --session: the second runs `claude --resume <first's
#     session id>`, and the mock sees the first turn in the second request;
#   - a tool_use turn whose Bash tool leaves a background process in its own
#     session: gone once the task has ended;
#   - 429 is rate_limit, and retried;
#   - --isolate: the workspace exists while the agent runs (its cwd) and is
#     removed after;
#   - a supervisor and a submitter started with CLAUDECODE=1 and
#     CLAUDE_CODE_SESSION_ID=x in their environment do not pass them on.
# Each claude run takes 2-5 s here: the test about 40 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

claude_bin
mock_start ok
PATH="$(claude_path):$PATH"
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

# att ID FIELD...: fields of task ID's last attempt, joined by '|'.
att() { attempt_field "$1" last "${@:2}"; }

# ask ARGS...: taskq ask, printing the id.
ask() { "$TASKQ_BIN" ask "$@"; }

check "a supervisor started inside an agent session (CLAUDECODE=1, CLAUDE_CODE_SESSION_ID=x)"
CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=x CLAUDE_CODE_ENTRYPOINT=cli serve_start 2

check "ask: the result text, cost and session id are stored; taskq result prints the text"
mock_mode ok
id=$(CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=x ask --retries 0 "say hello")
wait_state "$id" succeeded 90
assert_eq "claude" "$(task_field "$id" agent)" "the task's agent"
assert_eq "Hello from the mock.|false|success" "$(att "$id" result is_error subtype)"
cost=$(att "$id" cost_usd)
[ -n "$cost" ] && "$TQ_PYTHON" -c "import sys; sys.exit(0 if float('$cost') > 0 else 1)" ||
	fail "task $id: cost_usd is [$cost]"
sid1=$(att "$id" agent_session)
[[ $sid1 =~ ^[0-9a-f-]{36}$ ]] || fail "task $id: agent_session is [$sid1], not a session id"
assert_exit 0 tq result "$id"
assert_eq "Hello from the mock." "$(out)" "taskq result"
mock_request_has -1 "say hello" || fail "the mock did not get the prompt"

check "the agent's environment had none of the session variables of the submitter or supervisor"
mock_mode slow:4
id=$(CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=x ask --retries 0 "wait a bit")
wait_for "[ -n \"\$(task_pid $id)\" ]" 30 || fail "task $id did not start"
pid=$(task_pid "$id")
tr '\0' '\n' <"/proc/$pid/environ" >"$TQ_TMP/agent.env" || fail "cannot read the agent's environment"
grep -E '^(CLAUDECODE|CLAUDE_CODE_SESSION_ID|CLAUDE_CODE_ENTRYPOINT)=' "$TQ_TMP/agent.env" &&
	fail "the agent inherited an agent-session variable"
grep -qx "ANTHROPIC_BASE_URL=$MOCK_URL" "$TQ_TMP/agent.env" || fail "the agent lacks the submitter's ANTHROPIC_BASE_URL"
wait_state "$id" succeeded 90

check "a two-task session: the second resumes the first's agent session, and the mock sees the first turn"
mock_mode ok
s1=$(ask --session chat --retries 0 "remember the word kiwi")
s2=$(ask --session chat --retries 0 "which word?")
wait_state "$s1" succeeded 90
wait_state "$s2" succeeded 90
first=$(att "$s1" agent_session)
[ -n "$first" ] || fail "task $s1 stored no session id"
assert_eq "$first" "$(att "$s2" agent_session)" "the resumed session keeps its id"
mock_request_has -1 "remember the word kiwi" || fail "the second request lacks the first turn"
mock_request_has -1 "which word?" || fail "the second request lacks its own prompt"
assert_exit 0 tq session show chat
assert_contains "$(out)" "$first" "session show names the agent session"
# the second started only after the first ended
s1_end=$(attempts_of "$s1" ended_at)
s2_start=$(attempts_of "$s2" started_at)
[ "$s2_start" -ge "$s1_end" ] ||
	fail "the session ran two tasks at once: $s2 started at $s2_start, before $s1 ended at $s1_end"

check "a tool_use turn whose Bash tool leaves a background process: gone after the task"
mock_mode tool
mock_tool_command "setsid -f sleep 1007 </dev/null >/dev/null 2>&1; echo started"
cat >"$TQ_TMP/config.json" <<'EOF'
{"profiles": {"claude-bash": {"parser": "claude",
  "command": ["claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose",
              "--allowedTools", "Bash", "{?model}--model", "{model}",
              "{?session_id}--resume", "{session_id}"]}}}
EOF
export TASKQ_CONFIG="$TQ_TMP/config.json"
id=$(ask --agent claude-bash --retries 0 "run it")
wait_state "$id" succeeded 90
assert_eq "Tool done." "$(att "$id" result)"
mock_request_has -1 "started" || fail "the tool did not run"
wait_for "! pgrep -f 'sleep 1007' >/dev/null" 10 ||
	fail "the Bash tool's background process outlived its task: $(pgrep -af 'sleep 1007')"
unset TASKQ_CONFIG

check "429 is rate_limit and retried"
mock_mode '429:0,ok'
id=$(ask --backoff 200ms --backoff-max 200ms "hit the limit")
wait_state "$id" succeeded 90
assert_eq "failed|rate_limit;succeeded|" \
	"$(attempts_of "$id" outcome category | paste -sd';')" \
	"attempts"
tq resume claude >/dev/null 2>&1 || true

check "--isolate: the agent runs in a fresh workspace that is removed after"
mock_mode slow:4
echo "some notes" >"$TQ_TMP/notes.txt"
id=$(ask --isolate --source notes="$TQ_TMP/notes.txt" --retries 0 "read the notes")
wait_for "[ -n \"\$(task_pid $id)\" ]" 30 || fail "task $id did not start"
pid=$(task_pid "$id")
ws=$(readlink "/proc/$pid/cwd")
case $ws in
"$TASKQ_HOME"/work/taskq-*) ;;
*) fail "the agent's cwd is $ws, not a workspace under $TASKQ_HOME/work" ;;
esac
[ -L "$ws/notes" ] && [ "$(cat "$ws/notes")" = "some notes" ] || fail "the source is not linked in $ws"
[ -f "$ws/prompt.md" ] || fail "no prompt.md in $ws"
[ -f "$ws/.mcp.json" ] || fail "no empty .mcp.json in $ws"
wait_state "$id" succeeded 90
wait_for "[ ! -e '$ws' ]" 10 || fail "workspace $ws left behind"

cd "$TQ_TMP" || exit 1
mock_stop
echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
