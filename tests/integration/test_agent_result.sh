#!/usr/bin/env bash
# test_agent_result.sh - issue 7, results, end to end: the fake agent
# (tests/fixtures/fakeagent) as claude, gemini, codex and opencode, each
# submitted as a plain command (the runner picks the parser from the
# program's name) and run by a supervisor with real workers. Each agent's
# result text, cost, tokens, model and session id are stored on the attempt
# (read back with taskq show --json and checked against what the agent
# printed), and shown by `taskq result` (text and --json), `taskq list`
# (COST), `taskq show` and `taskq stats`. Also: a result after 5 MB of other
# output, an error result, a command that is not an agent printing JSON,
# text output (no result), and the exit codes of `taskq result`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

cd "$TQ_TMP" || exit 1

# The fake is a python3 script: the system python first on PATH.
mkdir -p "$TQ_TMP/pybin"
ln -sfn "$(command -v "$TQ_PYTHON")" "$TQ_TMP/pybin/python3"
PATH="$TQ_TMP/pybin:$(fake_agents_path):$PATH"
export PATH

# Every fake answers with its name and the prompt; keys in random order
# (the default), so the parser is read by key.
for n in claude gemini codex opencode; do
	fake_agent_args "$n" --result "$n says {prompt}"
done

serve_start 2

# att ID FIELD...: fields of task ID's last attempt (show --json), joined by
# '|': NULL for null, or for a result's field when there is no result; 0 and
# 1 for false and true.
att() {
	local id=$1
	shift
	tq show "$id" --json | "$TQ_PYTHON" -c '
import json, sys
a = json.load(sys.stdin)["attempts"][-1]
result = sys.argv[1].split(",")
def text(k):
    v = a[k] if k in a or k not in result else None
    return "NULL" if v is None else str(int(v)) if isinstance(v, bool) else str(v)
print("|".join(text(k) for k in sys.argv[2:]))
' "$TQ_RESULT_FIELDS" "$@"
}

check "every agent's output parsed, submitted as a plain command"
C1=$(submit_id -- claude -p one --output-format stream-json --verbose)
C2=$(submit_id --batch b1 -- claude -p two --output-format json)
G1=$(submit_id --batch b1 -- gemini -p three -o json)
G2=$(submit_id -- gemini -p four -o stream-json)
X1=$(submit_id -- codex exec --json five)
O1=$(submit_id -- opencode run --format json six)
# 5 MB of other output first: the result line after it still counts
BIG=$(submit_id -- claude --flood 5M -p big --output-format stream-json --verbose)
# an error result (not retried): stored, is_error
ERR=$(submit_id --retries 0 -- claude --mode max_turns -p seven --output-format stream-json --verbose)
# a program that is not an agent, printing a claude result line: not parsed
PLAIN=$(submit_id -- sh -c 'echo "{\"type\":\"result\",\"result\":\"fake\",\"is_error\":false}"')
# claude's text output: no result
TEXT=$(submit_id -- claude -p eight)
for id in $C1 $C2 $G1 $G2 $X1 $O1 $BIG $PLAIN $TEXT; do
	wait_state "$id" succeeded 40
done
wait_state "$ERR" failed 40

check "claude stream-json: text, cost, tokens, model, session id = what it printed"
assert_eq "claude says one|0|0.00021|12|6|0|0|1|claude-opus-4-8[1m]|success" \
	"$(att "$C1" result is_error cost_usd input_tokens output_tokens cache_read_tokens \
		cache_creation_tokens num_turns model subtype)"
tq log "$C1" --stream stdout --offset 0 >"$TQ_TMP/c1.out"
want=$(last_result "$TQ_TMP/c1.out" | pyjson 'd["session_id"]')
assert_eq "$want" "$(att "$C1" agent_session)" "claude session id"
assert_contains "$want" "-" "a uuid"

check "claude json"
assert_eq "claude says two|0|0.00021|12|6" \
	"$(att "$C2" result is_error cost_usd input_tokens output_tokens)"
[ "$(att "$C2" agent_session)" != NULL ] || fail "claude json: no session id"

check "gemini json (pretty-printed) and stream-json: no cost reported is NULL"
assert_eq "gemini says three|0|NULL|12|6|gemini-2.5-flash" \
	"$(att "$G1" result is_error cost_usd input_tokens output_tokens model)"
tq log "$G1" --stream stdout --offset 0 | pyjson 'd["session_id"]' >"$TQ_TMP/g1.sid"
assert_eq "$(cat "$TQ_TMP/g1.sid")" "$(att "$G1" agent_session)" "gemini session id"
assert_eq "gemini says four|0|NULL|12|6|gemini-2.5-flash|success" \
	"$(att "$G2" result is_error cost_usd input_tokens output_tokens model subtype)"

check "codex --json: the agent message, the thread id, usage"
assert_eq "codex says five|0|NULL|12|6|1" \
	"$(att "$X1" result is_error cost_usd input_tokens output_tokens num_turns)"
want=$(tq log "$X1" --stream stdout --offset 0 | "$TQ_PYTHON" -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if d.get("type") == "thread.started":
        print(d["thread_id"])')
assert_eq "$want" "$(att "$X1" agent_session)" "codex thread id"

check "opencode json: the text, its cost (0), the session id"
assert_eq "opencode says six|0|0|12|6" \
	"$(att "$O1" result is_error cost_usd input_tokens output_tokens)"
assert_contains "$(att "$O1" agent_session)" "ses_"

check "a result after 5 MB of other output"
assert_eq "claude says big|0.00021" "$(att "$BIG" result cost_usd)"

check "an error result is stored, is_error, its errors as the text"
assert_eq "Reached maximum number of turns (1)|1|error_max_turns" \
	"$(att "$ERR" result is_error subtype)"

check "no result: a plain command printing JSON, claude text output"
assert_eq "NULL|NULL" "$(att "$PLAIN" result is_error)"
assert_eq "NULL|NULL" "$(att "$TEXT" result is_error)"
assert_eq "$(tq log "$PLAIN")" '{"type":"result","result":"fake","is_error":false}' \
	"the output is in the log as printed"

check "taskq result prints the text; --json every field"
assert_exit 0 tq result "$C1"
assert_eq "claude says one" "$(out)"
assert_exit 0 tq result "$G1"
assert_eq "gemini says three" "$(out)"
assert_exit 0 tq result "$ERR"
assert_eq "Reached maximum number of turns (1)" "$(out)"
assert_exit 0 tq result "$C1" --json
assert_eq "$C1|1|succeeded|claude says one|False|0.00021|12|6|claude-opus-4-8[1m]|$(att "$C1" agent_session)" \
	"$(out | pyjson '"|".join(str(d[k]) for k in ("id", "attempt", "state", "result", "is_error", "cost_usd", "input_tokens", "output_tokens", "model", "agent_session"))')"
assert_exit 0 tq result "$G1" --json
assert_eq "null" "$(out | pyjson 'd["cost_usd"]')" "gemini cost is null"

check "taskq result without a result: exit 1, one line; unknown id: exit 2"
assert_exit 1 tq result "$PLAIN"
assert_one_line_error
assert_contains "$(err)" "task $PLAIN has no result: its output had none (succeeded)"
assert_exit 1 tq result "$TEXT"
assert_one_line_error
assert_exit 2 tq result 9999
assert_one_line_error
assert_exit 2 tq result
assert_one_line_error
QUEUED=$(submit_id --delay 1h -- claude -p later --output-format json)
assert_exit 1 tq result "$QUEUED"
assert_contains "$(err)" "no result yet: it has not run"

check "taskq list shows COST (blank when none); list --json has cost_usd"
assert_exit 0 tq list
head -1 "$TQ_OUT" | grep -qE '^ID +STATE +NAME +STARTED +RUNTIME +EXIT +COST$' ||
	fail "list header: $(head -1 "$TQ_OUT")"
assert_contains "$(grep -E "^ *$C1 " "$TQ_OUT")" '$0.0002'
assert_not_contains "$(grep -E "^ *$G1 " "$TQ_OUT")" '$'
assert_contains "$(grep -E "^ *$O1 " "$TQ_OUT")" '$0.0000'
assert_exit 0 tq list --json
assert_eq "0.00021|None|0|None" \
	"$(out | pyjson "'|'.join(str({t['id']: t['cost_usd'] for t in d}[i]) for i in ($C1, $G1, $O1, $PLAIN))")"
assert_exit 0 tq list --state failed
head -1 "$TQ_OUT" | grep -q 'COST' || fail "failed tasks have a cost: $(out)"

check "taskq show prints each attempt's result"
assert_exit 0 tq show "$C1"
assert_contains "$(out)" "attempt 1 result:"
assert_contains "$(out)" 'text:          "claude says one"'
assert_contains "$(out)" "agent session: $(att "$C1" agent_session)"
assert_contains "$(out)" "model:         claude-opus-4-8[1m]"
assert_contains "$(out)" "tokens:        input 12, output 6, cache read 0, cache write 0"
assert_contains "$(out)" 'cost:         $0.0002 (0.00021 USD, summed over attempts)'
assert_exit 0 tq show "$G1"
assert_contains "$(out)" "cost:          - (not reported)"
assert_exit 0 tq show "$PLAIN"
assert_not_contains "$(out)" "result:"
assert_exit 0 tq show "$C1" --json
assert_eq "claude says one|0.00021|0.00021" \
	"$(out | pyjson '"|".join(str(x) for x in (d["attempts"][0]["result"], d["attempts"][0]["cost_usd"], d["cost_usd"]))')"

check "taskq stats sums what the attempts hold (every task's show --json)"
assert_exit 0 tq stats --json
# the same sums over every attempt of every task, from show --json: tasks
# that ran, attempts, results, cost, input and output tokens
want=$(for id in $(task_ids); do tq show "$id" --json; done | "$TQ_PYTHON" -c '
import json, sys
tasks = [json.loads(line)["attempts"] for line in sys.stdin]
att = [a for t in tasks for a in t]
res = [a for a in att if "is_error" in a]
print("%d|%d|%d|%.6f|%d|%d" % (sum(1 for t in tasks if t), len(att), len(res),
    sum(a["cost_usd"] or 0 for a in res), sum(a["input_tokens"] for a in res),
    sum(a["output_tokens"] for a in res)))
')
assert_eq "$want" \
	"$(out | pyjson '"%d|%d|%d|%.6f|%d|%d" % (d["tasks"], d["attempts"], d["results"], d["cost_usd"], d["input_tokens"], d["output_tokens"])')"
assert_eq "1" "$(out | pyjson 'd["errors"]')"
assert_eq "1" "$(out | pyjson 'd["outcomes"]["failed"]')"
assert_eq "claude-opus-4-8[1m]" "$(out | pyjson 'd["models"][0]["model"]')"
assert_exit 0 tq stats --batch b1 --json
assert_eq "2|2|0.00021|24" \
	"$(out | pyjson '"%d|%d|%s|%d" % (d["tasks"], d["results"], d["cost_usd"], d["input_tokens"])')"
assert_exit 0 tq stats --group gemini --since 1h --json
assert_eq "2|None" "$(out | pyjson '"%d|%s" % (d["results"], d["cost_usd"])')"
assert_exit 0 tq stats --batch b1
assert_contains "$(out)" 'cost:         $0.0002 (1 of 2 results reported one)'
assert_contains "$(out)" "tokens:       input 24, output 12, cache read 0, cache write 0"
assert_exit 0 tq stats --batch nosuch
assert_contains "$(out)" "attempts:     0"
assert_exit 2 tq stats --since soon
assert_one_line_error
assert_contains "$(err)" "--since"

check "a result with bytes that are not UTF-8: stored with U+FFFD for each, the log exact"
# (the store keeps a result as text: PostgreSQL's refused the byte 0xff, so
# the task's end was never recorded and it stayed running)
mkdir -p "$TQ_TMP/rawbin"
cat >"$TQ_TMP/rawbin/claude" <<'SH'
#!/bin/sh
printf '{"type":"system","subtype":"init","session_id":"1b4e28ba-2fa1-11d2-883f-0016d3cca427","model":"m\377"}\n'
printf '{"type":"result","subtype":"success","is_error":false,"result":"caf\377 ok","session_id":"1b4e28ba-2fa1-11d2-883f-0016d3cca427"}\n'
SH
chmod +x "$TQ_TMP/rawbin/claude"
assert_exit 0 tq submit -- "$TQ_TMP/rawbin/claude"
raw=$(out)
wait_state "$raw" succeeded 30
assert_exit 0 tq result "$raw"
assert_eq "636166efbfbd206f6b0a" "$(out | od -An -tx1 | tr -d ' \n')" "the result's bytes"
assert_eq $'m\xef\xbf\xbd' "$(att "$raw" model)" "the model"
tq log "$raw" --raw | grep -q $'caf\xff ok' || fail "the log does not keep the byte 0xff"
