#!/usr/bin/env bash
# test_pg_round_trips.sh - what the PostgreSQL store costs in round trips
# (issue 20), counted as the client's sendto(2) calls on its connection
# (libpq sends each statement, with its parameters, in one go: a send is a
# round trip, or part of one when a statement is larger than libpq's
# buffer). Counts, not times: they do not depend on the machine.
#
# submit --file of 1,000 lines: the store took them one statement at a
# time, four a line with their tokens (4,116 sends here), and now a chunk
# of lines in a few statements (queue/pg/bulk.c: 44 sends here). The bound,
# fewer sends than lines, holds however small the import's chunks get on a
# slow machine (16 lines at least, ~9 statements each).
#
# submit of one task --after those 1,000: a statement to check each and
# one to add each (2,017 sends; a task after 10,000 took 18 s to submit),
# now one for them all and one more (19 sends here, fewer than 100).
#
# Then a drain of 300 of them: what each claim reads of the queue, as the
# index entries PostgreSQL counts (pg_stat_user_indexes). A claim asks
# whether more is runnable; as an EXISTS the planner made it a semi-join
# that hashed every queued task first, at each claim (262,054 entries read
# by this drain here); a probe of each group's head reads a few a claim
# (1,977).
. "$(dirname "$0")/lib.sh"

if [ -z "${TASKQ_DB:-}" ]; then
	echo "SKIP $TQ_TEST: PostgreSQL's round trips (the PostgreSQL pass: ${TQ_TEST}_pg)"
	exit 77
fi
if ! command -v strace >/dev/null; then
	echo "SKIP: no strace (apt-get install strace) to count system calls"
	exit 77
fi
if ! strace -f -c -o /dev/null true 2>/dev/null; then
	echo "SKIP: strace cannot trace here (ptrace refused)"
	exit 77
fi
export TASKQ_AUTOSTART=0

# sends FILE: the sendto calls strace -c counted in FILE
sends() { awk '$NF == "sendto" { print $4 }' "$1"; }

check "submit --file of 1,000 lines: fewer sends than lines"
assert_exit 0 tq db migrate
"$TQ_PYTHON" -c '
import json
for i in range(1000):
    print(json.dumps({"cmd": ["echo", str(i)], "labels": {"n": str(i)}}))
' >"$TQ_TMP/lines.jsonl"
# (LeakSanitizer cannot run under ptrace: off in an ASan build)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -c -e trace=sendto -o "$TQ_TMP/import.strace" \
	"$TASKQ_BIN" submit --file "$TQ_TMP/lines.jsonl" >"$TQ_OUT" 2>"$TQ_ERR" ||
	fail "submit --file under strace: $(cat "$TQ_ERR")"
assert_eq 1000 "$(out | wc -l)" "ids printed"
assert_eq 1000 "$(task_count)" "tasks stored"
n=$(sends "$TQ_TMP/import.strace")
echo "submit --file of 1,000 lines: $n sends"
[ "${n:-0}" -gt 0 ] && [ "$n" -lt 1000 ] || fail "$n sends for 1,000 lines (a statement a line?)"
assert_eq "n=999" "$(tq show "$(out | tail -n 1)" --json | pyjson '"n=" + d["labels"]["n"]')" \
	"the last line's label on the last id"
cp "$TQ_OUT" "$TQ_TMP/ids"

check "submit of a task --after 1,000 others: a few sends, not one a dependency"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -c -e trace=sendto -o "$TQ_TMP/after.strace" \
	"$TASKQ_BIN" submit --after "$(paste -sd, "$TQ_TMP/ids")" --name after-all -- true \
	>"$TQ_OUT" 2>"$TQ_ERR" || fail "submit --after under strace: $(cat "$TQ_ERR")"
after=$(out)
n=$(sends "$TQ_TMP/after.strace")
echo "submit --after 1,000 tasks: $n sends"
[ "${n:-0}" -gt 0 ] && [ "$n" -lt 100 ] || fail "$n sends for 1,000 dependencies (a statement each?)"
assert_eq "blocked|1000" "$(task_field "$after" state deps_left)" "its state and count"

check "a drain of 300 of them: each claim reads a group's head, not every queued task"
# (the other 700 canceled: a drain of 1,001 took 25 s; and so is the task
# after all of them)
assert_exit 0 tq cancel $(sed -n '301,1000p' "$TQ_TMP/ids")
ready_reads() {
	psql -qAtX "$TASKQ_DB" -c "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE schemaname = current_schema() AND indexrelname = 'tasks_ready'" # SQL: the database itself (its statistics)
}
before=$(ready_reads)
assert_exit 0 tq drain --workers 2
assert_eq 300 "$(state_count succeeded)" "tasks drained"
# the workers' counts reach the statistics when they exit, or within 1 s
wait_for '[ "$(ready_reads)" != "$before" ]' 10 || fail "no reads of tasks_ready counted"
reads=$(($(ready_reads) - before))
echo "drain of 300 tasks: $reads entries of tasks_ready read"
[ "$reads" -lt 4500 ] || fail "$reads index entries read for 300 claims (every queued task at each?)"
