#!/usr/bin/env bash
# taskq wait ID... / wait --batch NAME: blocks until the tasks end and exits
# 0 (all succeeded), the single task's own status, 1 (several or a batch
# with failures) or 124 (--timeout); unknown ids and batches exit 2; --json
# is a summary. A batch with a task waiting for a retry is not done.
# taskq batch list / show: counts, times, failures with their reasons.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "usage errors and unknown ids or batches: exit 2, one line"
assert_exit 2 tq wait
assert_one_line_error
assert_exit 2 tq wait 1
assert_one_line_error
assert_contains "$(err)" "does not exist (state directory from TASKQ_HOME)"

ok=$(submit_id -- true)
three=$(submit_id -- sh -c 'exit 3')
assert_exit 2 tq wait 99999
assert_eq 'taskq: wait: task 99999: no such task' "$(err)"
assert_exit 2 tq wait --batch nope
assert_one_line_error
assert_contains "$(err)" "batch nope"
assert_exit 2 tq batch show nope
assert_exit 0 tq batch list
assert_contains "$(out)" "BATCH"
assert_exit 0 tq batch list --json
assert_eq "[]" "$(out)"
sig=$(submit_id -- sh -c 'kill -TERM $$')
for i in 1 2 3; do submit_id --batch good -- sh -c "echo $i" >/dev/null; done
submit_id --batch mixed -- true >/dev/null
bad=$(submit_id --batch mixed --name badone -- sh -c 'echo oops >&2; exit 4')
submit_id --batch mixed -- sh -c 'exit 0' >/dev/null

assert_exit 2 tq wait "$ok" 999
assert_contains "$(err)" "task 999: no such task"
assert_exit 2 tq wait "$ok" --batch good
assert_one_line_error
assert_exit 2 tq wait --timeout 5x "$ok"
assert_contains "$(err)" '--timeout "5x"'

check "nothing runs them yet: --timeout gives up with 124, the tasks go on"
assert_exit 124 tq wait --timeout 300ms "$ok"
assert_contains "$(err)" "timed out after"
assert_contains "$(out)" "$ok queued"
assert_exit 124 tq wait --timeout 200ms --json --batch good
assert_eq "False True 124 3 3" "$(out | pyjson '" ".join(str(x) for x in (d["done"], d["timed_out"], d["exit_status"], d["total"], d["counts"]["queued"]))')"
assert_eq queued "$(state_of "$ok")"

check "batch list before any ran: counts by state"
assert_exit 0 tq batch list --json
assert_eq '["mixed", "good"]' "$(out | pyjson '[b["name"] for b in d]')"
assert_eq 3 "$(out | pyjson 'd[1]["counts"]["queued"]')"

serve_start 2

check "one task: its own exit status"
assert_exit 0 tq wait "$ok"
assert_eq "$ok succeeded" "$(out)"
assert_exit 3 tq wait "$three"
assert_contains "$(out)" "$three failed, exit status 3"
assert_exit 143 tq wait "$sig"

check "several tasks: 0 only if all succeeded, else 1"
assert_exit 1 tq wait "$ok" "$three"
assert_eq 2 "$(out | wc -l)"
assert_exit 0 tq wait "$ok" "$ok"

check "--json for ids: per task state, outcome, exit_status; counts"
assert_exit 1 tq wait --json "$ok" "$three"
assert_eq "True False 1 2" "$(out | pyjson '" ".join(str(x) for x in (d["done"], d["timed_out"], d["exit_status"], d["total"]))')"
assert_eq '[["succeeded", "succeeded", 0], ["failed", "failed", 3]]' \
	"$(out | pyjson '[[t["state"], t["outcome"], t["exit_status"]] for t in d["tasks"]]')"
assert_eq "1 1" "$(out | pyjson '" ".join(str(d["counts"][k]) for k in ("succeeded", "failed"))')"

check "a batch that all succeeded: 0; one with a failure: 1, the failure shown"
assert_exit 0 tq wait --batch good
assert_contains "$(out)" "batch good: 3 tasks: 3 succeeded"
assert_exit 1 tq wait --batch mixed
assert_contains "$(out)" "batch mixed: 3 tasks: 2 succeeded, 1 failed"
assert_contains "$(out)" "$bad failed, exit status 4"
assert_exit 1 tq wait --batch mixed --json
assert_eq "mixed 3 2 1 1" "$(out | pyjson '" ".join(str(x) for x in (d["batch"], d["total"], d["counts"]["succeeded"], d["counts"]["failed"], d["exit_status"]))')"
assert_eq 3 "$(out | pyjson 'len(d["tasks"])')"

check "batch show: counts, elapsed, the failure with outcome, category and reason"
assert_exit 0 tq batch show mixed
assert_contains "$(out)" "status:     done"
assert_contains "$(out)" "tasks:      3: 2 succeeded, 1 failed"
assert_contains "$(out)" "failures:   1"
assert_contains "$(out)" "badone"
assert_contains "$(out)" "exit code 4"
assert_exit 0 tq batch show mixed --json
assert_eq "True 3 1 $bad failed unknown 4" "$(out | pyjson '" ".join(str(x) for x in (d["done"], d["total"], len(d["failures"]), d["failures"][0]["id"], d["failures"][0]["outcome"], d["failures"][0]["category"], d["failures"][0]["exit_status"]))')"
assert_eq true "$(out | pyjson 'd["elapsed_ms"] >= 0 and d["cost_usd"] is None')"
assert_exit 0 tq batch list
assert_contains "$(out)" "mixed"
assert_exit 2 tq batch show
assert_one_line_error
assert_exit 2 tq batch frob
assert_one_line_error

check "a batch waits for a retry: a task scheduled for its next attempt is not done"
# exit 75 (EX_TEMPFAIL) is transient: retried after the backoff (an hour,
# so that it surely waits; then made due by hand); the second run succeeds
r=$(submit_id --batch retry --retries 2 --backoff 1h --backoff-max 1h -- \
	sh -c "if [ -e '$TQ_TMP/second' ]; then exit 0; fi; touch '$TQ_TMP/second'; exit 75")
wait_state "$r" scheduled
assert_exit 124 tq wait --batch retry --timeout 200ms
assert_contains "$(out)" "1 scheduled"
assert_exit 124 tq wait "$r" --timeout 100ms
tq_sql "update tasks set run_after = 0 where id = $r" # SQL: the database itself (setup: a retry made due by hand, which no command does)
submit_id -- true >/dev/null # rings the doorbell: a worker looks again
assert_exit 0 tq wait --batch retry --timeout 30s
assert_eq 2 "$(task_field "$r" attempt)"

check "a wait that ends while it waits: exit status as the task ended"
slow=$(submit_id --batch slow -- sh -c 'sleep 0.5; exit 6')
assert_exit 6 tq wait --timeout 30s "$slow"
assert_exit 1 tq wait --timeout 30s --batch slow
