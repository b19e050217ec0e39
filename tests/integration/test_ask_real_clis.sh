#!/usr/bin/env bash
# test_ask_real_clis.sh - issue 17 through the REAL CLIs (pinned, installed
# from npm by tests/agents/install-agent.sh; the test is skipped, exit 77,
# when one cannot be installed), driven by `taskq ask` with the built-in
# profiles, talking to the mock API on 127.0.0.1 (tests/agents/README.md):
#   - 17.7: `ask --wait` prints the answer, as `taskq result` does, for
#     claude and codex (--json: the result object), the id on stderr, and
#     exits with the task's status (a 401: claude's 1);
#   - 17.3: each CLI's own retries are capped on every run, isolated or not,
#     through `taskq ask` and a plain `taskq submit -- CLI ...`, without
#     touching the user's files (compared byte for byte): one request for a
#     429 from gemini (10 attempts by default: ~3 min), one for a 503 from
#     codex with a custom provider (30 by default), one for a 429 from a
#     plain `claude -p` (11 by default); a gemini --session chain still
#     resumes through the overlaid ~/.gemini;
#   - 17.1: `ask --agent codex --isolate` does not start an MCP server of the
#     user's ~/.codex/config.toml (a stdio server that records that it
#     started), while the provider of that config still answers and a
#     --session resumes; without --isolate the server starts (the control);
#   - 17.9: codex and opencode name no model in their output: with none on
#     the command line, the one stored is the one their config gave the run
#     (the model of the request the mock received).
# Each claude or codex run takes 0.5-3 s here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

agent_bin claude
agent_bin codex
agent_bin gemini
agent_bin opencode
mock_start ok
codex_setup
gemini_setup
PATH="$(agent_path claude codex gemini opencode):$PATH"
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1
serve_start 2

check "17.7: claude: ask --wait prints the answer, the id on stderr, exit 0"
run "$TASKQ_BIN" ask --wait=90s --retries 0 "say hello"
assert_eq 0 "$TQ_RC" "exit status ($(err))"
assert_eq "Hello from the mock." "$(out)" "stdout: the answer, not stream-json"
id=$(head -n 1 "$TQ_ERR")
[[ $id =~ ^[0-9]+$ ]] || fail "stderr's first line is not the id: $(err)"
cp "$TQ_OUT" "$TQ_TMP/waited"
assert_exit 0 tq result "$id"
cmp -s "$TQ_OUT" "$TQ_TMP/waited" || fail "ask --wait and taskq result differ"

check "17.7: codex: ask --wait --json prints the result object"
run "$TASKQ_BIN" ask --agent codex --model gpt-mock --wait=90s --json --retries 0 "say hello"
assert_eq 0 "$TQ_RC" "exit status ($(err))"
assert_eq "Hello from the mock.|gpt-mock|False" \
	"$(out | pyjson '"%s|%s|%s" % (d["result"], d["model"], d["is_error"])')"
[[ $(out | pyjson 'd["agent_session"]') =~ ^[0-9a-f-]{36}$ ]] || fail "no codex thread id: $(out)"

check "17.7: claude: a 401 prints the error text, says why on stderr, exits 1"
mock_mode 401
run "$TASKQ_BIN" ask --wait=90s --retries 0 "say hello"
assert_eq 1 "$TQ_RC" "exit status ($(err))"
assert_eq "Invalid API key · Fix external API key" "$(out)"
assert_contains "$(err)" "failed: "
mock_mode ok

# att ID FIELD...: fields of task ID's last attempt, joined by '|'.
att() { attempt_field "$1" last "${@:2}"; }
cp "$HOME/.gemini/settings.json" "$TQ_TMP/gemini-settings.orig"
cp "$CODEX_CONFIG" "$TQ_TMP/codex-config.orig"

check "17.3: gemini (ask, not isolated): one request for a 429, classified, the user's settings untouched"
mock_mode 429
n0=$(mock_requests gemini)
id=$("$TASKQ_BIN" ask --agent gemini --model gemini-2.5-flash --retries 0 "hit the limit")
wait_state "$id" failed 90
assert_eq "$((n0 + 1))" "$(mock_requests gemini)" "gemini requests"
assert_eq "rate_limit" "$(att "$id" category)" "category"
cmp -s "$HOME/.gemini/settings.json" "$TQ_TMP/gemini-settings.orig" || fail "~/.gemini/settings.json changed"
tq resume gemini >/dev/null 2>&1 || true

check "17.3: gemini (plain submit): one request for a 429"
n0=$(mock_requests gemini)
id=$(submit_id --retries 0 -- gemini -m gemini-2.5-flash --output-format stream-json --prompt=hi)
wait_state "$id" failed 90
assert_eq "$((n0 + 1))" "$(mock_requests gemini)" "gemini requests"
tq resume gemini >/dev/null 2>&1 || true

check "17.3: gemini --session still resumes through the overlaid home"
mock_mode ok
s1=$("$TASKQ_BIN" ask --agent gemini --model gemini-2.5-flash --session g --retries 0 "remember kiwi")
s2=$("$TASKQ_BIN" ask --agent gemini --model gemini-2.5-flash --session g --retries 0 "which word")
wait_state "$s1" succeeded 90
wait_state "$s2" succeeded 90
assert_eq "$(att "$s1" agent_session)" "$(att "$s2" agent_session)" "the second resumed the first"
mock_request_has -1 "remember kiwi" || fail "the resumed request lacks the first turn"
[ -z "$(ls "$TASKQ_HOME/work")" ] || fail "private directories left: $(ls "$TASKQ_HOME/work")"

check "17.3: codex (ask and plain submit): one request for a 503, the user's config untouched"
mock_mode 503
n0=$(mock_requests openai)
id=$("$TASKQ_BIN" ask --agent codex --retries 0 "overloaded")
wait_state "$id" failed 90
assert_eq "$((n0 + 1))" "$(mock_requests openai)" "codex requests (ask)"
assert_eq "overload" "$(att "$id" category)" "category"
n0=$(mock_requests openai)
id=$(submit_id --retries 0 -- codex exec --json --skip-git-repo-check -- overloaded)
wait_state "$id" failed 90
assert_eq "$((n0 + 1))" "$(mock_requests openai)" "codex requests (submit)"
assert_eq "gpt-mock" "$(att "$id" model)" "the model of the user's config (17.9)"
assert_eq "gpt-mock" "$(mock_request -1 'd["body"]["model"]')" "the model codex sent"
cmp -s "$CODEX_CONFIG" "$TQ_TMP/codex-config.orig" || fail "config.toml changed"
tq resume codex >/dev/null 2>&1 || true

# A stdio MCP server that records each start (cwd, args), then answers
# initialize and tools/list.
{
	echo "#!$(command -v "$TQ_PYTHON")"
	cat <<'PY'
import json, os, sys
with open(os.environ["MCP_REC"], "a") as f:
    f.write("started cwd=%s args=%s\n" % (os.getcwd(), sys.argv[1:]))
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m:
        continue
    if m.get("method") == "initialize":
        r = {"protocolVersion": m.get("params", {}).get("protocolVersion", "2024-11-05"),
             "capabilities": {"tools": {}}, "serverInfo": {"name": "rec", "version": "1"}}
    elif m.get("method") == "tools/list":
        r = {"tools": []}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
PY
} >"$TQ_TMP/mcp_rec.py"
chmod +x "$TQ_TMP/mcp_rec.py"
MCP_REC="$TQ_TMP/mcp.rec"
cat >>"$CODEX_CONFIG" <<TOML

[mcp_servers.rec]
command = "$TQ_TMP/mcp_rec.py"
args = ["user-mcp"]

[mcp_servers.rec.env]
MCP_REC = "$MCP_REC"

[projects."$TQ_TMP/work"]
trust_level = "trusted"
TOML
cp "$CODEX_CONFIG" "$TQ_TMP/codex-config.orig"

check "17.1: codex without --isolate starts the user's MCP server (the control)"
mock_mode ok
rm -f "$MCP_REC"
id=$("$TASKQ_BIN" ask --agent codex --retries 0 "hello")
wait_state "$id" succeeded 90
grep -q "started .*user-mcp" "$MCP_REC" 2>/dev/null || fail "the MCP server did not start without --isolate"

check "17.1: codex --isolate: the user's MCP server does not start; the provider answers; a session resumes"
rm -f "$MCP_REC"
n0=$(mock_requests openai)
s1=$("$TASKQ_BIN" ask --agent codex --isolate --session iso --retries 0 "remember kiwi")
s2=$("$TASKQ_BIN" ask --agent codex --isolate --session iso --retries 0 "which word")
wait_for "[ \"\$(state_of $s2)\" = succeeded ] || [ \"\$(state_of $s2)\" = failed ]" 90 || true
[ "$(state_of "$s1")|$(state_of "$s2")" = "succeeded|succeeded" ] ||
	fail "codex --isolate: $(tq log "$s1" | tail -3; tq log "$s2" | head -30)"
[ ! -e "$MCP_REC" ] || fail "the user's MCP server started under --isolate: $(cat "$MCP_REC")"
assert_eq "$((n0 + 2))" "$(mock_requests openai)" "requests to the user's provider"
assert_eq "Hello from the mock." "$(att "$s1" result)"
assert_eq "$(att "$s1" agent_session)" "$(att "$s2" agent_session)" "the second resumed the first"
mock_request_has -1 "remember kiwi" || fail "the resumed request lacks the first turn"
cmp -s "$CODEX_CONFIG" "$TQ_TMP/codex-config.orig" || fail "config.toml changed"
[ -z "$(ls "$TASKQ_HOME/work")" ] || fail "private directories left: $(ls "$TASKQ_HOME/work")"

check "17.3: claude (plain submit, no CLAUDE_CODE_MAX_RETRIES): one request for a 429"
mock_mode 429
n0=$(mock_requests anthropic)
id=$(submit_id --retries 0 -- claude -p hi --output-format stream-json --verbose)
wait_state "$id" failed 90
assert_eq "$((n0 + 1))" "$(mock_requests anthropic)" "claude requests"
mock_mode ok

check "17.9: opencode (ask, no --model): the stored model is the one its config gave the run, as sent"
opencode_setup
n0=$(mock_requests)
id=$("$TASKQ_BIN" ask --agent opencode --retries 0 "hello")
wait_state "$id" succeeded 120
# opencode 1.18 sends two requests for a prompt (a title, the answer)
n1=$(mock_requests)
[ "$n1" -gt "$n0" ] || fail "opencode sent no request"
for ((n = n0 + 1; n <= n1; n++)); do
	assert_eq "anthropic claude-mock" "$(mock_request "$n" 'd["api"] + " " + d["body"]["model"]')" \
		"the API and model of opencode's request $n"
done
assert_eq "mockant/claude-mock" "$(att "$id" model)" "the model of the user's opencode.json"

cd "$TQ_TMP" || exit 1
echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
