#!/usr/bin/env bash
# --stall-timeout against the REAL agent CLIs (pinned; skipped, exit 77, when
# they cannot be had), each talking to a mock on 127.0.0.1:
#   - Claude Code against an API that accepts the request and never answers
#     (mock mode hang): it prints its init line, then nothing (its own
#     request timeout is 10 min). taskq ask stops it after the stall timeout,
#     the attempt is stalled/network, and the retry (the mock now answers)
#     succeeds.
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

check "claude against a hung API: stalled after 10 s of silence (its start alone can take 4 s here), retried, then succeeds"
id=$("$TASKQ_BIN" ask --stall-timeout 10s --backoff 1s --backoff-max 1s --retries 2 "say hello")
wait_state "$id" succeeded 120
# claude catches the TERM and exits 143 (research 3.4): the verdict stays stalled
assert_eq "stalled|network
succeeded|" "$(tq_sql "select outcome, coalesce(category, '') from attempts where task_id = $id order by attempt")"
ran=$(tq_sql "select ended_at - started_at from attempts where task_id = $id and attempt = 1")
[ "$ran" -ge 9900 ] && [ "$ran" -lt 60000 ] || fail "the stalled attempt ran $ran ms, not about 10 s"
assert_contains "$(tq_sql "select reason from attempts where task_id = $id and attempt = 1")" \
	'stalled: no new output for 10.0s; the last line: {"type":"system","subtype":"init"'
assert_eq 2 "$(mock_requests)" "model requests: the hung one, then the answered one"
assert_exit 0 tq result "$id"
assert_eq "Hello from the mock." "$(out)"
