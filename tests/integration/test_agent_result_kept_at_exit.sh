#!/usr/bin/env bash
# test_agent_result_kept_at_exit.sh - an agent CLI's last lines reach taskq
# even when the CLI exits right after writing them.
#
# Claude Code, Gemini CLI (node) and OpenCode (bun) write stdout through a
# pipe asynchronously: a write the pipe cannot take at once waits in the
# process, and is lost when the process exits first (process.exit()). With
# taskq's 8 KiB output pipes the real claude 2.1.197 lost the result line of
# an answer of 16 KiB in 1 run of 3 (the task "succeeded" with no result, no
# cost and no session to resume) and of 64 KiB in 2 of 3. So an agent CLI's
# pipes hold 1 MiB. Checked here with a stand-in of node's behaviour that
# loses every time on a small pipe (a node script named claude: init line,
# half a second later a 300 KiB answer, a result line, process.exit; the
# worker widens and narrows a plain task's pipes as its streams speak, and
# must leave an agent's alone), through `taskq ask` and a
# plain `taskq submit -- claude ...`; with the real claude when installed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

NODE=$(command -v node || true)
[ -n "$NODE" ] || skip "node is not installed"

BIN="$TQ_TMP/bin"
mkdir -p "$BIN"
cat >"$BIN/claude" <<EOF
#!$NODE
const text = "kiwi ".repeat(60 * 1024) + "END";
const sid = "0b8e0f53-7c3b-4d2c-9d6c-0d5cbe5a0b11";
process.stdout.write(JSON.stringify({type: "system", subtype: "init", session_id: sid,
	model: "claude-stand-in"}) + "\n");
// the answer a moment later, as the real CLI's comes: the init line has
// been read by then (and the worker must not have resized the pipe for it)
setTimeout(() => {
	process.stdout.write(JSON.stringify({type: "assistant", session_id: sid,
		message: {content: [{type: "text", text: text}]}}) + "\n");
	process.stdout.write(JSON.stringify({type: "result", subtype: "success",
		is_error: false, result: text, session_id: sid, total_cost_usd: 0.5,
		num_turns: 1, duration_ms: 10}) + "\n");
	process.exit(0);
}, 500);
EOF
chmod +x "$BIN/claude"
PATH="$BIN:$PATH"
export PATH
cd "$TQ_TMP" || exit 1
serve_start 2

want=$((60 * 1024 * 5 + 3))

check "ask: the result line written just before exit is stored whole"
id=$("$TASKQ_BIN" ask --retries 0 "write a lot")
wait_state "$id" succeeded 60
assert_exit 0 tq result "$id"
assert_eq "$want" "$(head -c -1 "$TQ_OUT" | wc -c)" "result bytes"
assert_eq "0b8e0f53-7c3b-4d2c-9d6c-0d5cbe5a0b11" \
	"$(attempts_of "$id" agent_session)" "agent session (of its one attempt)"
assert_eq "3" "$(tq log "$id" | grep -c '"session_id"' || true)" "log: its three lines"

check "a plain submit of claude: the same"
id=$(submit_id --retries 0 -- claude -p "write a lot" --output-format stream-json --verbose)
wait_state "$id" succeeded 60
assert_exit 0 tq result "$id"
assert_eq "$want" "$(head -c -1 "$TQ_OUT" | wc -c)" "result bytes"

check "a plain command keeps its small pipes (the output-order bound)"
id=$(submit_id -- "$TQ_PYTHON" -c 'import fcntl; print(fcntl.fcntl(1, 1032))')
wait_state "$id" succeeded 30
assert_eq "8192" "$(tq log "$id")" "stdout pipe size"
cat >"$BIN/claude-size" <<EOF
#!/bin/sh
exec "$TQ_PYTHON" -c 'import fcntl; print(fcntl.fcntl(1, 1032), fcntl.fcntl(2, 1032))'
EOF
chmod +x "$BIN/claude-size"
ln -sf "$BIN/claude-size" "$BIN/gemini"
id=$(submit_id -- gemini)
wait_state "$id" succeeded 30
assert_eq "1048576 1048576" "$(tq log "$id" | tail -n 1)" "an agent CLI's pipe sizes"

if CLAUDE_REAL=$(HOME="$TQ_REAL_HOME" "$TQ_AGENTS_DIR/install-agent.sh" claude --check 2>/dev/null); then
	check "the real claude: a 64 KiB answer keeps its result, three times in three"
	mock_start echo
	export CLAUDE_CODE_MAX_RETRIES=0
	ln -sf "$CLAUDE_REAL" "$BIN/claude"
	"$TQ_PYTHON" -c 'print("A" * 65536)' >"$TQ_TMP/p64"
	ids=
	for _ in 1 2 3; do
		ids="$ids $("$TASKQ_BIN" ask --retries 0 --prompt-file "$TQ_TMP/p64")"
	done
	for id in $ids; do
		wait_state "$id" succeeded 120
		assert_exit 0 tq result "$id"
		[ "$(grep -o A "$TQ_OUT" | wc -l)" -ge 65536 ] ||
			fail "task $id: the result is cut: $(wc -c <"$TQ_OUT") bytes"
	done
else
	echo "(the real claude is not installed: its part skipped)"
fi

echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
