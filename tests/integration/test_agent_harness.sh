#!/usr/bin/env bash
# test_agent_harness.sh - the agent test harness works, without taskq: the
# fake agent prints each CLI's documented output and exit status; the mock
# API answers in the documented shapes, follows its modes and logs what it
# received; the pinned real claude CLI run against the mock gives a result in
# success mode and the documented rate-limit result in 429 mode (skipped,
# with the installer's reason, when the real CLI cannot be installed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"

FA=$FAKEAGENT
cd "$TQ_TMP" || exit 1

# field KEY [LINE]: a field of the JSON object LINE, or of the last result
# line of $TQ_OUT, by key whatever the key order (one Python run: as pyjson,
# lists, dicts, booleans and null print as JSON; a missing key as <absent>).
field() {
	"$TQ_PYTHON" - "$1" "${2-}" "$TQ_OUT" <<'EOF'
import json, sys
key, line, path = sys.argv[1:4]
d = json.loads(line) if line else None
if not line:
    for l in open(path, encoding="utf-8", errors="replace"):
        try:
            x = json.loads(l)
        except ValueError:
            continue
        if isinstance(x, dict) and x.get("type") == "result":
            d = x
if d is None:
    sys.exit("field: no result line in " + path)
r = d.get(key, "<absent>")
print(json.dumps(r, ensure_ascii=False) if isinstance(r, (list, dict, bool)) or r is None else r)
EOF
}

# summary: "assistant.error|api_error_status|result" of the stream-json
# output in $TQ_OUT (the last assistant and result lines).
summary() {
	"$TQ_PYTHON" - "$TQ_OUT" <<'EOF'
import json, sys
a = r = {}
for l in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(l)
    if d.get("type") == "assistant":
        a = d
    elif d.get("type") == "result":
        r = d
s = lambda v: "null" if v is None else str(v)
print("|".join([s(a.get("error")), s(r.get("api_error_status")), s(r.get("result"))]))
EOF
}

# ---------------------------------------------------------------------------
# fakeagent, claude style

check "fakeagent claude json success: one result line, by key, exit 0"
assert_exit 0 "$FA" -p hi --output-format json
assert_eq 1 "$(wc -l <"$TQ_OUT")" "json output lines"
assert_eq success "$(field subtype)"
assert_eq false "$(field is_error)"
assert_eq "Hello from fakeagent." "$(field result)"
assert_eq 0.00021 "$(field total_cost_usd)"
assert_eq 1 "$(field num_turns)"
[[ "$(field session_id)" =~ ^[0-9a-f-]{36}$ ]] || fail "session_id is not a uuid: $(field session_id)"
assert_eq '{"input_tokens": 12, "output_tokens": 6}' \
	"$(last_result | pyjson '{k: d["usage"][k] for k in ("input_tokens", "output_tokens")}')"

check "fakeagent claude text success: the result text only"
assert_exit 0 "$FA" -p hi
assert_eq "Hello from fakeagent." "$(out)"

check "fakeagent key order: real is 2.1.197's, reverse puts uuid first"
assert_exit 0 "$FA" -p hi --output-format json --key-order real
assert_contains "$(out)" '{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
assert_exit 0 "$FA" -p hi --output-format json --key-order reverse
assert_contains "$(out)" '{"uuid":'

check "fakeagent claude stream-json rate_limit (MAX_RETRIES=0): synthetic assistant error, result is_error, exit 1"
CLAUDE_CODE_MAX_RETRIES=0 assert_exit 1 "$FA" -p hi --output-format stream-json --verbose --mode rate_limit
lines=$(grep -c . "$TQ_OUT")
assert_eq 3 "$lines" "init, assistant, result lines"
init=$(sed -n 1p "$TQ_OUT")
assistant=$(sed -n 2p "$TQ_OUT")
assert_eq system "$(field type "$init")"
assert_eq init "$(field subtype "$init")"
assert_eq rate_limit "$(field error "$assistant")"
assert_eq '<synthetic>' "$(printf '%s' "$assistant" | pyjson 'd["message"]["model"]')"
assert_eq success "$(field subtype)" "API failures report subtype success"
assert_eq true "$(field is_error)"
assert_eq 429 "$(field api_error_status)"
assert_eq "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit" \
	"$(field result)"

check "fakeagent --retry-after: an api_retry line with retry_delay_ms"
CLAUDE_CODE_MAX_RETRIES=0 assert_exit 1 "$FA" -p hi --output-format stream-json --verbose \
	--mode rate_limit --retry-after 30
retry=$(grep '"api_retry"' "$TQ_OUT")
assert_eq 30000 "$(field retry_delay_ms "$retry")"
assert_eq 429 "$(field error_status "$retry")"
assert_eq rate_limit "$(field error "$retry")"

check "fakeagent claude retries: one api_retry line per CLAUDE_CODE_MAX_RETRIES"
CLAUDE_CODE_MAX_RETRIES=3 assert_exit 1 "$FA" -p hi --output-format stream-json --verbose --mode server_error
assert_eq 3 "$(grep -c '"api_retry"' "$TQ_OUT")"

check "fakeagent claude error modes: texts, statuses and assistant errors as measured"
export ANTHROPIC_BASE_URL=http://127.0.0.1:8765 CLAUDE_CODE_MAX_RETRIES=0
while IFS='|' read -r mode aerr status text; do
	assert_exit 1 "$FA" -p hi --output-format stream-json --verbose --mode "$mode"
	assert_eq "$aerr|$status|$text" "$(summary)" "$mode: assistant.error|api_error_status|result"
done <<'EOF'
overload|server_error|529|API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:8765).
server_error|server_error|500|API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:8765).
network|server_error|null|API Error: Unable to connect to API (ECONNRESET)
auth|authentication_failed|401|Invalid API key · Fix external API key
not_logged_in|authentication_failed|null|Not logged in · Please run /login
billing|billing_error|400|Credit balance is too low
EOF
unset ANTHROPIC_BASE_URL CLAUDE_CODE_MAX_RETRIES

check "fakeagent claude max_turns: error_max_turns, errors[] and no result key"
assert_exit 1 "$FA" -p hi --output-format json --mode max_turns --max-turns 1
assert_eq error_max_turns "$(field subtype)"
assert_eq '<absent>' "$(field result)"
assert_eq '["Reached maximum number of turns (1)"]' "$(field errors)"

check "fakeagent claude usage errors: the real CLI's messages, exit 1"
assert_exit 1 "$FA" -p hi --output-format stream-json
assert_eq "Error: When using --print, --output-format=stream-json requires --verbose" "$(err)"
assert_exit 1 "$FA" -p hi --bogus
assert_eq "error: unknown option '--bogus'" "$(err)"
assert_exit 1 "$FA" -p --mcp-config "$TQ_TMP/none.json" hi
assert_contains "$(err)" "MCP config file not found: $TQ_TMP/none.json"
assert_exit 1 "$FA" -p --output-format json </dev/null
assert_contains "$(err)" "Input must be provided either through stdin or as a prompt argument"

check "fakeagent accepts the flags a claude profile passes"
echo '{"mcpServers":{}}' >mcp.json
assert_exit 0 "$FA" -p --output-format stream-json --verbose --include-partial-messages \
	--model claude-mock --max-turns 5 --permission-mode acceptEdits --allowedTools Bash Read \
	--mcp-config mcp.json --strict-mcp-config --dangerously-skip-permissions -- "the prompt"
assert_eq "Hello from fakeagent." "$(field result)"

# ---------------------------------------------------------------------------
# fakeagent, other styles

check "fakeagent gemini: exit codes 173/247/41/1 and the stderr JSON error"
while read -r mode rc code; do
	assert_exit "$rc" "$FA" --style gemini --mode "$mode" -m gemini-2.5-flash -p hi -o json
	assert_eq "" "$(out)" "gemini $mode: stdout"
	assert_eq "$code" "$(sed -n '/^{/,$p' "$TQ_ERR" | pyjson 'd["error"]["code"]')" "gemini $mode: error.code"
done <<'EOF'
rate_limit 173 429
overload 247 503
auth 41 41
network 1 1
EOF
assert_exit 173 "$FA" --style gemini --mode rate_limit -p hi -o stream-json
assert_eq error "$(field status)"
assert_exit 0 "$FA" --style gemini -p hi -o json
assert_eq "Hello from fakeagent." "$(pyjson 'd["response"]' <"$TQ_OUT")"

check "fakeagent codex: agent_message + turn.completed, or turn.failed"
assert_exit 0 "$FA" --style codex exec --json --skip-git-repo-check hi
assert_eq "Hello from fakeagent." "$(grep agent_message "$TQ_OUT" | pyjson 'd["item"]["text"]')"
grep -q '"turn.completed"' "$TQ_OUT" || fail "no turn.completed: $(out)"
assert_exit 1 "$FA" --style codex --mode rate_limit exec --json hi
assert_eq "exceeded retry limit, last status: 429 Too Many Requests" \
	"$(grep turn.failed "$TQ_OUT" | pyjson 'd["error"]["message"]')"

check "fakeagent opencode: text and step_finish, or an APIError"
assert_exit 0 "$FA" --style opencode run --format json hi
assert_eq "Hello from fakeagent." "$(grep '"text"' "$TQ_OUT" | head -1 | pyjson 'd["part"]["text"]')"
assert_exit 1 "$FA" --style opencode --mode rate_limit run --format json hi
assert_eq 429 "$(grep '"error"' "$TQ_OUT" | pyjson 'd["error"]["data"]["statusCode"]')"

check "fakeagent text: error text on stderr, tempfail exits 75, --retry-after, --exit"
assert_exit 1 "$FA" --style text --mode rate_limit --retry-after 7
assert_contains "$(err)" "429 Too Many Requests"
assert_contains "$(err)" "retry-after: 7"
assert_exit 75 "$FA" --style text --mode tempfail
assert_exit 7 "$FA" --style text --exit 7
assert_eq "Hello from fakeagent." "$(out)"

# ---------------------------------------------------------------------------
# fakeagent, process behaviours

check "fakeagent --signal-after-success TERM: a success line, then death by SIGTERM (143)"
assert_exit 143 "$FA" -p hi --output-format json --signal-after-success TERM
assert_eq false "$(field is_error)"

check "fakeagent --stdin reads to EOF and reports the length; the prompt may come on stdin"
printf 'hello' >in.txt
assert_exit 0 "$FA" --style text --stdin <in.txt
assert_eq "stdin 5 bytes" "$(err)"
printf 'from stdin' >in.txt
assert_exit 0 "$FA" -p --result 'got: {prompt}' <in.txt
assert_eq "got: from stdin" "$(out)"

check "fakeagent --flood writes that many bytes before the result"
"$FA" --style text --flood 1M >flood.out
assert_eq $((1048576 + 22)) "$(wc -c <flood.out)" "flood bytes + result line"

check "fakeagent --fail-times 2: fails twice, then succeeds (the count is in the state file)"
for want in 1 1 0 0; do
	assert_exit "$want" "$FA" -p hi --mode rate_limit --fail-times 2 --state-file count
done
assert_eq 4 "$(cat count)"

check "fakeagent --trap-term ignores SIGTERM; SIGKILL ends it"
tq_bg "$FA" --style text --trap-term --sleep 60 --record rec.jsonl
pid=$TQ_LAST_PID
wait_for "[ -s rec.jsonl ]" 10
ign=$(awk '/^SigIgn:/ { print $2 }' "/proc/$pid/status")
(((16#$ign >> 14) & 1)) || fail "SIGTERM not ignored (SigIgn $ign)"
kill -TERM "$pid"
_tq_alive "$pid" || fail "fakeagent died of an ignored SIGTERM"
kill -KILL "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq 137 "$rc" "status after SIGKILL"

check "fakeagent --grandchild leaves a sleep 1000 in its own session that outlives it"
assert_exit 0 "$FA" --style text --grandchild --grandchild-pid-file gc.pid
gc=$(cat gc.pid)
tq_track "$gc"
assert_eq "grandchild pid $gc" "$(err)"
_tq_alive "$gc" || fail "grandchild $gc is gone"
stat=$(cat "/proc/$gc/stat")
read -r -a f <<<"${stat##*) }" # state ppid pgrp session ...
assert_eq "$gc" "${f[3]}" "grandchild's session id is its pid"
assert_eq "sleep 1000" "$(tr '\0' ' ' <"/proc/$gc/cmdline" | sed 's/ $//')"
kill -KILL "$gc"

check "fakeagent --record keeps argv, cwd, process ids and the environment"
MARK=x1 assert_exit 0 "$FA" -p hi --record rec2.jsonl
assert_eq '["-p", "hi", "--record"]' "$(pyjson 'd["argv"][1:4]' <rec2.jsonl)"
assert_eq "$TQ_TMP" "$(pyjson 'd["cwd"]' <rec2.jsonl)"
assert_eq x1 "$(pyjson 'd["env"]["MARK"]' <rec2.jsonl)"

check "fake_agents_path: claude/gemini/codex/opencode by name; sessions resume like the real CLI"
PATH="$(fake_agents_path):$PATH"
assert_exit 0 claude --version
assert_eq "2.1.197 (Claude Code)" "$(out)"
assert_exit 0 claude -p "first prompt" --output-format json
sid=$(field session_id)
assert_exit 0 claude -p "second prompt" --resume "$sid" --output-format json --result '{turns}: {history}'
assert_eq "$sid" "$(field session_id)" "a resumed session keeps its id"
assert_eq "2: first prompt" "$(field result)"
mkdir -p elsewhere
(cd elsewhere && assert_exit 1 claude -p x --resume "$sid")
assert_eq "No conversation found with session ID: $sid" "$(err)" "resume from another directory"
assert_exit 173 gemini --mode rate_limit -p hi -o json

check "fake_agent_args: options the fake reads whatever its command line"
fake_agent_args claude --mode overload
CLAUDE_CODE_MAX_RETRIES=0 assert_exit 1 claude -p hi --output-format json
assert_eq 529 "$(field api_error_status)"
fake_agent_args claude
assert_exit 0 claude -p hi

# ---------------------------------------------------------------------------
# The mock API, with a plain HTTP client

check "mock: listens on 127.0.0.1 only, HEAD / answers 200"
mock_start ok
# /proc/net/tcp: local address 0100007F (127.0.0.1, little-endian) in LISTEN (0A)
assert_eq 0100007F "$(awk -v p="$(printf ':%04X' "$MOCK_PORT")" \
	'$2 ~ p"$" && $4 == "0A" { split($2, a, ":"); print a[1] }' /proc/net/tcp /proc/net/tcp6)" \
	"listening address"
assert_eq 200 "$(mock_http HEAD / | head -1)"

check "mock: streaming SSE in the documented event order"
mock_http POST '/v1/messages?beta=true' '{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}' >sse.out
assert_eq 200 "$(head -1 sse.out)"
assert_contains "$(cat sse.out)" "content-type: text/event-stream"
assert_eq "message_start content_block_start ping content_block_delta content_block_delta content_block_stop message_delta message_stop" \
	"$(sed -n 's/^event: //p' sse.out | tr '\n' ' ' | sed 's/ $//')"
assert_eq "Hello from the mock." "$(sed -n 's/^data: //p' sse.out | "$TQ_PYTHON" -c '
import json, sys
print("".join(json.loads(l)["delta"].get("text", "") for l in sys.stdin if "content_block_delta" in l))')"

check "mock: non-streaming JSON answer echoes the model"
mock_http POST /v1/messages '{"model":"claude-y","messages":[{"role":"user","content":"hi"}]}' >json.out
body=$(sed '1,/^$/d' json.out)
assert_eq claude-y "$(printf '%s' "$body" | pyjson 'd["model"]')"
assert_eq "Hello from the mock." "$(printf '%s' "$body" | pyjson 'd["content"][0]["text"]')"

check "mock: a sequence 429:3,drop,529,ok answers one per request, then repeats the last"
mock_mode '429:3,drop,529,ok'
mock_http POST /v1/messages '{}' >r1.out
assert_eq 429 "$(head -1 r1.out)"
assert_contains "$(cat r1.out)" "retry-after: 3"
assert_contains "$(cat r1.out)" '"type":"rate_limit_error"'
if mock_http POST /v1/messages '{}' >r2.out; then fail "drop answered: $(cat r2.out)"; fi
assert_eq 529 "$(mock_http POST /v1/messages '{}' | head -1)"
assert_eq 200 "$(mock_http POST /v1/messages '{}' | head -1)"
assert_eq 200 "$(mock_http POST /v1/messages '{}' | head -1)"

check "mock: POST /_control/mode changes the mode; the log records every model request"
assert_eq 200 "$(mock_http POST /_control/mode credit | head -1)"
mock_http POST /v1/messages '{"model":"m","messages":[{"role":"user","content":"marker-123"}]}' >r3.out
assert_eq 400 "$(head -1 r3.out)"
assert_contains "$(cat r3.out)" "credit balance is too low"
assert_eq 8 "$(mock_requests)" "model requests so far"
assert_eq 8 "$(mock_http GET /_control/requests | tail -1)"
mock_request_has -1 marker-123 || fail "last request's body lacks its prompt"
assert_eq credit "$(mock_request -1 'd["mode"]')"
assert_eq /v1/messages "$(mock_request 1 'd["path"]')"
assert_eq beta=true "$(mock_request 1 'd["query"]')"

check "mock: tool mode asks for a Bash call, then answers text after the tool result"
mock_mode tool
mock_tool_command 'echo from-the-tool'
mock_http POST /v1/messages '{"messages":[{"role":"user","content":"go"}]}' >t1.out
assert_eq '{"command": "echo from-the-tool", "description": "Run the test'"'"'s command"}' \
	"$(sed '1,/^$/d' t1.out | pyjson 'd["content"][0]["input"]')"
mock_http POST /v1/messages '{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}' >t2.out
assert_eq "Tool done." "$(sed '1,/^$/d' t2.out | pyjson 'd["content"][0]["text"]')"

check "mock: Gemini and OpenAI Responses endpoints"
mock_mode ok
assert_eq "Hello from the mock." "$(mock_http POST '/v1beta/models/gemini-2.5-flash:generateContent' '{}' |
	sed '1,/^$/d' | pyjson 'd["candidates"][0]["content"]["parts"][0]["text"]')"
mock_http POST '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse' '{}' >g.out
assert_contains "$(cat g.out)" 'data: {"candidates"'
# Gemini CLI's model router asks for JSON of a schema before every turn on a
# Gemini 3 model: plain text there cost each such run ~100 s of retries
# (test_session_cwd_real took 200 s)
assert_eq '{"complexity_reasoning": "mock", "complexity_score": 1}' \
	"$(mock_http POST '/v1beta/models/gemini-3.5-flash-lite:generateContent' \
		'{"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"}},"required":["complexity_reasoning","complexity_score"]}}}' |
		sed '1,/^$/d' | pyjson 'd["candidates"][0]["content"]["parts"][0]["text"]')"
mock_mode 429
assert_eq RESOURCE_EXHAUSTED "$(mock_http POST '/v1beta/models/m:generateContent' '{}' |
	sed '1,/^$/d' | pyjson 'd["error"]["status"]')"
mock_mode ok
mock_http POST /v1/responses '{"model":"gpt-mock","stream":true,"input":[]}' >o.out
assert_eq "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed" \
	"$(sed -n 's/^event: //p' o.out | tr '\n' ' ' | sed 's/ $//')"

check "mock: exits 0 on SIGTERM"
mock_stop

# ---------------------------------------------------------------------------
# The real claude CLI against the mock (skipped when it cannot be installed)

check "real claude: installed at the pinned version"
claude_bin
claude_run --version
assert_eq 0 "$TQ_RC" "claude --version"
assert_eq "2.1.197 (Claude Code)" "$(out)"

check "real claude: success against the mock (json)"
mock_start ok
mkdir -p work && cd work || exit 1
claude_run -p "first prompt" --output-format json
assert_eq 0 "$TQ_RC" "exit status; stderr: $(err)"
assert_eq false "$(field is_error)"
assert_eq success "$(field subtype)"
assert_eq "Hello from the mock." "$(field result)"
assert_eq 0.00021 "$(field total_cost_usd)"
sid=$(field session_id)
assert_eq 1 "$(mock_requests)"
assert_contains "$(mock_request 1 'd["headers"]["user-agent"]')" "claude-cli/2.1.197"
mock_request_has 1 "first prompt" || fail "the request lacks the prompt"

check "real claude: --resume sends the earlier turn to the API"
mock_mode echo
claude_run -p "second prompt" --resume "$sid" --output-format json
assert_eq 0 "$TQ_RC" "exit status; stderr: $(err)"
assert_eq "$sid" "$(field session_id)"
assert_eq "You said: second prompt" "$(field result)"
mock_request_has -1 "first prompt" || fail "resumed request lacks the first prompt"
mock_request_has -1 "Hello from the mock." || fail "resumed request lacks the first answer"

check "real claude: 429 with CLAUDE_CODE_MAX_RETRIES=0 gives the documented rate-limit result"
mock_mode 429
n0=$(mock_requests)
CLAUDE_CODE_MAX_RETRIES=0 claude_run -p hi --output-format stream-json --verbose
assert_eq 1 "$TQ_RC" "exit status; stderr: $(err)"
assert_eq "" "$(err)" "stderr"
assert_eq "$((n0 + 1))" "$(mock_requests)" "one request, no retry"
assert_eq true "$(field is_error)"
assert_eq success "$(field subtype)"
assert_eq "rate_limit|429|API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit" \
	"$(summary)" "assistant.error|api_error_status|result"

check "real claude: a tool_use turn runs the Bash tool, whose setsid'd child outlives claude"
mock_mode tool
mock_tool_command "setsid -f sleep 1000 </dev/null >/dev/null 2>&1; echo started"
claude_run -p "run it" --output-format stream-json --verbose --allowedTools Bash
assert_eq 0 "$TQ_RC" "exit status; stderr: $(err)"
assert_eq "Tool done." "$(field result)"
assert_eq 2 "$(field num_turns)"
mock_request_has -1 '"tool_result"' || fail "second request lacks the tool result"
mock_request_has -1 "started" || fail "second request lacks the tool's output"
# the orphan: a sleep 1000 in its own session whose environment is ours
orphan=""
for p in $(pgrep -x sleep); do
	if grep -qx "HOME=$HOME" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null); then
		orphan=$p
	fi
done
[ -n "$orphan" ] || fail "no orphaned sleep 1000 from the Bash tool"
tq_track "$orphan"
kill -KILL "$orphan"
cd "$TQ_TMP" || exit 1
mock_stop
