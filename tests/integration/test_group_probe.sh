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
wait_for "[ \"\$(tq_sql \"select paused_until > 0 from groups where name = 'api'\")\" = 1 ]" 20 ||
	fail "the rate limit did not pause group api"
assert_eq rate_limit "$(tq_sql "select category from attempts where task_id = $a and attempt = 1")"

check "three more tasks of the group wait in the pause"
others=()
for n in 1 2 3; do
	others+=("$(submit_id --group api -- "${FA[@]}" --sleep 1)")
done
for id in "${others[@]}"; do
	assert_eq queued "$(state_of "$id")"
done

check "the pause lifts: one task runs (the probe), status and group list say probing"
wait_for "[ \"\$(tq_sql \"select count(*) from attempts where task_id = $a\")\" -ge 2 ]" 20 ||
	fail "task $a was not retried"
probe_task() {
	tq status --json | "$TQ_PYTHON" -c '
import json, sys
g = [g for g in json.load(sys.stdin)["groups"] if g["name"] == "api"][0]
print("%s %s" % (g["probing"], g["probe_task"]))'
}
# seen while the probe's 2 s run lasts (the check after it ends always runs)
if wait_for "[ \"\$(probe_task)\" = \"True $a\" ]" 2; then
	assert_contains "$(tq status)" "group api: 1 running, 3 queued, probing: task $a runs first"
	assert_exit 0 tq group list
	assert_contains "$(out)" "probing (task $a)"
	for id in "${others[@]}"; do
		assert_eq queued "$(state_of "$id")"
	done
else
	echo "(machine too slow to see the probe running; checking times only)"
fi

check "the probe hits the limit again: the group pauses again, the others still wait"
wait_for "[ \"\$(tq_sql \"select count(*) from attempts where task_id = $a and ended_at is not null\")\" -ge 2 ]" 20
assert_eq rate_limit "$(tq_sql "select category from attempts where task_id = $a and attempt = 2")"
for id in "${others[@]}"; do
	assert_eq 0 "$(tq_sql "select count(*) from attempts where task_id = $id")" \
		"task $id started while the probe ran"
done

check "the second probe succeeds; only then do the others start"
wait_state "$a" succeeded 30
for id in "${others[@]}"; do
	wait_state "$id" succeeded 20
done
probe_end=$(tq_sql "select ended_at from attempts where task_id = $a and attempt = 3")
probe_start=$(tq_sql "select started_at from attempts where task_id = $a and attempt = 3")
for id in "${others[@]}"; do
	start=$(tq_sql "select started_at from attempts where task_id = $id and attempt = 1")
	[ "$start" -ge "$probe_end" ] ||
		fail "task $id started at $start, before the probe ended at $probe_end (started $probe_start)"
	assert_eq 1 "$(tq_sql "select count(*) from attempts where task_id = $id")"
done
assert_eq "rate_limit|rate_limit|" "$(tq_sql "select group_concat(coalesce(category,''), '|') from (select category from attempts where task_id = $a order by attempt)")"

check "released: the group is no longer probing"
assert_exit 0 tq group list --json
assert_eq "[false, false, null]" "$(out | pyjson '[[g["probe"], g["probing"], g.get("probe_task")] for g in d if g["name"] == "api"][0]')"

check "a pause by hand is not probed: resume starts every queued task at once"
assert_exit 0 tq pause hand
h=()
for n in 1 2 3; do
	h+=("$(submit_id --group hand -- "${FA[@]}" --sleep 2)")
done
assert_exit 0 tq resume hand
wait_for "[ \"\$(tq_sql \"select count(*) from tasks where grp = 'hand' and state = 'running'\")\" = 3 ]" 20 ||
	fail "resume did not start the three tasks together: $(tq_sql "select id, state from tasks where grp = 'hand'")"
