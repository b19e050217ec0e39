#!/usr/bin/env bash
# test_pg_submit_outage.sh - a submit while the PostgreSQL store is away
# (issue 20): a commit cut off after the server did it is not stored twice
# nor reported failed (the submit's token: a proxy drops the COMMIT's
# answer); a submit while the server is stopped tries again for
# TASKQ_DB_RETRY, then fails with one line and exit 1 having stored
# nothing, directly and through a supervisor; one while it restarts rides it
# out. The stops are of a cluster of the test's own (lib_pg.sh), so the
# other tests of the PostgreSQL pass, running beside it, never see them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_pg.sh"

check "a commit whose answer was lost: the submit finds its task by its token, stores it once, exit 0"
pg_proxy_start
assert_exit 0 tq db migrate
pg_proxy cut-after-commit
assert_exit 0 env TASKQ_SUBMIT_VIA=direct "$TASKQ_BIN" submit --name cut -- true
id=$(out)
pg_proxy_wait "cut COMMIT"
assert_eq "" "$(err)" "stderr of the submit"
assert_eq 1 "$(task_count)" "tasks stored"
assert_eq cut "$(task_field "$id" name)" "the printed id is the task"
pg_proxy_stop

check "the server stopped: a submit tries for TASKQ_DB_RETRY, then one line, exit 1, nothing stored"
pg_own_cluster
assert_exit 0 tq db migrate
pg_stop
t0=$(_tq_now_ms)
assert_exit 1 env TASKQ_DB_RETRY=2s "$TASKQ_BIN" submit -- true
took=$(($(_tq_now_ms) - t0))
assert_one_line_error
assert_contains "$(err)" "tried for 2" "how long it tried"
[ "$took" -ge 2000 ] && [ "$took" -lt 9000 ] || fail "it gave up after $took ms, not 2 s"
t0=$(_tq_now_ms)
assert_exit 1 env TASKQ_DB_RETRY=0 "$TASKQ_BIN" submit -- true
took=$(($(_tq_now_ms) - t0))
assert_one_line_error
[ "$took" -lt 1500 ] || fail "TASKQ_DB_RETRY=0 still waited $took ms"
assert_exit 2 env TASKQ_DB_RETRY=5x "$TASKQ_BIN" submit -- true
assert_one_line_error
assert_contains "$(err)" "TASKQ_DB_RETRY" "a bad value named"
pg_start
assert_eq 0 "$(task_count)" "tasks stored"

check "the same through a running supervisor: it cannot store either, the client tries, one line, exit 1"
serve_start 1
pg_stop
assert_exit 1 env TASKQ_DB_RETRY=1s "$TASKQ_BIN" submit -- true
assert_one_line_error
pg_start
assert_eq 0 "$(task_count)" "tasks stored"

check "a submit while the server restarts rides it out: stored once, and run"
pg_stop
tq_bg sh -c 'exec "$1" submit --name across -- true >"$2" 2>"$3"' sh "$TASKQ_BIN" \
	"$TQ_TMP/across.out" "$TQ_TMP/across.err"
sub=$TQ_LAST_PID
pg_start
wait "$sub" || fail "the submit failed: $(cat "$TQ_TMP/across.err")"
id=$(cat "$TQ_TMP/across.out")
assert_eq "" "$(cat "$TQ_TMP/across.err")" "stderr of the submit"
assert_eq 1 "$(task_count)" "tasks stored"
wait_state "$id" succeeded 30
