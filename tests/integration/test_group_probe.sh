#!/usr/bin/env bash
# The half-open probe after a rate limit: when a rate limit's pause lifts,
# one task of the group starts (the probe); the others start only once it
# ended without a rate limit. A probe that hits the limit again pauses the
# group again. status and group list show the group as probing. (Before,
# the whole group started at once when the pause lifted and met the limit
# again together.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_agents.sh"

FA=("$FAKEAGENT" -p hi --output-format stream-json --verbose)

serve_start 4

check "a task of group api hits a rate limit twice (retry-after 2 s): the group pauses"
# its third run succeeds; each run takes 2 s, so a probe is seen running
a=$(submit_id --group api --backoff 1s --backoff-max 1s -- "${FA[@]}" --mode rate_limit \
	--retry-after 2 --fail-times 2 --state-file "$TQ_TMP/a.n" --sleep 2)
wait_for "[ -n \"\$(group_field api rate_limited_until)\" ]" 20 ||
	fail "the rate limit did not pause group api"
assert_eq rate_limit "$(attempt_field "$a" 1 category)"
# group list --json: the pause's end is attempt 1's retry time; paused_until
# says it while it lasts, rate_limited_until also once it has passed
assert_eq "$(attempt_field "$a" 1 retry_at)" "$(group_field api rate_limited_until)" \
	"group api rate-limited until the retry time"
IFS="|" read -r until_now rl < <(tq_json group list --json -- --where name api paused_until rate_limited_until)
now=$(_tq_now_ms)
[ -z "$until_now" ] && [ "$rl" -le "$now" ] || [ "$until_now" = "$rl" ] ||
	fail "paused_until [$until_now] is not rate_limited_until [$rl] while the pause lasts"

check "three more tasks of the group wait in the pause"
others=()
for n in 1 2 3; do
	others+=("$(submit_id --group api -- "${FA[@]}" --sleep 1)")
done
for id in "${others[@]}"; do
	assert_eq queued "$(state_of "$id")"
done

check "the pause lifts: one task runs (the probe), status and group list say probing"
wait_for "[ \"\$(attempt_count $a)\" -ge 2 ]" 20 ||
	fail "task $a was not retried"
probe_task() {
	tq status --json | "$TQ_PYTHON" -c '
import json, sys
g = [g for g in json.load(sys.stdin)["groups"] if g["name"] == "api"][0]
print("%s %s" % (g["probing"], g["probe_task"]))'
}
# seen while the probe's 2 s run lasts (the check after it ends always runs):
# status, group list and the others' states read between two looks that
# both find the same attempt probing, so all of them are of its run (on a loaded
# machine one command can outlast the probe: the next try reads again)
probe_snapshot() {
	local id n
	n=$(attempt_count "$a")
	[ "$(probe_task)" = "True $a" ] || return 1
	SNAP_STATUS=$(tq status)
	SNAP_GROUPS=$(tq group list)
	SNAP_STATES=
	for id in "${others[@]}"; do
		SNAP_STATES+="$(state_of "$id") "
	done
	[ "$(probe_task)" = "True $a" ] && [ "$(attempt_count "$a")" = "$n" ]
}
if wait_for probe_snapshot 2; then
	assert_contains "$SNAP_STATUS" "group api: 1 running, 3 queued, probing: task $a runs first"
	assert_contains "$SNAP_GROUPS" "probing (task $a)"
	assert_eq "queued queued queued " "$SNAP_STATES" "the others, while the probe ran"
else
	echo "(machine too slow to see the probe running; checking times only)"
fi

check "the probe hits the limit again: the group pauses again, the others still wait"
wait_for "[ -n \"\$(attempt_field $a 2 ended_at)\" ]" 20
assert_eq rate_limit "$(attempt_field "$a" 2 category)"
for id in "${others[@]}"; do
	assert_eq 0 "$(attempt_count "$id")" \
		"task $id started while the probe ran"
done

check "the second probe succeeds; only then do the others start"
wait_state "$a" succeeded 30
for id in "${others[@]}"; do
	wait_state "$id" succeeded 20
done
IFS='|' read -r probe_start probe_end < <(attempt_field "$a" 3 started_at ended_at)
for id in "${others[@]}"; do
	start=$(attempt_field "$id" 1 started_at)
	[ "$start" -ge "$probe_end" ] ||
		fail "task $id started at $start, before the probe ended at $probe_end (started $probe_start)"
	assert_eq 1 "$(attempt_count "$id")"
done
assert_eq "rate_limit|rate_limit|" "$(attempts_of "$a" category | paste -sd'|')"

check "released: the group is no longer probing; rate_limited_until keeps the last pause's end"
assert_exit 0 tq group list --json
assert_eq "[false, false, null]" "$(out | pyjson '[[g["probe"], g["probing"], g.get("probe_task")] for g in d if g["name"] == "api"][0]')"
assert_eq "|$(attempt_field "$a" 2 retry_at)" "$(group_field api paused_until rate_limited_until)" \
	"group api: no pause now; the last one ended at attempt 2's retry time"
assert_exit 0 tq resume api
assert_eq "|" "$(group_field api paused_until rate_limited_until)" "group api after a resume"

check "a pause by hand is not probed: resume starts every queued task at once"
assert_exit 0 tq pause hand
h=()
for n in 1 2 3; do
	h+=("$(submit_id --group hand -- "${FA[@]}" --sleep 2)")
done
assert_exit 0 tq resume hand
wait_for "[ \"\$(task_count --group hand --state running)\" = 3 ]" 20 ||
	fail "resume did not start the three tasks together: $(tq list --group hand)"
assert_eq "" "$(group_field hand rate_limited_until)" "a pause by hand is no rate limit"
