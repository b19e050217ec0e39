#!/usr/bin/env bash
# test_agent_real.sh - issue 6 against the REAL Claude Code CLI (pinned,
# tests/agents/install-claude.sh; skipped, exit 77, when it cannot be had)
# run by taskq against the mock Anthropic API (tests/agents/mock_api.py) on
# 127.0.0.1, with HOME a temp dir and CLAUDE_CODE_MAX_RETRIES=0 so that
# every retry is taskq's:
#   - success is succeeded, with no category; 429 is rate_limit (with
#     --retries 0: failed at once); 529 and 500 are overload (rules.json:
#     claude.result.status_5xx, "a server-side error, usually temporary")
#     and a dropped connection is network, each retried (one task meets
#     them in turn, then succeeds); 401 is auth and not retried although
#     retries are left;
#   - the scenario of the issue: 429, 429, ok ends succeeded after 3
#     attempts, each wait within its jitter bounds and honoured; while it
#     waits its group ("claude", the default of a claude command) does not
#     start another task, and a task of another group does.
# claude runs as `claude -p hi --output-format stream-json --verbose` with
# stdin /dev/null (taskq's default). Each run took 2-4 s here (5 s and more
# on a loaded machine): 10 runs, the test 30-60 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

T0=$(_tq_now_ms)
claude_bin
mock_start ok
PATH="$(claude_path):$PATH"
export PATH
mkdir -p "$TQ_TMP/work"
cd "$TQ_TMP/work" || exit 1

# What every task gets: the mock, a key, and no retries inside claude.
ENVS=(--env "ANTHROPIC_BASE_URL=$MOCK_URL" --env ANTHROPIC_API_KEY=dummy
	--env CLAUDE_CODE_MAX_RETRIES=0)
CLAUDE=(claude -p hi --output-format stream-json --verbose)

# att ID N FIELD...: fields of attempt N of task ID, joined by '|'.
att() { attempt_field "$@"; }

n_attempts() { attempt_count "$1"; }

# in_range N LO HI: LO <= N <= HI.
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

# pause_probes A: task A was rate-limited twice; after its attempt N
# ended, `taskq status` printed ST[N] (finishing at ST_END[N]), and task
# B[N] (group of A) and C[N] (group "other") were submitted (probe). A
# probe counts where it landed before the pause ended (A's retry_at): then
# B[N] must not have started before the pause ended (always), and C[N]
# started inside it and status showed it (at least once each: a loaded
# machine may miss one window).
pause_probes() {
	local a=$1 n ra bc bs cc cs held=0 ran=0 shown=0
	for n in 1 2; do
		ra=$(att "$a" "$n" retry_at)
		bc=$(task_field "${B[$n]}" created_at)
		bs=$(att "${B[$n]}" 1 started_at)
		cc=$(task_field "${C[$n]}" created_at)
		cs=$(att "${C[$n]}" 1 started_at)
		if [ "${ST_END[$n]}" -lt "$ra" ]; then
			assert_contains "${ST[$n]}" "group $(task_field "$a" group): " "pause $n: taskq status"
			assert_contains "${ST[$n]}" "paused until" "pause $n: taskq status"
			shown=$((shown + 1))
		fi
		if [ "$bc" -lt "$ra" ]; then
			[ "$bs" -ge "$ra" ] ||
				fail "pause $n: task ${B[$n]} of the paused group started $((ra - bs)) ms before the pause ended"
			held=$((held + 1))
		fi
		if [ "$cc" -lt "$ra" ] && [ "$cs" -lt "$ra" ]; then
			ran=$((ran + 1))
		fi
		echo "    pause $n: status ended $((ra - ST_END[$n])) ms, b submitted $((ra - bc)) ms, c submitted $((ra - cc)) ms before the pause ended; b started $((bs - ra)) ms after it, c $((cs - ra)) ms"
	done
	[ "$held" -ge 1 ] || fail "no task of the paused group was submitted inside a pause (machine too slow?)"
	[ "$ran" -ge 1 ] || fail "no task of group other started inside a pause"
	[ "$shown" -ge 1 ] || fail "taskq status never ran inside a pause (machine too slow?)"
	assert_eq "$(att "$a" 2 retry_at)" \
		"$(group_field "$(task_field "$a" group)" rate_limited_until)" \
		"the group paused until the last retry time"
	assert_eq "other|" "$(group_field other name rate_limited_until)" \
		"group other never paused"
}

# explain_has ID N RULE CATEGORY: `taskq classify --explain` of attempt N
# says that RULE decided CATEGORY (its trace shows the deciding step), as
# the worker stored it. Its JSON stays in $TQ_OUT.
explain_has() {
	local id=$1 n=$2 rule=$3 cat=$4 step
	assert_exit 0 tq classify "$id" --attempt "$n" --explain --json
	assert_eq "$rule|$cat|$cat" "$(out | pyjson '"%s|%s|%s" % (d["rule"], d["category"], d["stored"]["category"])')" \
		"task $id attempt $n: classify's rule|category|stored category"
	case $rule in
	outcome.*) step="the worker's verdict: ${rule#outcome.}" ;;
	*) step="=> $cat (rule $rule)" ;;
	esac
	out | pyjson 'd["explain"]' >"$TQ_TMP/explain"
	grep -qF -- "$step" "$TQ_TMP/explain" ||
		fail "task $id attempt $n: [$step] not in classify --explain: $(cat "$TQ_TMP/explain")"
	grep -qF -- "result: $cat, " "$TQ_TMP/explain" ||
		fail "task $id attempt $n: classify --explain's result is not $cat: $(cat "$TQ_TMP/explain")"
}

# claude_said ID: the result text of the last result line of task ID's
# output (its log, all attempts).
claude_said() {
	log_bytes "$1" >"$TQ_TMP/said.out"
	last_result "$TQ_TMP/said.out" | pyjson 'd.get("result")'
}

# real_case MODES RETRIES STATE EXPECT...: the mock answers MODES (one per
# model request, the last repeating); a claude task with --retries RETRIES
# (backoff 200 ms) ends in STATE. Each EXPECT is "CATEGORY|RULE|WHY" for one
# failed attempt in order: its outcome failed (exit 1), its category, the
# rule classify --explain names, and WHY in its stored reason. Attempts:
# one per EXPECT, plus the success when STATE is succeeded; each retry
# waited within [100, 200] ms and not less; one model request per attempt.
real_case() {
	local modes=$1 retries=$2 state=$3 id n0 t natt n e cat rule why reason w gap
	shift 3
	natt=$#
	[ "$state" = succeeded ] && natt=$((natt + 1))
	check "mock $modes, --retries $retries: $state after $natt attempt(s): $*"
	mock_mode "$modes"
	n0=$(mock_requests)
	t=$(_tq_now_ms)
	id=$(submit_id --retries "$retries" --backoff 200ms --backoff-max 200ms "${ENVS[@]}" -- "${CLAUDE[@]}")
	wait_state "$id" "$state" 90
	assert_eq "$natt" "$(n_attempts "$id")" "task $id ($modes): attempts"
	assert_eq "$((n0 + natt))" "$(mock_requests)" "task $id ($modes): model requests, one per attempt"
	n=0
	for e in "$@"; do
		n=$((n + 1))
		IFS='|' read -r cat rule why <<<"$e"
		assert_eq "failed|$cat|1" "$(att "$id" "$n" outcome category exit_code)" \
			"task $id ($modes): attempt $n outcome|category|exit"
		reason=$(att "$id" "$n" reason)
		assert_contains "$reason" "$why" "task $id ($modes): attempt $n's reason"
		explain_has "$id" "$n" "$rule" "$cat"
		if [ "$n" -lt "$natt" ]; then
			w=$(retry_wait "$id" "$n")
			in_range "$w" 100 200 ||
				fail "task $id ($modes): attempt $n waited $w ms for its retry, not within [100, 200]"
			gap=$(retry_gap "$id" "$n")
			[ "$gap" -ge 0 ] || fail "task $id ($modes): attempt $((n + 1)) started $((-gap)) ms before its retry time"
		else
			assert_eq "" "$(att "$id" "$n" retry_at)" "task $id ($modes): retry_at of the last attempt"
			assert_eq "failed|$cat|$reason" "$(task_field "$id" outcome category reason)" \
				"task $id ($modes): the task's outcome|category|reason"
		fi
		echo "    task $id attempt $n: $cat by $rule: $reason"
	done
	if [ "$state" = succeeded ]; then
		assert_eq "succeeded||0" "$(att "$id" "$natt" outcome category exit_code)" "task $id ($modes): attempt $natt"
		assert_eq "succeeded|" "$(task_field "$id" outcome category)"
		assert_eq "Hello from the mock." "$(claude_said "$id")" "task $id: the last attempt's result"
	fi
	echo "    task $id: $state after $natt attempt(s), $(($(_tq_now_ms) - t)) ms"
}

check "a supervisor with 3 workers; claude is the pinned real one"
serve_start 3
assert_exit 0 claude --version
assert_eq "2.1.197 (Claude Code)" "$(out)"

check "success: succeeded, no category, the mock's answer stored"
mock_mode ok
ok=$(submit_id "${ENVS[@]}" -- "${CLAUDE[@]}")
wait_state "$ok" succeeded 60
assert_eq "1|succeeded||0" "$(task_field "$ok" attempt outcome category exit_code)"
assert_eq "Hello from the mock." "$(claude_said "$ok")"
assert_eq 1 "$(mock_requests)"
assert_contains "$(mock_request 1 'd["headers"]["user-agent"]')" "claude-cli/2.1.197"

# --retries 0: a rate limit fails at once.
real_case 429 0 failed "rate_limit|claude.assistant.rate_limit|Request rejected (429)"
# 529 and 500 are overload (rules.json: claude.result.status_5xx), a dropped
# connection is network: each is retried, and the fourth attempt succeeds.
real_case 529,500,drop,ok 3 succeeded \
	"overload|claude.result.status_5xx|api_error_status=529: API Error: 529 Overloaded" \
	"overload|claude.result.status_5xx|api_error_status=500: API Error: 500 Internal server error" \
	"network|claude.result.text+text.network|API Error: Unable to connect to API (ECONNRESET)"
# 401 is auth, not retried although 3 retries are left.
real_case 401 3 failed "auth|claude.assistant.auth|assistant.error=authentication_failed: Invalid API key"

# ---------------------------------------------------------------------------
# The scenario of the issue. The mock sends "retry-after: 0" with each 429,
# and claude (with no retries of its own) prints no retry time: the wait is
# taskq's jittered backoff alone, which classify --json confirms below.

check "429, 429, ok: a claude task of the default group claude, --backoff 2s --backoff-max 8s"
mock_mode '429:0,429:0,ok'
n0=$(mock_requests)
a=$(submit_id --backoff 2s --backoff-max 8s "${ENVS[@]}" -- "${CLAUDE[@]}")
assert_eq claude "$(task_field "$a" group)" "the default group of a claude task"

declare -A B C ST ST_END
# probe N: `taskq status` (its output in ST[N], its end time in ST_END[N]),
# and the submits of B[N] (group claude) and C[N] (group other), all three at
# once (a loaded machine, or a sanitizer build, takes up to half a second a
# command: one after the other they may miss the window).
probe() {
	local d="$TQ_TMP/probe$1" pids=() p
	mkdir -p "$d"
	(tq status >"$d/status" && _tq_now_ms >"$d/status.end") &
	pids+=($!)
	submit_id --group claude -- true >"$d/b" &
	pids+=($!)
	submit_id --group other -- true >"$d/c" &
	pids+=($!)
	for p in "${pids[@]}"; do
		wait "$p" || fail "probe $1: a command failed: $(cat "$d"/* 2>&1)"
	done
	ST[$1]=$(cat "$d/status")
	ST_END[$1]=$(cat "$d/status.end")
	B[$1]=$(cat "$d/b")
	C[$1]=$(cat "$d/c")
}
# After attempt N of a ends, while a waits for its retry: probe N. Both
# pauses are probed, as the machine's speed decides whether a probe lands
# inside its window; at least one must (pause_probes).
for n in 1 2; do
	wait_for "[ -n \"\$(att $a $n ended_at)\" ]" 60 ||
		fail "task $a: attempt $n did not end ($(state_of "$a"))"
	probe "$n"
done
wait_state "$a" succeeded 60
for n in 1 2; do
	wait_state "${B[$n]}" succeeded
	wait_state "${C[$n]}" succeeded
done

check "it ended succeeded after 3 attempts: rate_limit, rate_limit, success; one request each"
assert_eq 3 "$(n_attempts "$a")" "attempts"
assert_eq "failed|rate_limit;failed|rate_limit;succeeded|" \
	"$(attempts_of "$a" outcome category | paste -sd';')"
assert_eq "succeeded|3" "$(task_field "$a" outcome attempt)"
assert_eq "$((n0 + 3))" "$(mock_requests)" "model requests"
assert_eq "Hello from the mock." "$(claude_said "$a")"
for n in 1 2; do
	assert_contains "$(att "$a" "$n" reason)" "Request rejected (429)" "attempt $n's reason"
	explain_has "$a" "$n" claude.assistant.rate_limit rate_limit
	assert_eq null "$(out | pyjson 'd["retry_at"]')" "attempt $n: a retry time from the provider"
done

check "the waits: [d/2, d] for d = 2 s, then 4 s; each retry started at or after its time"
for n in 1 2; do
	d=$((2000 << (n - 1)))
	w=$(retry_wait "$a" "$n")
	in_range "$w" $((d / 2)) "$d" ||
		fail "attempt $n waited $w ms, not within [$((d / 2)), $d]"
	gap=$(retry_gap "$a" "$n")
	[ "$gap" -ge 0 ] || fail "attempt $((n + 1)) started $((-gap)) ms before its retry time"
	echo "    attempt $n: waited $w ms (d = $d); attempt $((n + 1)) started $gap ms after its retry time"
done

check "while it waited, group claude started nothing, group other ran, taskq status showed the pause"
pause_probes "$a"

check "status shows no pause once it is over"
assert_exit 0 tq status
assert_not_contains "$(out)" "paused until"
echo "    total $(($(_tq_now_ms) - T0)) ms"
