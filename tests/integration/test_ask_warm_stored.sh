#!/usr/bin/env bash
# test_ask_warm_stored.sh - issue 19's surface at submit, what is stored and
# what is refused before anything is (the runtime that keeps the process
# up: test_warm_*.sh):
#   - `ask --session KEY --warm [--idle-timeout DUR]`: show --json and list
#     --json say warm and the idle timeout (default 10m), show says it;
#   - a profile's "warm": true makes a session's messages warm ("idle_timeout"
#     its default), --no-warm a cold one, a message without --session is
#     not warm;
#   - --warm for gemini, opencode and codex is stored warm as claude's is
#     (each CLI has a stream-input mode: research agent-clis.md 4.1-6.1);
#   - refused with one line, exit 2, nothing stored: --warm without
#     --session, --idle-timeout without a warm task, a bad --idle-timeout,
#     --warm for a profile that runs no agent taskq knows ("parser":
#     "none"; the line names the profile), --warm with --interactive;
#   - serve --max-warm N (1-256) and the config's "max_warm": the running
#     supervisor's in status --json; out of range or not a whole number:
#     one line, exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

cd "$TQ_TMP" || exit 1
warm_of() { tq show --json "$1" | pyjson '[d["warm"], d["idle_timeout_ms"], d["session"]]'; }

check "ask --session --warm: stored warm, the default idle timeout 10m"
assert_exit 0 tq ask --no-start --session s1 --warm "hello"
a=$(out)
assert_eq '[true, 600000, "s1"]' "$(warm_of "$a")"
assert_exit 0 tq show "$a"
assert_contains "$(out)" "warm:         yes, idle timeout 10m"
assert_eq '[true, 600000]' \
	"$(tq list --json | pyjson "[[t['warm'], t['idle_timeout_ms']] for t in d if t['id'] == $a][0]")" \
	"list --json"

check "--idle-timeout 90s; a cold message of the same session is not warm"
assert_exit 0 tq ask --no-start --session s1 --warm --idle-timeout 90s "again"
b=$(out)
assert_eq '[true, 90000, "s1"]' "$(warm_of "$b")"
assert_exit 0 tq ask --no-start --session s1 "cold"
c=$(out)
assert_eq '[false, null, "s1"]' "$(warm_of "$c")"
assert_exit 0 tq show "$c"
assert_contains "$(out)" "warm:         no"

check "--warm for gemini, opencode and codex: stored warm"
for agent in gemini opencode codex; do
	assert_exit 0 tq ask --no-start --agent "$agent" --session "s-$agent" --warm "hi"
	assert_eq "[true, 600000, \"s-$agent\"]" "$(warm_of "$(out)")" "$agent"
done

check "refused with one line, exit 2, nothing stored"
n=$(task_count)
assert_exit 2 tq ask --no-start --warm "no session"
assert_one_line_error
assert_contains "$(err)" "--warm needs --session KEY"
assert_exit 2 tq ask --no-start --session s1 --idle-timeout 5m "not warm"
assert_one_line_error
assert_contains "$(err)" "--idle-timeout is for a warm task"
assert_exit 2 tq ask --no-start --session s1 --warm --idle-timeout soon "bad"
assert_one_line_error
assert_contains "$(err)" "--idle-timeout: "
assert_exit 2 tq ask --no-start --session s1 --warm --idle-timeout 0 "zero"
assert_one_line_error
cat >"$TQ_TMP/plain.json" <<'JSON'
{"profiles": {"plain": {"command": ["sh", "-c", "echo {prompt}"], "parser": "none"}}}
JSON
assert_exit 2 env TASKQ_CONFIG="$TQ_TMP/plain.json" "$TASKQ_BIN" ask --no-start --agent plain \
	--session s-plain --warm "hi"
assert_one_line_error
assert_contains "$(err)" '--warm: profile plain runs no agent taskq knows ("parser": "none")'
assert_exit 2 tq ask --interactive --session s1 --warm
assert_one_line_error
assert_contains "$(err)" "--warm does not apply to --interactive"
assert_eq "$n" "$(task_count)" "tasks stored"

check "a profile's \"warm\": true: a session's messages are warm, with its idle timeout"
cat >"$TQ_TMP/config.json" <<'JSON'
{"profiles": {"hot": {"extends": "claude", "warm": true, "idle_timeout": "2m"},
              "gem": {"extends": "gemini", "warm": true},
              "cod": {"extends": "codex", "warm": true}}}
JSON
export TASKQ_CONFIG="$TQ_TMP/config.json"
assert_exit 0 tq ask --no-start --agent hot --session s2 "profile"
assert_eq '[true, 120000, "s2"]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent hot --session s2 --idle-timeout 30s "mine"
assert_eq '[true, 30000, "s2"]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent hot --session s2 --no-warm "cold"
assert_eq '[false, null, "s2"]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent hot "no session"
assert_eq '[false, null, null]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent gem --session s3 "warm gemini"
assert_eq '[true, 600000, "s3"]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent gem --session s3 --no-warm "cold gemini"
assert_eq '[false, null, "s3"]' "$(warm_of "$(out)")"
assert_exit 0 tq ask --no-start --agent cod --session s5 "warm codex"
assert_eq '[true, 600000, "s5"]' "$(warm_of "$(out)")"
cat >"$TQ_TMP/config.json" <<'JSON'
{"profiles": {"plainwarm": {"command": ["sh", "-c", "echo {prompt}"], "parser": "none",
                            "warm": true}}}
JSON
assert_exit 2 tq ask --no-start --agent plainwarm --session s6 "warm plain"
assert_one_line_error
assert_contains "$(err)" "--warm: profile plainwarm runs no agent taskq knows"
assert_contains "$(err)" "use --no-warm"
echo '{"profiles": {"bad": {"extends": "claude", "warm": "yes"}}}' >"$TQ_TMP/config.json"
assert_exit 2 tq ask --no-start --agent bad --session s4 "x"
assert_one_line_error
assert_contains "$(err)" '"warm" must be true or false'

check "submit --file: an agent line's \"warm\" and \"idle_timeout\"; a bad one refused with its line"
unset TASKQ_CONFIG
printf '%s\n' '{"prompt":"one","session":"f","warm":true}' \
	'{"prompt":"two","session":"f","warm":true,"idle_timeout":"1m"}' \
	'{"prompt":"three","session":"f","warm":false}' >"$TQ_TMP/lines.jsonl"
assert_exit 0 tq submit --no-start --file "$TQ_TMP/lines.jsonl"
read -r l1 l2 l3 <<<"$(out | tr '\n' ' ')"
assert_eq '[true, 600000, "f"]' "$(warm_of "$l1")"
assert_eq '[true, 60000, "f"]' "$(warm_of "$l2")"
assert_eq '[false, null, "f"]' "$(warm_of "$l3")"
n=$(task_count)
for bad in '{"prompt":"x","warm":true}' \
	'{"prompt":"x","session":"f","idle_timeout":"5m"}' \
	'{"prompt":"x","session":"f","warm":true,"idle_timeout":0}' \
	'{"prompt":"x","session":"f","warm":"yes"}'; do
	printf '%s\n' '{"prompt":"fine","session":"f"}' "$bad" >"$TQ_TMP/bad.jsonl"
	assert_exit 2 tq submit --no-start --file "$TQ_TMP/bad.jsonl"
	assert_one_line_error
	assert_contains "$(err)" "bad.jsonl:2"
done
assert_eq "$n" "$(task_count)" "tasks stored"
export TASKQ_CONFIG="$TQ_TMP/config.json"

check "serve --max-warm: out of range refused; the config's max_warm checked too"
echo '{}' >"$TQ_TMP/config.json"
for v in 0 257 -1 4.5 many; do
	assert_exit 2 tq serve --foreground --max-warm "$v"
	assert_one_line_error
	assert_contains "$(err)" "--max-warm"
done
for v in 0 4.5 1e9 '"4"'; do
	echo "{\"max_warm\": $v}" >"$TQ_TMP/config.json"
	assert_exit 2 tq serve --foreground
	assert_one_line_error
	assert_contains "$(err)" "\"max_warm\""
done

check "the running supervisor's max_warm: --max-warm, else the config's, else 4"
echo '{"max_warm": 7}' >"$TQ_TMP/config.json"
serve_start 1
assert_eq 7 "$(tq status --json | pyjson 'd["max_warm"]')" "from the config"
assert_exit 0 tq status
assert_contains "$(out)" "0 warm agents (at most 7)"
assert_eq 0 "$(tq status --json | pyjson 'd["warm_agents"]')" "warm agents recorded"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
serve_start 1 --max-warm 12
assert_eq 12 "$(tq status --json | pyjson 'd["max_warm"]')" "--max-warm over the config"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
echo '{}' >"$TQ_TMP/config.json"
serve_start 1
assert_eq 4 "$(tq status --json | pyjson 'd["max_warm"]')" "the default"
