#!/usr/bin/env bash
# test_ask_real_clis.sh - issue 17 through the REAL CLIs (pinned, installed
# from npm by tests/agents/install-agent.sh; the test is skipped, exit 77,
# when one cannot be installed), driven by `taskq ask` with the built-in
# profiles, talking to the mock API on 127.0.0.1 (tests/agents/README.md):
#   - 17.7: `ask --wait` prints the answer, as `taskq result` does, for
#     claude and codex (--json: the result object), the id on stderr, and
#     exits with the task's status (a 401: claude's 1);
# Each claude or codex run takes 0.5-3 s here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

agent_bin claude
agent_bin codex
mock_start ok
codex_setup
PATH="$(agent_path claude codex):$PATH"
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

cd "$TQ_TMP" || exit 1
echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
