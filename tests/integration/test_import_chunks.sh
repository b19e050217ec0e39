#!/usr/bin/env bash
# submit --file stores in short chunks: a 100k-line import beside a running
# worker never holds the write lock long (the longest wait of another
# writer stays under 2 s, the try of a worker recording an end; the old
# single transaction held it for the whole store, 3.5 s at the least and
# 10 s and more on a loaded machine) -- also for a writer of another program
# whose busy handler looks only every 100 ms (SQLite's default: with 20 ms
# gaps alone it waited 2.7-3.0 s) -- and a task that ends meanwhile is
# recorded at its first try. An import that stops half way (a store error,
# SIGINT) says exactly which lines were stored, and --resume RUN stores the
# rest, each line once, printing the ids of the whole file in order.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

LINES=100000
WAIT_BOUND_MS=2000   # a worker's try at recording an end (runner.c)

# of_batch B: how many tasks batch B has (batch show --json)
of_batch() { tq_json batch show "$1" --json -- total; }

gen() { # gen FILE N BATCH [BAD_LINE]: N lines, line BAD_LINE after a missing id
	"$TQ_PYTHON" - "$@" <<'PY'
import json, sys
path, n, batch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bad = int(sys.argv[4]) if len(sys.argv) > 4 else 0
with open(path, "w") as f:
    for i in range(1, n + 1):
        o = {"cmd": ["true", str(i)], "batch": batch, "group": "imp-" + batch}
        if i == bad:
            o["after"] = 999999999
        f.write(json.dumps(o) + "\n")
PY
}

# probe FILE: take and drop the write lock every 50 ms, looking for it every
# 2 ms as taskq's own busy handler does; write the longest wait (ms) to
# FILE once $TQ_TMP/probe.stop exists.
probe() {
	"$TQ_PYTHON" - "$TASKQ_HOME/taskq.db" "$TQ_TMP/probe.stop" "$1" <<'PY' &
import os, sqlite3, sys, time
db, stop, out = sys.argv[1:4]
c = sqlite3.connect(db, isolation_level=None, timeout=0)  # SQL: the database itself (how long its write lock is held)
worst = 0.0
end = time.monotonic() + 300
while not os.path.exists(stop) and time.monotonic() < end:
    t = time.monotonic()
    while True:
        try:
            c.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError:
            time.sleep(0.002)
    worst = max(worst, time.monotonic() - t)
    c.execute("ROLLBACK")
    time.sleep(0.05)
open(out, "w").write("%d\n" % int(worst * 1000))
PY
	tq_track $!
}

# probe_default FILE: as probe, but another program's way: SQLite's own
# default busy handler (python's sqlite3 timeout), which sleeps up to 100 ms
# between looks, so a 20 ms gap between chunks is found only by chance.
probe_default() {
	"$TQ_PYTHON" - "$TASKQ_HOME/taskq.db" "$TQ_TMP/probe.stop" "$1" <<'PY' &
import os, sqlite3, sys, time
db, stop, out = sys.argv[1:4]
c = sqlite3.connect(db, isolation_level=None, timeout=60)  # SQL: the database itself (its lock, as another program meets it)
worst = 0.0
end = time.monotonic() + 300
while not os.path.exists(stop) and time.monotonic() < end:
    t = time.monotonic()
    c.execute("BEGIN IMMEDIATE")
    worst = max(worst, time.monotonic() - t)
    c.execute("ROLLBACK")
    time.sleep(0.05)
open(out, "w").write("%d\n" % int(worst * 1000))
PY
	tq_track $!
}

check "a long import beside a worker whose task ends meanwhile"
serve_start 1
id=$(tq submit -- sh -c "while [ ! -e '$TQ_TMP/go' ]; do sleep 0.02; done; exit 5")
wait_state "$id" running
gen "$TQ_TMP/big.jsonl" "$LINES" big
# the tasks wait in paused groups: the import alone writes
for g in imp-big imp-part imp-intr; do tq pause "$g" >/dev/null; done
probe "$TQ_TMP/worst"
probe_default "$TQ_TMP/worst_default"
tq_bg "$TASKQ_BIN" submit --file "$TQ_TMP/big.jsonl" >"$TQ_TMP/big.ids" 2>"$TQ_TMP/big.err"
IMPORT_PID=$TQ_LAST_PID
wait_for "[ -s '$TQ_TMP/big.ids' ]" 120 || fail "the import stored nothing: $(cat "$TQ_TMP/big.err")"
touch "$TQ_TMP/go"
wait_for "! _tq_alive $IMPORT_PID" 300 || fail "import did not finish"
wait "$IMPORT_PID" && irc=0 || irc=$?
touch "$TQ_TMP/probe.stop"
wait_for "[ -s '$TQ_TMP/worst' ] && [ -s '$TQ_TMP/worst_default' ]" 20
assert_eq 0 "$irc" "import exit status ($(cat "$TQ_TMP/big.err"))"

check "every line stored once, ids printed in order"
assert_eq "$LINES" "$(wc -l <"$TQ_TMP/big.ids")" "ids printed"
assert_eq "$LINES" "$(sort -u "$TQ_TMP/big.ids" | wc -l)" "distinct ids"
assert_eq "$LINES" "$(of_batch big)" "tasks stored"
sort -n -c "$TQ_TMP/big.ids" || fail "ids out of order"

check "no writer waited for the lock past ${WAIT_BOUND_MS} ms"
worst=$(cat "$TQ_TMP/worst")
echo "longest wait for the write lock during the import: $worst ms"
[ "$worst" -lt "$WAIT_BOUND_MS" ] || fail "a writer waited $worst ms for the import's lock"

check "nor another program's writer, with SQLite's default busy handler"
worst=$(cat "$TQ_TMP/worst_default")
echo "longest wait of a writer with SQLite's default busy handler: $worst ms"
[ "$worst" -lt "$WAIT_BOUND_MS" ] ||
	fail "a writer with SQLite's default busy handler waited $worst ms for the import's lock"

check "the task that ended during the import was recorded at once, exit code 5"
wait_state "$id" failed 30
assert_eq 5 "$(task_field "$id" exit_code)" "exit code"
assert_not_contains "$(cat "$TQ_TMP/serve.log")" "record:" "a failed try at recording"

check "an import that fails half way says what it stored; --resume stores the rest once"
gen "$TQ_TMP/bad.jsonl" 3000 part 2000
assert_exit 2 tq submit --file "$TQ_TMP/bad.jsonl"
assert_one_line_error
assert_contains "$(err)" "bad.jsonl:2000: "
stored=$(wc -l <"$TQ_OUT")
cp "$TQ_OUT" "$TQ_TMP/part1.ids"
[ "$stored" -gt 0 ] && [ "$stored" -lt 2000 ] || fail "stored $stored before line 2000"
assert_contains "$(err)" "the tasks of lines 1-$stored are stored ($stored tasks"
assert_eq "$stored" "$(of_batch part)" "stored tasks"
run_id=$(err | sed -n 's/.*--resume \([0-9a-f]*\).*/\1/p')
[ ${#run_id} -eq 16 ] || fail "no run id in: $(err)"
# fix line 2000 in place, then resume
sed -i '2000s/, "after": 999999999//' "$TQ_TMP/bad.jsonl"
assert_exit 0 tq submit --file "$TQ_TMP/bad.jsonl" --resume "$run_id"
assert_eq 3000 "$(wc -l <"$TQ_OUT")" "ids printed by the resumed run"
assert_eq "$(cat "$TQ_TMP/part1.ids")" "$(head -n "$stored" "$TQ_OUT")" "ids of the lines stored before"
assert_eq 3000 "$(of_batch part)" "tasks after resume"
# resumed again: nothing new
assert_exit 0 tq submit --file "$TQ_TMP/bad.jsonl" --resume "$run_id"
assert_eq 3000 "$(of_batch part)" "tasks after a second resume"

check "SIGINT stops an import between chunks, says what was stored; --resume finishes it"
gen "$TQ_TMP/int.jsonl" 60000 intr
tq_bg "$TASKQ_BIN" submit --file "$TQ_TMP/int.jsonl" >"$TQ_TMP/int.ids" 2>"$TQ_TMP/int.err"
IMPORT_PID=$TQ_LAST_PID
wait_for "[ -s '$TQ_TMP/int.ids' ]" 120 || fail "the import stored nothing: $(cat "$TQ_TMP/int.err")"
kill -INT "$IMPORT_PID"
wait "$IMPORT_PID" && irc=0 || irc=$?
if [ "$irc" -eq 0 ]; then
	echo "(the import finished before the signal; nothing to resume)"
else
	assert_eq 130 "$irc" "exit status after SIGINT ($(cat "$TQ_TMP/int.err"))"
	assert_contains "$(cat "$TQ_TMP/int.err")" "interrupted"
	n=$(wc -l <"$TQ_TMP/int.ids")
	assert_eq "$n" "$(of_batch intr)" "stored = printed"
	run_id=$(sed -n 's/.*--resume \([0-9a-f]*\).*/\1/p' "$TQ_TMP/int.err")
	assert_exit 0 tq submit --file "$TQ_TMP/int.jsonl" --resume "$run_id"
	assert_eq 60000 "$(of_batch intr)" "tasks after resume"
fi

check "--resume is checked"
assert_exit 2 tq submit --file "$TQ_TMP/int.jsonl" --resume nope
assert_one_line_error
assert_exit 2 tq submit --resume 0123456789abcdef -- true
assert_one_line_error
