#!/usr/bin/env bash
# 200 tasks across 4 workers: each runs exactly once and is recorded once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "200 tasks submitted, then run by 4 workers"
for i in $(seq 1 200); do
	submit_id --shell "echo $i >> $TQ_TMP/ran" >/dev/null
done
serve_start 4
wait_for "[ \"\$(tq_sql \"select count(*) from tasks where state = 'succeeded'\")\" -eq 200 ]" 120 ||
	fail "only $(tq_sql "select count(*) from tasks where state = 'succeeded'") of 200 succeeded"
check "each ran exactly once"
assert_eq 200 "$(wc -l < "$TQ_TMP/ran")"
assert_eq 200 "$(sort -u "$TQ_TMP/ran" | wc -l)"
assert_eq 200 "$(tq_sql "select count(*) from attempts")"
assert_eq 0 "$(tq_sql "select count(*) from tasks where attempt != 1")"
check "the work was spread over the workers"
used=$(tq_sql "select count(distinct worker_id) from attempts")
[ "$used" -ge 2 ] || fail "only $used worker(s) ran tasks"
