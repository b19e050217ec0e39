#!/usr/bin/env bash
# test_agent_classify.sh - issue 6 end to end with the fake agent
# (tests/fixtures/fakeagent) standing in for Claude Code, Gemini CLI, Codex
# and a plain program: every failure a real CLI prints is run through taskq
# (a supervisor, real workers), and each attempt is classified right (the
# stored outcome, category and reason; the rule `taskq classify --explain`
# names) and retried or not as the issue says. Then the rate-limit scenario
# with the default group of a `claude` command: fails twice, succeeds on
# the third attempt with backoff in its jitter bounds, the group "claude"
# paused meanwhile while another group runs; `--retries 0` fails at once.
#
# Each case's fake gets a directory of its own (CASE/NAME -> fakeagent and
# CASE/NAME.args, as fake_agent_args writes it): its settings reach it
# whatever environment taskq gives the task, and the cases run in parallel.
# Each fake fails once (--fail-times 1), then succeeds; each task may retry
# once after 200 ms: a transient case ends succeeded after 2 attempts, a
# permanent one failed after 1 (a retry would have succeeded).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

cd "$TQ_TMP" || exit 1
T0=$(_tq_now_ms)

# The fake is a python3 script (#!/usr/bin/env python3): give the tasks the
# system python first on PATH, as lib.sh does for itself (a version
# manager's shim costs half a second a run).
mkdir -p "$TQ_TMP/pybin"
ln -sfn "$(command -v "$TQ_PYTHON")" "$TQ_TMP/pybin/python3"
PATH="$TQ_TMP/pybin:$PATH"
export PATH

# fake_case CASE NAME FAKE-OPTIONS...: a fake NAME (its style comes from the
# name: claude, gemini, codex; for any other name the options say --style
# text) in a directory of its own, which fails once with those options, then
# succeeds. Its path is in FAKE_PATH.
fake_case() {
	local case=$1 name=$2 dir
	shift 2
	dir="$TQ_TMP/fakes/$case"
	mkdir -p "$dir"
	ln -sfn "$FAKEAGENT" "$dir/$name"
	FAKE_AGENTS_DIR=$dir fake_agent_args "$name" --fail-times 1 --state-file "$dir/count" "$@"
	FAKE_PATH="$dir/$name"
}

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

CLAUDE_ARGS=(-p hi --output-format stream-json --verbose)

# The cases: name | program | fake options | extra arguments | expected
#   category | outcome of attempt 1 | final state | attempts | rule | text the
#   stored reason must contain
# "-" is an empty field. A transient case retries once and then succeeds.
CASES=$(
	cat <<'EOF'
c_rate_limit|claude|--mode rate_limit|-|rate_limit|failed|succeeded|2|claude.assistant.rate_limit|assistant.error=rate_limit: API Error: Request rejected (429)
c_overload|claude|--mode overload|-|overload|failed|succeeded|2|claude.result.status_5xx|api_error_status=529: API Error: 529 Overloaded
c_server_error|claude|--mode server_error|-|overload|failed|succeeded|2|claude.result.status_5xx|api_error_status=500: API Error: 500 Internal server error
c_network|claude|--mode network|-|network|failed|succeeded|2|claude.result.text+text.network|Unable to connect to API (ECONNRESET)
c_auth|claude|--mode auth|-|auth|failed|failed|1|claude.assistant.auth|assistant.error=authentication_failed: Invalid API key
c_billing|claude|--mode billing|-|auth|failed|failed|1|claude.assistant.billing|assistant.error=billing_error: Credit balance is too low
c_max_turns|claude|--mode max_turns|--max-turns 1|unknown|failed|failed|1|claude.result.limit|error_max_turns: Reached maximum number of turns (1)
c_invalid|claude|--mode invalid_request|-|unknown|failed|failed|1|claude.result.status_4xx|api_error_status=400: API Error: 400
g_173|gemini|--mode rate_limit|-o text|rate_limit|failed|succeeded|2|gemini.exit.rate_limit|exit code 173
g_247|gemini|--mode overload|-o text|overload|failed|succeeded|2|gemini.exit.overload|exit code 247
g_41|gemini|--mode auth|-o text|auth|failed|failed|1|gemini.exit.auth|exit code 41
g_json_429|gemini|--mode rate_limit|-o json|rate_limit|failed|succeeded|2|json.error.code_429|error.code=429
x_429|codex|--mode rate_limit|-|rate_limit|failed|succeeded|2|codex.turn_failed+text.rate_limit|429 Too Many Requests
x_demand|codex|--mode overload|-|overload|failed|succeeded|2|codex.turn_failed+text.overload|experiencing high demand
x_disconnect|codex|--mode network|-|network|failed|succeeded|2|codex.turn_failed+text.network|stream disconnected
t_429|mytool|--style text --mode rate_limit|-|rate_limit|failed|succeeded|2|text.rate_limit|Too Many Requests
t_tempfail|mytool|--style text --mode tempfail|-|overload|failed|succeeded|2|exit.tempfail|exit code 75: EX_TEMPFAIL
c_signal|claude|--signal-after-success TERM|-|unknown|signaled|failed|1|outcome.signaled|signal 15 (SIGTERM)
c_timeout|claude|--signal-after-success CONT|-|unknown|timed_out|timed_out|1|outcome.timed_out|timed out after 1.0s
c_retries0|claude|--mode rate_limit|-|rate_limit|failed|failed|1|claude.assistant.rate_limit|assistant.error=rate_limit: API Error: Request rejected (429)
EOF
)

# ---------------------------------------------------------------------------
check "a supervisor with 6 workers"
serve_start 6

check "every case submitted, each with a fake of its own and a group of its own"
declare -A ID
while IFS='|' read -r case prog fopts extra _; do
	# shellcheck disable=SC2086 # the options are words
	fake_case "$case" "$prog" $fopts
	opts=(--group "k-$case" --retries 1 --backoff 200ms --backoff-max 200ms
		--env CLAUDE_CODE_MAX_RETRIES=0)
	case $case in
	c_timeout) opts+=(--timeout 1s --kill-grace 1s) ;;
	c_retries0) opts+=(--retries 0) ;;
	esac
	case $prog in
	claude) argv=("${CLAUDE_ARGS[@]}") ;;
	gemini) argv=(-p hi) ;;
	codex) argv=(exec --json --skip-git-repo-check hi) ;;
	*) argv=() ;;
	esac
	# shellcheck disable=SC2206 # extra arguments are words
	[ "$extra" = - ] || argv+=($extra)
	ID[$case]=$(submit_id "${opts[@]}" -- "$FAKE_PATH" "${argv[@]}")
done <<<"$CASES"

check "every case ends in its final state, classified and retried (or not) as the issue says"
while IFS='|' read -r case prog _ _ cat outcome state natt rule why; do
	id=${ID[$case]}
	wait_state "$id" "$state" 30
	# one read (show --json): the task, its attempt 1 and (if any) attempt 2
	IFS=$'\x1f' read -r n a1_outcome a1_cat reason waited gap a2 t_outcome t_cat t_reason < <(
		tq show "$id" --json | "$TQ_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
att = {a["attempt"]: a for a in d["attempts"]}
a1, a2 = att[1], att.get(2)
def sub(x, y):
    return None if x is None or y is None else x - y
print("\x1f".join("" if v is None else str(v) for v in (
    len(d["attempts"]), a1["outcome"], a1["category"], a1["reason"],
    sub(a1["retry_at"], a1["ended_at"]),
    sub(a2["started_at"], a1["retry_at"]) if a2 else None,
    a2["outcome"] + "/" + (a2["category"] or "-") if a2 and a2["outcome"] else None,
    d["outcome"], d["category"], d["reason"])))')
	assert_eq "$natt" "$n" "$case (task $id): attempts"
	assert_eq "$outcome|$cat" "$a1_outcome|$a1_cat" "$case (task $id): attempt 1 outcome|category"
	assert_contains "$reason" "$why" "$case (task $id): attempt 1's reason"
	explain_has "$id" 1 "$rule" "$cat"
	if [ "$natt" = 2 ]; then
		# retried: after a wait within [d/2, d] (d = 200 ms), not before its
		# time, and the retry succeeded; the task has no category left
		assert_eq "succeeded/-" "$a2" "$case (task $id): attempt 2 outcome/category"
		assert_eq "succeeded|" "$t_outcome|$t_cat" "$case (task $id): the task's outcome|category"
		in_range "$waited" 100 200 ||
			fail "$case (task $id): attempt 1 waited $waited ms for its retry, not within [100, 200]"
		[ "$gap" -ge 0 ] || fail "$case (task $id): the retry started $((-gap)) ms before its retry time"
		assert_eq 2 "$(cat "$TQ_TMP/fakes/$case/count")" "$case: runs of the fake"
	else
		# not retried (a retry would have succeeded): no retry time, and
		# the task keeps the attempt's verdict
		assert_eq "||" "$waited|$gap|$a2" "$case (task $id): a retry time or a second attempt"
		assert_eq "$outcome|$cat|$reason" "$t_outcome|$t_cat|$t_reason" \
			"$case (task $id): the task's outcome|category|reason"
		assert_eq 1 "$(cat "$TQ_TMP/fakes/$case/count")" "$case: runs of the fake"
	fi
	echo "    $case: task $id $state after $n attempt(s); attempt 1: $outcome, $cat, rule $rule, reason: $reason"
done <<<"$CASES"

check "the signal and timeout cases had printed a success result first"
for case in c_signal c_timeout; do
	log_bytes "${ID[$case]}" >"$TQ_TMP/$case.out"
	last_result "$TQ_TMP/$case.out" | pyjson 'd["is_error"]' | grep -qx false ||
		fail "$case: no success result in its output: $(cat "$TQ_TMP/$case.out")"
done
assert_eq "$(kill -l TERM)" "$(att "${ID[c_signal]}" 1 signal)" "the signal that ended c_signal"

check "taskq classify --explain (human form) names the rule, category and retry"
assert_exit 0 tq classify "${ID[c_rate_limit]}" --attempt 1 --explain
assert_contains "$(out)" "rule:       claude.assistant.rate_limit"
assert_contains "$(out)" "category:   rate_limit"
assert_contains "$(out)" "transient:  yes"
assert_contains "$(out)" "=> rate_limit (rule claude.assistant.rate_limit)"
assert_exit 0 tq classify "${ID[c_auth]}" --explain
assert_contains "$(out)" "rule:       claude.assistant.auth"
assert_contains "$(out)" "transient:  no"

check "taskq show lists the attempts with their category and reason"
assert_exit 0 tq show "${ID[c_rate_limit]}"
assert_contains "$(out)" "attempts:     2"
assert_contains "$(out)" "rate_limit"
assert_contains "$(out)" "Request rejected (429)"

check "list --state failed --category filters"
assert_exit 0 tq list --state failed --category auth --json
assert_eq "$(printf '%s\n' "${ID[c_auth]}" "${ID[c_billing]}" "${ID[g_41]}" | sort -n | tr '\n' ' ')" \
	"$(out | pyjson '" ".join(str(i) for i in sorted(t["id"] for t in d))') "
assert_exit 0 tq list --state failed --category rate_limit --json
assert_eq "[${ID[c_retries0]}]" "$(out | pyjson '[t["id"] for t in d]' | tr -d ' ')"
echo "    cases done after $(($(_tq_now_ms) - T0)) ms"

# ---------------------------------------------------------------------------
# The rate-limit scenario, with `claude` found on PATH and its default group.

check "a claude task that hits a rate limit twice, then succeeds (default group claude)"
PATH="$(fake_agents_path):$PATH"
export PATH
fake_agent_args claude --mode rate_limit --fail-times 2 --state-file "$TQ_TMP/a.n"
a=$(submit_id --backoff 1s --backoff-max 4s --env CLAUDE_CODE_MAX_RETRIES=0 -- claude "${CLAUDE_ARGS[@]}")
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
	wait_for "[ -n \"\$(att $a $n ended_at)\" ]" 30 ||
		fail "task $a: attempt $n did not end ($(state_of "$a"))"
	probe "$n"
done
wait_state "$a" succeeded 30
for n in 1 2; do
	wait_state "${B[$n]}" succeeded
	wait_state "${C[$n]}" succeeded
done

check "it ended succeeded after 3 attempts: rate_limit, rate_limit, success"
assert_eq 3 "$(n_attempts "$a")" "attempts of the rate-limited task"
assert_eq "failed|rate_limit;failed|rate_limit;succeeded|" \
	"$(attempts_of "$a" outcome category | paste -sd';')"
assert_eq 3 "$(cat "$TQ_TMP/a.n")" "runs of the fake"
for n in 1 2; do
	explain_has "$a" "$n" claude.assistant.rate_limit rate_limit
	assert_eq null "$(out | pyjson 'd["retry_at"]')" "attempt $n: a retry time from the provider"
done

check "backoff within its jitter bounds: [d/2, d] for d = 1 s, then 2 s; each retry at or after its time"
for n in 1 2; do
	d=$((1000 << (n - 1)))
	w=$(retry_wait "$a" "$n")
	in_range "$w" $((d / 2)) "$d" ||
		fail "attempt $n waited $w ms, not within [$((d / 2)), $d]"
	gap=$(retry_gap "$a" "$n")
	[ "$gap" -ge 0 ] || fail "attempt $((n + 1)) started $((-gap)) ms before its retry time"
	echo "    attempt $n: waited $w ms (d = $d); attempt $((n + 1)) started $gap ms after its retry time"
done

check "while it waited, group claude started nothing, group other ran, taskq status showed the pause"
pause_probes "$a"

check "--retries 0: the same rate limit fails at once"
fake_agent_args claude --mode rate_limit
d=$(submit_id --retries 0 --backoff 200ms --env CLAUDE_CODE_MAX_RETRIES=0 -- claude "${CLAUDE_ARGS[@]}")
wait_state "$d" failed
assert_eq "1|failed|rate_limit" "$(task_field "$d" attempt outcome category)"
fake_agent_args claude
echo "    total $(($(_tq_now_ms) - T0)) ms"
