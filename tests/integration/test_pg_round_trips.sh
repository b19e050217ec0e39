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
