#!/usr/bin/env bash
# test_ask_wait.sh - issue 17.7 with the fake agent: `taskq ask --wait`
# prints what `taskq result` prints (the answer; with --json the result
# object), not the agent's raw stream-json; the task id goes to stderr at
# once; it exits with the task's status (the agent's exit code, 124 for a
# timed-out task), with one line on stderr when the task did not succeed;
# a wait that runs out says how to get the result later and exits 124.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
cd "$TQ_TMP" || exit 1
serve_start 2

check "ask --wait: the answer on stdout, exactly what taskq result prints; the id on stderr"
run "$TASKQ_BIN" ask --wait --retries 0 "say hello"
assert_eq 0 "$TQ_RC" "exit status ($(err))"
assert_eq "Hello from fakeagent." "$(out)" "stdout"
id=$(head -n 1 "$TQ_ERR")
[[ $id =~ ^[0-9]+$ ]] || fail "stderr's first line is not the id: $(err)"
assert_eq 1 "$(wc -l <"$TQ_ERR")" "stderr lines"
cp "$TQ_OUT" "$TQ_TMP/waited"
assert_exit 0 tq result "$id"
cmp -s "$TQ_OUT" "$TQ_TMP/waited" || fail "ask --wait and taskq result differ"

check "ask --wait --json: the result object of taskq result --json"
run "$TASKQ_BIN" ask --wait --json --agent codex --model gpt-5 --retries 0 "say hello"
assert_eq 0 "$TQ_RC" "exit status ($(err))"
id=$(head -n 1 "$TQ_ERR")
assert_eq "$id|Hello from fakeagent.|False|gpt-5" \
	"$(out | pyjson '"%s|%s|%s|%s" % (d["id"], d["result"], d["is_error"], d["model"])')"
cp "$TQ_OUT" "$TQ_TMP/waited"
assert_exit 0 tq result "$id" --json
cmp -s "$TQ_OUT" "$TQ_TMP/waited" || fail "ask --wait --json and taskq result --json differ"

check "a failed agent: its error text, a line on stderr, and its exit status"
fake_agent_args claude --mode rate_limit
run "$TASKQ_BIN" ask --wait --retries 0 "say hello"
assert_eq 1 "$TQ_RC" "exit status: claude's 1"
assert_contains "$(out)" "API Error: Request rejected (429)"
id=$(head -n 1 "$TQ_ERR")
assert_contains "$(sed -n 2p "$TQ_ERR")" "taskq: ask: task $id failed: "
fake_agent_args claude

check "a timed-out agent: 124"
fake_agent_args claude --sleep 30
run "$TASKQ_BIN" ask --wait --timeout 1s --retries 0 "say hello"
assert_eq 124 "$TQ_RC" "exit status ($(err))"
assert_contains "$(err)" "timed_out"

check "--wait=DUR runs out: how to get the result later, 124"
run "$TASKQ_BIN" ask --wait=1s --retries 0 "say hello"
assert_eq 124 "$TQ_RC" "exit status ($(err))"
id=$(head -n 1 "$TQ_ERR")
assert_contains "$(err)" "task $id is still running; taskq result $id once it ends"
assert_eq "" "$(out)" "stdout"
tq kill "$id" >/dev/null 2>&1 || true
fake_agent_args claude

echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
