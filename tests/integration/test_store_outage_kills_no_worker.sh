#!/usr/bin/env bash
# A worker whose heartbeat went stale only because the store refused every
# write (another connection held the write lock, as a full disk would) is
# not killed the moment the store takes writes again: it gets a lease to
# renew, so its task runs on and is not recorded lost. (Before: the
# supervisor's first tick with a writable store killed every worker that
# had not heartbeaten for 3 leases, before the worker's own next renewal:
# with the default 10 s lease most ticks come first, and a healthy task
# became lost -- with --retry-lost it ran again.) The race is made certain
# here by stopping the worker (SIGSTOP) from before the lock goes until the
# supervisor has written once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

probed() { tq_sql "select coalesce((select value from meta where key = 'supervisor_probe'), 0)"; } # SQL: the database itself (the store outage: the supervisor's write probe)
# the worker that holds task $id heartbeat after the store came back
beaten() {
	local h
	h=$(worker_field "$(task_field "$id" worker_id)" heartbeat_at)
	[ -n "$h" ] && [ "$h" -gt "$t_release" ]
}

serve_start 1 # --lease 1s: stale after 3 s
id=$(submit_id --retry-lost -- sh -c "echo run >>'$TQ_TMP/runs'; while [ ! -e '$TQ_TMP/go' ]; do sleep 0.02; done")
wait_state "$id" running
wpid=$(worker_pids)

check "the store refuses writes for longer than 3 leases"
hold_lock
wait_for "grep -q 'the store refuses writes' '$TQ_TMP/serve.log'" 30 ||
	fail "the supervisor never found the worker stale: $(tail -3 "$TQ_TMP/serve.log")"

check "the store takes writes again; the supervisor writes first: the worker is not killed"
kill -STOP "$wpid"
# the supervisor's next write (it may be waiting for the lock already, its
# value stamped before): a value other than the last refused one
p0=$(probed)
t_release=$(_tq_now_ms)
release_lock
wait_for "[ \"\$(probed)\" != $p0 ]" 30 || fail "the supervisor did not write"
kill -CONT "$wpid" 2>/dev/null || true
_tq_alive "$wpid" || fail "the worker was killed: $(grep killing "$TQ_TMP/serve.log" | tail -1)"

check "its task runs on, and ends once, succeeded"
wait_for beaten 30 ||
	fail "the worker did not heartbeat again: $(tail -3 "$TQ_TMP/serve.log")"
touch "$TQ_TMP/go"
wait_state "$id" succeeded 30
assert_eq 1 "$(attempt_count "$id")" "attempts"
assert_eq 1 "$(wc -l <"$TQ_TMP/runs")" "runs"
_tq_alive "$wpid" || fail "the worker was killed after all"
assert_not_contains "$(cat "$TQ_TMP/serve.log")" "killing it"
