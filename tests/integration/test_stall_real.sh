#!/usr/bin/env bash
# --stall-timeout against the REAL agent CLIs (pinned; skipped, exit 77, when
# they cannot be had), each talking to a mock on 127.0.0.1:
#   - Claude Code against an API that accepts the request and never answers
#     (mock mode hang): it prints its init line, then nothing (its own
#     request timeout is 10 min). taskq ask stops it after the stall timeout,
#     the attempt is stalled/network, and the retry (the mock now answers)
#     succeeds.
#   - Codex against an API that cannot be reached (nothing listens on its
#     port): it prints {"type":"error","message":"Reconnecting... waiting for
#     network (...)"} at 1, 6, 16, 36 s ... for ever, the same line each
#     time. A repeated line is not new output: stalled; once the API is up
#     (the mock started on that port), the retry succeeds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

claude_bin
mock_start "hang,ok"
PATH="$(claude_path):$PATH"
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

serve_start 2

check "claude against a hung API: stalled after 20 s of silence (its start alone took 4 s here at rest, over 10 s at load ~20), retried, then succeeds"
id=$("$TASKQ_BIN" ask --stall-timeout 20s --backoff 1s --backoff-max 1s --retries 2 "say hello")
wait_state "$id" succeeded 120
# claude catches the TERM and exits 143 (research 3.4): the verdict stays stalled
assert_eq "stalled|network
succeeded|" "$(attempts_of "$id" outcome category)"
ran=$(attempt_field "$id" 1 runtime_ms)
[ "$ran" -ge 19900 ] && [ "$ran" -lt 60000 ] || fail "the stalled attempt ran $ran ms, not about 20 s"
assert_contains "$(attempt_field "$id" 1 reason)" \
	'stalled: no new output for 20.0s; the last line: {"type":"system","subtype":"init"'
assert_eq 2 "$(mock_requests)" "model requests: the hung one, then the answered one"
assert_exit 0 tq result "$id"
assert_eq "Hello from the mock." "$(out)"

check "codex against an unreachable API: its repeated reconnect line is no progress: stalled, then the retry succeeds"
mock_stop
agent_bin codex
PATH="$(agent_path codex):$PATH"
# a port nothing listens on, for now
port=$("$TQ_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MOCK_URL="http://127.0.0.1:$port"
codex_setup
id=$("$TASKQ_BIN" ask --agent codex --stall-timeout 10s --backoff 5s --backoff-max 5s \
	--retries 2 "say hello")
wait_for "[ \"\$(attempt_field $id 1 outcome)\" = stalled ]" 90 ||
	fail "codex was not stalled: $(attempts_of "$id" outcome reason)"
reason=$(attempt_field "$id" 1 reason)
assert_contains "$reason" 'repeated line'
assert_contains "$reason" '{"type":"error","message":"Reconnecting... waiting for network'
assert_eq network "$(attempt_field "$id" 1 category)"
ran=$(attempt_field "$id" 1 runtime_ms)
[ "$ran" -lt 60000 ] || fail "the reconnecting attempt ran $ran ms"
# the API comes up on that port before the retry (5 s later)
tq_bg "$TQ_PYTHON" "$TQ_AGENTS_DIR/mock_api.py" --port "$port" --log "$TQ_TMP/mock2.jsonl" \
	--mode ok --parent-pid $$ >/dev/null 2>"$TQ_TMP/mock2.err"
wait_for "\"$TQ_PYTHON\" -c 'import socket; socket.create_connection((\"127.0.0.1\", $port), 1)'" 10 ||
	fail "the mock did not start on port $port"
wait_state "$id" succeeded 120
assert_eq "stalled|network" "$(attempt_field "$id" 1 outcome category)"
assert_exit 0 tq result "$id"
assert_eq "Hello from the mock." "$(out)"
