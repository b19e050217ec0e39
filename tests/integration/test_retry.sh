#!/usr/bin/env bash
# Retries: a rate-limited agent call is retried with backoff (within its
# jitter bounds) and pauses its group meanwhile; auth failures and
# --retries 0 are not retried; manual retry, list --category, resume.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# A stand-in for `claude -p --output-format stream-json`: fails with the
# documented 429 (or 401) result the first N runs (counted in a file), then
# succeeds.
cat > "$TQ_TMP/agent.sh" <<'AGENT'
#!/bin/sh
# agent.sh N STATEFILE [rate|auth]
n=$(cat "$2" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$2"
if [ "$n" -le "$1" ]; then
	if [ "${3:-rate}" = auth ]; then
		echo '{"type":"assistant","message":{"model":"<synthetic>","content":[]},"error":"authentication_failed"}'
		echo '{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Fix external API key"}'
	else
		echo '{"type":"system","subtype":"api_retry","attempt":1,"max_retries":0,"retry_delay_ms":0,"error_status":429,"error":"rate_limit"}'
		echo '{"type":"assistant","message":{"model":"<synthetic>","content":[]},"error":"rate_limit"}'
		echo '{"is_error":true,"type":"result","api_error_status":429,"subtype":"success","result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}'
	fi
	exit 1
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
AGENT
chmod +x "$TQ_TMP/agent.sh"

serve_start 2

check "a task that hits a rate limit twice, then succeeds: 3 attempts"
a=$(submit_id --group api --backoff 2s --backoff-max 10s -- "$TQ_TMP/agent.sh" 2 "$TQ_TMP/a.n")
wait_for "[ -n \"\$(attempt_field $a 1 ended_at)\" ]" 20
check "while it waits, its group is paused: another task of the group stays queued"
b=$(submit_id --group api -- true)
c=$(submit_id --group other -- true)
wait_state "$c" succeeded
pause_end=$(attempt_field "$a" 1 retry_at)
# Look now only while the pause surely holds (a loaded machine may be slow to
# get here); the check after a succeeds is the one that always runs.
if [ $(($(_tq_now_ms) + 300)) -lt "$pause_end" ]; then
	assert_eq queued "$(state_of "$b")"
	assert_contains "$(tq status)" "group api:"
	assert_contains "$(tq status)" "paused until"
else
	echo "(machine too slow to look inside the pause; checking start times only)"
fi
wait_state "$a" succeeded 30
assert_eq "3" "$(attempt_count "$a")"
assert_eq "rate_limit|rate_limit|" "$(attempts_of "$a" category | paste -sd '|')"
assert_contains "$(attempt_field "$a" 1 reason)" "Request rejected (429)"
wait_state "$b" succeeded
check "b did not start before the pause ended"
b_started=$(task_field "$b" started_at)
[ "$b_started" -ge $(($(attempt_field "$a" 1 retry_at) - 5)) ] ||
	fail "b started at $b_started, before the pause's end $(attempt_field "$a" 1 retry_at)"
check "backoff within its jitter bounds: [d/2, d] for d = 2s, then 4s"
for n in 1 2; do
	d=$((2000 << (n - 1)))
	IFS='|' read -r retry_at ended_at < <(attempt_field "$a" "$n" retry_at ended_at)
	wait_ms=$((retry_at - ended_at))
	[ "$wait_ms" -ge $((d / 2 - 50)) ] && [ "$wait_ms" -le "$d" ] ||
		fail "attempt $n waited $wait_ms ms, not within [$((d / 2)), $d]"
	gap=$(($(attempt_field "$a" $((n + 1)) started_at) - retry_at))
	[ "$gap" -ge 0 ] || fail "attempt $((n + 1)) started $gap ms before its retry time"
done

check "--retries 0: a rate limit fails at once"
d=$(submit_id --retries 0 --group r0 -- "$TQ_TMP/agent.sh" 5 "$TQ_TMP/d.n")
wait_state "$d" failed
assert_eq "1|rate_limit" "$(task_field "$d" attempt category)"

check "an auth failure is not retried"
e=$(submit_id --group au -- "$TQ_TMP/agent.sh" 5 "$TQ_TMP/e.n" auth)
wait_state "$e" failed
assert_eq "1|auth" "$(task_field "$e" attempt category)"
assert_contains "$(task_field "$e" reason)" "Invalid API key"

check "list --category finds them"
assert_exit 0 tq list --category rate_limit --json
assert_eq "[$d]" "$(out | pyjson '[t["id"] for t in d]' | tr -d ' ')"
assert_exit 2 tq list --category nonsense

check "taskq retry runs a failed task again, with a fresh budget"
echo 0 > "$TQ_TMP/e.n"
assert_exit 0 tq retry "$e"
wait_state "$e" failed
assert_eq 2 "$(attempt_count "$e")"
check "a succeeded task can be run again; a waiting one cannot be retried"
assert_exit 0 tq retry "$c"
wait_state "$c" succeeded
assert_exit 0 tq pause hold
g=$(submit_id --group hold -- true)
assert_exit 1 tq retry "$g"
assert_contains "$(err)" "only a finished task"
assert_exit 0 tq resume hold
assert_exit 0 tq retry --failed
assert_contains "$(out)" "queued again"

check "pause and resume a group by hand"
assert_exit 0 tq pause api
f=$(submit_id --group api -- true)
assert_eq queued "$(state_of "$f")"
assert_exit 0 tq resume api
# resume wakes an idle worker at once: well inside its 10 s idle timer
wait_state "$f" succeeded 5
assert_exit 2 tq resume no-such-group
assert_one_line_error
