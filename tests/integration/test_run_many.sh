#!/usr/bin/env bash
# 200 tasks across 4 workers: each runs exactly once and is recorded once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "200 tasks submitted, then run by 4 workers"
for i in $(seq 1 200); do
	submit_id --shell "echo $i >> $TQ_TMP/ran" >/dev/null
done
serve_start 4
wait_for "[ \"\$(state_count succeeded)\" -eq 200 ]" 120 ||
	fail "only $(state_count succeeded) of 200 succeeded"
check "each ran exactly once"
assert_eq 200 "$(wc -l < "$TQ_TMP/ran")"
assert_eq 200 "$(sort -u "$TQ_TMP/ran" | wc -l)"
# every task's attempts, from show --json: one line a task
for id in $(task_ids); do
	tq show "$id" --json
done >"$TQ_TMP/shown"
assert_eq 200 "$(wc -l <"$TQ_TMP/shown")" "tasks shown"
assert_eq 200 "$("$TQ_PYTHON" -c 'import json, sys; print(sum(len(json.loads(l)["attempts"]) for l in sys.stdin))' <"$TQ_TMP/shown")" "attempts"
assert_eq 0 "$("$TQ_PYTHON" -c 'import json, sys; print(sum(json.loads(l)["attempt"] != 1 for l in sys.stdin))' <"$TQ_TMP/shown")" "tasks whose attempt is not 1"
check "the work was spread over the workers"
used=$("$TQ_PYTHON" -c 'import json, sys; print(len({a["worker_id"] for l in sys.stdin for a in json.loads(l)["attempts"]}))' <"$TQ_TMP/shown")
[ "$used" -ge 2 ] || fail "only $used worker(s) ran tasks"
