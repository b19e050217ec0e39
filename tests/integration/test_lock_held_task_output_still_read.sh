#!/usr/bin/env bash
# While another connection holds the database's write lock, a worker goes on
# reading its task's output, delivering its clocks and noticing its end: a
# lease renewal that the lock refuses waits 200 ms and is tried again soon.
# (Before: each renewal waited the 10 s busy timeout of other writes, and
# with the lock held the next renewal was due as soon as one gave up, so the
# worker read one pipe's worth between 10 s waits: a task writing 2 MB into
# its pipe over 2 s was held for minutes, and one that ended took 10-20 s to have its
# end kept.) The outcome itself is the end-record path of test_end_held_lock.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 1 # --lease 1s: a renewal due every 333 ms
id=$(submit_id -- sh -c "while [ ! -e '$TQ_TMP/go' ]; do sleep 0.02; done
	for i in \$(seq 20); do head -c 100000 /dev/zero | tr '\\0' y | fold -w 99; echo; sleep 0.1; done
	touch '$TQ_TMP/wrote'
	while [ ! -e '$TQ_TMP/done' ]; do sleep 0.02; done")
wait_state "$id" running

check "the lock held: 2 MB of output, written over 2 s or more, are read while it lasts"
hold_lock
touch "$TQ_TMP/go"
wait_for "[ -e '$TQ_TMP/wrote' ]" 40 ||
	fail "the task's writes were held up with the lock: $(tail -3 "$TQ_TMP/serve.log")"

check "its worker says once that it cannot renew, not every 250 ms"
wait_for "grep -q 'trying again every 250 ms' '$TQ_TMP/serve.log'" 20 ||
	fail "no line about the renewal: $(tail -3 "$TQ_TMP/serve.log")"
assert_eq 1 "$(grep -c "task $id: .*trying again every 250 ms" "$TQ_TMP/serve.log")" \
	"lines about the locked renewal"

check "the lock gone: the lease is renewed, the task ends succeeded with all its output"
release_lock
wait_for "grep -q 'task $id: lease renewed after' '$TQ_TMP/serve.log'" 20 ||
	fail "the renewal never got through: $(tail -3 "$TQ_TMP/serve.log")"
touch "$TQ_TMP/done"
wait_state "$id" succeeded 30
assert_exit 0 tq log "$id" --offset 0
assert_eq 2020220 "$(wc -c <"$TQ_OUT")" "bytes of output kept"
