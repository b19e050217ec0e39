#!/usr/bin/env bash
# A log deleted while its task runs is started again (numbered from 1, its
# first line saying what was lost); two `log --follow` readers then print
# the new file from its first line, each the same: every line the task
# wrote except none, since they had read them all, with the note in its
# place; and a `poll` reader gets the new file from its first line too, even
# when it has grown past the reader's old count. Before, each went on at its
# old line number in the new file: it skipped the note and as many new lines
# as it had shown before.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

D="$TQ_TMP/steps"
mkdir -p "$D"
serve_start 1
# each batch waits for its step file: the test decides when lines come
id=$(submit_id -- sh -c '
	echo a1; echo a2
	while [ ! -e "$0/1" ]; do sleep 0.02; done
	for i in 1 2 3 4 5; do echo b$i; done
	while [ ! -e "$0/2" ]; do sleep 0.02; done
	for i in 1 2 3; do echo c$i; done
	while [ ! -e "$0/3" ]; do sleep 0.02; done
	echo d1' "$D")
wait_state "$id" running

for k in 1 2; do
	tq_bg "$TASKQ_BIN" log "$id" --follow >"$TQ_TMP/f$k" 2>&1
	eval "F$k=\$TQ_LAST_PID"
done
has() { grep -qx "$2" "$TQ_TMP/f$1"; }
wait_for "has 1 a2 && has 2 a2" 20 || fail "the followers did not print a2: $(cat "$TQ_TMP/f1")"
note="taskq: logs/$id.log was deleted while the task ran; the lines before this one are lost"
polled() { tq poll "$id" --as p 2>/dev/null; }
assert_eq "$(printf '%s\n' a1 a2)" "$(polled)" "the first poll"

check "the log deleted, then 5 lines: both followers print the note and all 5"
rm "$TASKQ_HOME/logs/$id.log"
touch "$D/1"
wait_for "has 1 b5 && has 2 b5" 20 || fail "no b5: [$(cat "$TQ_TMP/f1")] [$(cat "$TQ_TMP/f2")]"
check "a poll after the new file grew past the reader's count: all of it"
assert_eq "$(printf '%s\n' "$note" b1 b2 b3 b4 b5)" "$(polled)" "the poll after a restart"
assert_eq "" "$(polled)" "a poll with nothing new"

check "deleted again with its index (a log this small has none yet): the same"
rm "$TASKQ_HOME/logs/$id.log"
rm -f "$TASKQ_HOME/logs/$id.idx"
touch "$D/2"
wait_for "has 1 c3 && has 2 c3" 20 || fail "no c3: [$(cat "$TQ_TMP/f1")]"
assert_eq "$(printf '%s\n' "$note" c1 c2 c3)" "$(polled)" "the poll after the second restart"
touch "$D/3"
wait_state "$id" succeeded
assert_eq d1 "$(polled)" "the last poll"

check "each follower printed every line, in order, the notes in place"
want=$(printf '%s\n' a1 a2 "$note" b1 b2 b3 b4 b5 "$note" c1 c2 c3 d1)
for k in 1 2; do
	eval "wait_for '! _tq_alive \$F$k' 20" || fail "follower $k did not end"
	assert_eq "$want" "$(cat "$TQ_TMP/f$k")" "follower $k's output"
done

check "the stored log is the last file: the note, then what came after it"
assert_exit 0 tq log "$id" --offset 0
assert_eq "$(printf '%s\n' "$note" c1 c2 c3 d1)" "$(out)"
