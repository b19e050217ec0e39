#!/usr/bin/env bash
# A task that ends while the disk is full (and the store will not take its
# end) still has its end kept in an end record: each worker holds room for
# one (an unnamed file in ends/, allocated), so the worker and the
# supervisor can die before there is room again, and the next supervisor
# writes the true end -- never lost, never run twice. (Before: the record
# could not be written on the full disk, the end lived only in the worker,
# and killing it made the task lost.) The state directory is a small tmpfs
# mounted by the test: root only (skipped, saying why, otherwise).
. "$(dirname "$0")/lib_disk.sh"
disk_needed end_kept_on_a_full_disk
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

mkdir -p "$TASKQ_HOME"
disk_mount 4m "$TASKQ_HOME"

serve_start 1
id=$(submit_id --retry-lost -- sh -c "echo run >>'$TQ_TMP/runs'; while [ ! -e '$TQ_TMP/go' ]; do sleep 0.02; done; exit 4")
wait_state "$id" running
wpid=$(worker_pids)
# another connection holds the write lock, so the store refuses the end
# whatever room its WAL file has left
hold_lock
dd if=/dev/zero of="$TASKQ_HOME/filler" bs=4k 2>/dev/null || true
touch "$TQ_TMP/go"

check "the end is kept in a record on the full disk"
wait_for "[ -e '$TASKQ_HOME/ends/$id.1' ]" 30 ||
	fail "no end record on the full disk: $(grep -i "task $id" "$TQ_TMP/serve.log" | tail -3)"
assert_contains "$(cat "$TQ_TMP/serve.log")" "the disk is full: in the room held for it"

check "the worker and the supervisor die before there is room again; the next one writes the true end"
kill -KILL "$SERVE_PID" "$wpid"
wait_for "! _tq_alive $wpid && ! _tq_alive $SERVE_PID" 10
release_lock
rm -f "$TASKQ_HOME/filler"
serve_start 1
wait_for "[ \"\$(state_of $id)\" = failed ]" 30 ||
	fail "task $id is $(state_of "$id") ($(outcome_of "$id")): $(tail -5 "$TQ_TMP/serve.log")"
assert_eq "failed|4" "$(task_field "$id" outcome exit_code)"
assert_eq 1 "$(attempt_count "$id")" "attempts"
assert_eq 1 "$(wc -l <"$TQ_TMP/runs")" "runs (--retry-lost: a lost end would run it again)"
wait_for "[ ! -e '$TASKQ_HOME/ends/$id.1' ]" 10 || fail "end record left behind"

check "with room again, a new worker holds room again and tasks run"
ok=$(submit_id -- true)
wait_state "$ok" succeeded 30
