#!/usr/bin/env bash
# test_sessions_cmd.sh - `taskq sessions [--json]` and `taskq sessions close
# KEY` (issue 19), with the fake agents (tests/fixtures/fakeagent):
#   - the list: every session, its agent, the agent session its next message
#     resumes, its directory, no warm process ("-", null), its messages
#     (its tasks) and cost (summed over their attempts; null when none
#     reported), as a table and as --json with every field;
#   - close: a session with no warm process says so, exit 0, and stores
#     nothing; an unknown key is one line, exit 2 (as an unknown task id);
#     bad usage is one line, exit 2.
# A warm process ended by close, through the runtime: test_warm_*.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
cd "$TQ_TMP" || exit 1

check "no session yet: an empty list"
tq list >/dev/null 2>&1 || true
assert_exit 0 tq submit --no-start -- true
assert_exit 0 tq sessions
assert_eq "" "$(out)" "no table without a session"
assert_exit 0 tq sessions --json
assert_eq "[]" "$(out)"

check "two messages of a claude session, one of a plain command's: messages and cost"
serve_start 1
a=$(tq ask --session chat --retries 0 "one")
b=$(tq ask --session chat --retries 0 "two")
p=$(tq submit --session plain -- true)
wait_state "$a" succeeded
wait_state "$b" succeeded
wait_state "$p" succeeded
sid=$(attempts_of "$b" agent_session)
[ -n "$sid" ] || fail "task $b reported no agent session"
assert_exit 0 tq sessions --json
assert_eq '["agent", "agent_session", "close_requested_at", "cost_usd", "cwd", "idle_since", "idle_timeout_ms", "key", "last_task_id", "messages", "updated_at", "warm_at", "warm_node", "warm_pid", "warm_start"]' \
	"$(out | pyjson 'sorted(d[0].keys())')" "the fields of a session"
assert_eq "[\"chat\", \"claude\", \"$sid\", \"$TQ_TMP\", $b, 2, null, null]" \
	"$(out | pyjson '[d[0][k] for k in ("key", "agent", "agent_session", "cwd", "last_task_id", "messages", "warm_pid", "idle_since")]')"
cost_a=$(attempts_of "$a" cost_usd)
cost_b=$(attempts_of "$b" cost_usd)
assert_eq "$("$TQ_PYTHON" -c "print(round($cost_a + $cost_b, 6))")" \
	"$(out | pyjson 'round(d[0]["cost_usd"], 6)')" "chat's cost: its two attempts'"
assert_eq '["plain", null, null, 1, null]' \
	"$(out | pyjson '[d[1][k] for k in ("key", "agent", "agent_session", "messages", "cost_usd")]')"
assert_exit 0 tq sessions
assert_eq "KEY AGENT SESSION DIRECTORY WARM IDLE MESSAGES COST" "$(out | head -1 | tr -s ' ')" \
	"the table's header"
assert_contains "$(out)" "chat"
assert_contains "$(out)" "$sid"
assert_eq "-" "$(out | awk '$1 == "plain" { print $5 }')" "plain's WARM"
assert_eq "1" "$(out | awk '$1 == "plain" { print $7 }')" "plain's MESSAGES"
assert_eq "2" "$(out | awk '$1 == "chat" { print $7 }')" "chat's MESSAGES"

check "close: no warm process is said, exit 0; nothing stored"
assert_exit 0 tq sessions close chat
assert_eq 'session "chat": no warm process' "$(out)"
assert_eq "" "$(err)"
assert_eq null "$(tq sessions --json | pyjson 'd[0]["close_requested_at"]')"
assert_exit 0 tq sessions close chat --no-wait
assert_eq 'session "chat": no warm process' "$(out)"

check "close: an unknown key, bad usage: one line, exit 2"
assert_exit 2 tq sessions close nope
assert_one_line_error
assert_contains "$(err)" 'session "nope": no such session'
assert_exit 2 tq sessions close
assert_one_line_error
assert_exit 2 tq sessions shut chat
assert_one_line_error
assert_contains "$(err)" 'unknown subcommand "shut"'
assert_exit 2 tq sessions close chat extra
assert_one_line_error
assert_exit 2 tq sessions --no-wait
assert_one_line_error
assert_exit 0 tq help sessions
assert_contains "$(out)" "taskq sessions close KEY"
