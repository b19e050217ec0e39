#!/usr/bin/env bash
# test_pg_restart_running.sh - a PostgreSQL store restarted, stopped and
# its connections ended under a running task (issue 20): the task keeps
# running (one process, one attempt: the lease, 1 s here, runs out while
# the store is away, and nobody took it over), its output is kept and
# stored after, every line once and in order, and its end is recorded
# (exit 3: failed); its --on-exit hook runs once; log --follow and wait,
# started before, ride it out; an idle worker claims again after. The
# cluster is the test's own (lib_pg.sh): its stops touch no other test.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_pg.sh"

pg_own_cluster
assert_exit 0 tq db migrate
serve_start 2

# N lines on each stream, one pair every 20 ms, then exit 3
task() {
	submit_id --on-exit "echo \"\$TASKQ_ID \$TASKQ_EXIT_CODE\" >>'$TQ_TMP/hook'" -- \
		sh -c 'i=0; while [ $i -lt "$1" ]; do i=$((i + 1)); echo "out $i"; echo "err $i" >&2;
			sleep 0.02; done; exit 3' t "$1"
}
lines_of() { tq log "$1" | wc -l; }
# every line of task ID once and in order: "out 1" "err 1" ... on its streams
check_log() {
	local id=$1 n=$2
	assert_eq "$(seq 1 "$n" | sed 's/^/out /')" "$(tq log "$id" --offset 0 --stream stdout)" "task $id's stdout"
	assert_eq "$(seq 1 "$n" | sed 's/^/err /')" "$(tq log "$id" --offset 0 --stream stderr)" "task $id's stderr"
}
check_end() {
	local id=$1 pid=$2
	assert_eq "failed|3" "$(task_field "$id" state exit_code)" "task $id's end"
	assert_eq 1 "$(attempt_count "$id")" "task $id's attempts"
	assert_eq "$pid" "$(task_pid "$id")" "task $id's process"
	wait_for "grep -q '^$id 3$' '$TQ_TMP/hook'" 20 || fail "task $id's hook did not run"
	assert_eq 1 "$(grep -c "^$id " "$TQ_TMP/hook")" "task $id's hook runs"
}

check "restarted, then stopped for a while under a running task: it runs on, output and end recorded"
N=400
id=$(task $N)
wait_for "[ \"\$(lines_of $id)\" -ge 20 ]" 30 || fail "task $id did not start"
pid=$(task_pid "$id")
tq_bg sh -c 'exec "$1" log "$2" --follow >"$3" 2>"$4"' sh "$TASKQ_BIN" "$id" \
	"$TQ_TMP/follow.out" "$TQ_TMP/follow.err"
follow=$TQ_LAST_PID
tq_bg sh -c '"$1" wait "$2" >"$3" 2>&1; echo $? >"$4"' sh "$TASKQ_BIN" "$id" \
	"$TQ_TMP/wait.out" "$TQ_TMP/wait.rc"
wait_for "[ -s '$TQ_TMP/follow.out' ]" 10 || fail "log --follow printed nothing"
pg_restart fast
lease=$(task_field "$id" lease_until)
pg_stop fast
# the worker says the store is away; the store stays away until the
# task's lease has run out (1 s), its output kept meanwhile
wait_for "grep -q 'task $id: .*the task goes on' '$TQ_TMP/serve.log'" 20 ||
	fail "the worker did not see the store go: $(tail -5 "$TQ_TMP/serve.log")"
wait_for "[ \$(date +%s%3N) -gt $((lease + 500)) ]" 10
_tq_alive "$pid" || fail "task $id's process ended while the store was away"
pg_start
wait_state "$id" failed 60
check_end "$id" "$pid"
check_log "$id" "$N"
rc=0
wait "$follow" || rc=$?
assert_eq 3 "$rc" "log --follow's exit (the task's): $(cat "$TQ_TMP/follow.err")"
assert_eq "$(tq log "$id" --offset 0)" "$(cat "$TQ_TMP/follow.out")" "what log --follow printed"
wait_for "[ -s '$TQ_TMP/wait.rc' ]" 20 || fail "taskq wait did not end"
assert_eq 3 "$(cat "$TQ_TMP/wait.rc")" "taskq wait's exit"
assert_contains "$(cat "$TQ_TMP/serve.log")" "task $id: the store is back after" "the worker's word"

check "the server crashes (an immediate stop) under a running task: it runs on, its end recorded"
# A crash undoes the last commits the server had not flushed (a worker
# commits without waiting for the disk: README, Durability): lines the
# writer had stored may be gone; those it still held go on after the
# store's last line, behind a note. So: every line at most once, in order.
N=300
id=$(task $N)
wait_for "[ \"\$(lines_of $id)\" -ge 20 ]" 30 || fail "task $id did not start"
pid=$(task_pid "$id")
pg_stop immediate
wait_for "grep -q 'task $id: .*the task goes on' '$TQ_TMP/serve.log'" 20 ||
	fail "the worker did not see the store go: $(tail -5 "$TQ_TMP/serve.log")"
pg_start
wait_state "$id" failed 60
check_end "$id" "$pid"
for s in stdout stderr; do
	tq log "$id" --offset 0 --stream "$s" | grep -v '^taskq: ' |
		awk '{ n = $2 + 0; if (n <= last) { print "line " $0 " after " last; exit 1 } last = n }' ||
		fail "task $id's $s lines are not each once in order"
done
assert_contains "$(tq log "$id" | tail -1)" "$N" "its last line"

check "every connection ended (pg_terminate_backend) under a running task: the same"
N=150
id=$(task $N)
wait_for "[ \"\$(lines_of $id)\" -ge 20 ]" 30 || fail "task $id did not start"
pid=$(task_pid "$id")
pg_terminate_all >/dev/null
wait_state "$id" failed 60
check_end "$id" "$pid"
check_log "$id" "$N"

check "an idle worker claims again after a restart"
pg_restart fast
id=$(submit_id -- true)
wait_state "$id" succeeded 30
