#!/usr/bin/env bash
# test_agent_clis_real.sh - the real Gemini CLI 0.61.0, Codex 0.169.0 and
# OpenCode 1.18.33 (pinned, tests/agents/install-agent.sh; the test is
# skipped, exit 77, when one cannot be installed) run offline against the
# mock API (tests/agents/mock_api.py) on 127.0.0.1, pointed at it as
# tests/agents/README.md says (gemini_setup, codex_setup, opencode_setup),
# without taskq:
#   - each reports its pinned version;
#   - each answers a prompt from the mock: gemini stream-json (init, the
#     assistant message, a success result), codex --json (thread.started
#     with a uuid, agent_message, turn.completed), opencode --format json
#     (step_start, text, step_finish; a ses_ session id);
#   - each runs the mock's shell tool call, and the tool's child sees the
#     marker variables the CLI sets (GEMINI_CLI=1; CODEX_THREAD_ID; OPENCODE=1
#     and AGENT=1), which taskq's scrub list (agent-env.json) must remove;
#   - gemini 429 with general.maxAttempts 1 in ~/.gemini/settings.json exits
#     173 with a stream-json error result (gemini 0.61 reads a system
#     settings file only when root owns it and every directory above it);
#     codex capped with -c model_providers.mock.*_max_retries=0 makes one
#     request for a 503.
# Each run takes 0.5-3 s (opencode 5-12 s): the test 30-60 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"

agent_bin gemini
agent_bin codex
agent_bin opencode
mock_start ok
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

# jfield TYPE EXPR: EXPR (Python, over d) of the last JSON line of $TQ_OUT
# whose "type" is TYPE.
jfield() {
	"$TQ_PYTHON" - "$TQ_OUT" "$1" "$2" <<'EOF'
import json, sys
last = None
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and d.get("type") == sys.argv[2]:
        last = d
if last is None:
    sys.exit("no %s line in %s" % (sys.argv[2], sys.argv[1]))
d = last
r = eval(sys.argv[3])
print(json.dumps(r) if isinstance(r, (list, dict, bool)) or r is None else r)
EOF
}

check "versions"
agent_run gemini --version
assert_eq "0.61.0" "$(out)" "gemini --version"
agent_run codex --version
assert_contains "$(out)" "0.169.0" "codex --version"
agent_run opencode --version
assert_eq "1.18.33" "$(out)" "opencode --version"

check "gemini: a stream-json answer from the mock"
gemini_setup
n0=$(mock_requests gemini)
agent_run gemini -m gemini-2.5-flash --output-format stream-json --prompt=hello
assert_eq 0 "$TQ_RC" "gemini exit status; stderr: $(err)"
assert_eq "success" "$(jfield result 'd["status"]')"
assert_eq "Hello from the mock." "$(jfield message 'd["content"]')"
assert_eq "gemini-2.5-flash" "$(jfield init 'd["model"]')"
[[ $(jfield init 'd["session_id"]') =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] ||
	fail "gemini session id is not a uuid: $(jfield init 'd["session_id"]')"
assert_eq "$((n0 + 1))" "$(mock_requests gemini)" "gemini requests"
mock_request_has -1 hello || fail "the mock did not get gemini's prompt"

check "gemini: its shell tool's child has GEMINI_CLI=1"
mock_mode tool
mock_tool_command "env > '$TQ_TMP/gemini-child.env'"
agent_run gemini -m gemini-2.5-flash --output-format stream-json --yolo --prompt=run
assert_eq 0 "$TQ_RC" "gemini exit status; stderr: $(err)"
grep -qx GEMINI_CLI=1 "$TQ_TMP/gemini-child.env" || fail "no GEMINI_CLI=1 in the tool's environment"

check "gemini: 429 with one attempt (general.maxAttempts) exits 173, a stream-json error result"
mock_mode 429
printf '%s\n' '{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":1}}' \
	>"$HOME/.gemini/settings.json"
n0=$(mock_requests gemini)
agent_run gemini -m gemini-2.5-flash --output-format stream-json --prompt=hello
assert_eq 173 "$TQ_RC" "gemini exit status for a 429"
assert_eq "error" "$(jfield result 'd["status"]')"
assert_eq "$((n0 + 1))" "$(mock_requests gemini)" "requests with maxAttempts 1"

check "codex: an --json answer from the mock"
mock_mode ok
codex_setup
agent_run codex exec --json --skip-git-repo-check -- hello
assert_eq 0 "$TQ_RC" "codex exit status; stderr: $(err)"
assert_eq "Hello from the mock." "$(jfield item.completed 'd["item"]["text"]')"
[[ $(jfield thread.started 'd["thread_id"]') =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] ||
	fail "codex thread id is not a uuid: $(jfield thread.started 'd["thread_id"]')"
assert_eq 6 "$(jfield turn.completed 'd["usage"]["output_tokens"]')"

check "codex: its exec_command tool's child has CODEX_THREAD_ID"
mock_mode tool
mock_tool_command "env > '$TQ_TMP/codex-child.env'"
agent_run codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -- run
assert_eq 0 "$TQ_RC" "codex exit status; stderr: $(err)"
grep -q '^CODEX_THREAD_ID=' "$TQ_TMP/codex-child.env" || fail "no CODEX_THREAD_ID in the tool's environment"

check "codex: a 503 with its provider's retries capped by -c is one request"
mock_mode 503
n0=$(mock_requests openai)
agent_run codex -c model_providers.mock.request_max_retries=0 \
	-c model_providers.mock.stream_max_retries=0 exec --json --skip-git-repo-check -- hello
assert_eq 1 "$TQ_RC" "codex exit status for a 503"
assert_contains "$(jfield turn.failed 'd["error"]["message"]')" "503 Service Unavailable"
assert_eq "$((n0 + 1))" "$(mock_requests openai)" "codex requests"

check "opencode: a json answer from the mock"
mock_mode ok
opencode_setup
agent_run opencode run --format json -- hello
assert_eq 0 "$TQ_RC" "opencode exit status; stderr: $(err)"
assert_eq "Hello from the mock." "$(jfield text 'd["part"]["text"]')"
[[ $(jfield step_finish 'd["sessionID"]') =~ ^ses_[0-9A-Za-z]+$ ]] ||
	fail "opencode session id is not ses_...: $(jfield step_finish 'd["sessionID"]')"

check "opencode: its bash tool's child has OPENCODE=1 and AGENT=1"
mock_mode tool
mock_tool_command "env > '$TQ_TMP/opencode-child.env'"
agent_run opencode run --format json -- run
assert_eq 0 "$TQ_RC" "opencode exit status; stderr: $(err)"
grep -qx OPENCODE=1 "$TQ_TMP/opencode-child.env" || fail "no OPENCODE=1 in the tool's environment"
grep -qx AGENT=1 "$TQ_TMP/opencode-child.env" || fail "no AGENT=1 in the tool's environment"

cd "$TQ_TMP" || exit 1
mock_stop
echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
