#!/usr/bin/env bash
# submit --file --resume RUN stores the rest of the file that run stopped
# in, and only that: resumed with another file, or a file whose lines moved
# above where it stopped, it refuses (exit 2, nothing stored) instead of
# taking the new file's lines for the ones stored and never storing them; a
# run id that is not known here (mistyped, or older than a day) is refused
# instead of storing the whole file again; two resumes at once store each
# line once. (Before: lines were known by their number only, so a resume
# with another file printed the first file's ids for its first lines and
# silently dropped them, and an unknown run id stored everything again.)
. "$(dirname "$0")/lib.sh"

gen() { # gen FILE N BATCH CMD [BAD_LINE]: N lines, line BAD_LINE after a missing id
	"$TQ_PYTHON" - "$@" <<'PY'
import json, sys
path, n, batch, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
bad = int(sys.argv[5]) if len(sys.argv) > 5 else 0
with open(path, "w") as f:
    for i in range(1, n + 1):
        o = {"cmd": [cmd, str(i)], "batch": batch}
        if i == bad:
            o["after"] = 999999999
        f.write(json.dumps(o) + "\n")
PY
}
count() { task_count; }
# of_batch B: how many tasks batch B has
of_batch() { task_count --batch "$1"; }

# stopped FILE: import FILE, which stops at its bad line; RUN and STORED
stopped() {
	assert_exit 2 tq submit --file "$1"
	RUN=$(err | sed -n 's/.*--resume \([0-9a-f]*\).*/\1/p')
	STORED=$(wc -l <"$TQ_OUT")
	[ ${#RUN} -eq 16 ] && [ "$STORED" -gt 0 ] || fail "no run id or nothing stored: $(err)"
}

check "an import stops at a bad line, part of it stored"
gen "$TQ_TMP/a.jsonl" 3000 a true 2000
stopped "$TQ_TMP/a.jsonl"
run_a=$RUN
before=$(count)
assert_eq "$STORED" "$before" "tasks stored"

check "--resume with another file: refused, exit 2, nothing stored"
gen "$TQ_TMP/b.jsonl" 3000 b echo
assert_exit 2 tq submit --file "$TQ_TMP/b.jsonl" --resume "$run_a"
assert_one_line_error
assert_contains "$(err)" "b.jsonl:1: not the line run $run_a stored there as task 1"
assert_eq "" "$(out)" "ids printed"
assert_eq "$before" "$(count)" "tasks after the refused resume"
assert_eq 0 "$(of_batch b)" "tasks of the other file"

check "--resume after a line above the stop was removed: refused at the first moved line"
sed '10d; 2000s/, "after": 999999999//' "$TQ_TMP/a.jsonl" >"$TQ_TMP/a-moved.jsonl"
assert_exit 2 tq submit --file "$TQ_TMP/a-moved.jsonl" --resume "$run_a"
assert_contains "$(err)" "a-moved.jsonl:10: not the line run $run_a stored there"
assert_eq "$before" "$(count)" "tasks after the refused resume"

check "--resume with a run id not known here: refused, exit 2, nothing stored"
assert_exit 2 tq submit --file "$TQ_TMP/a.jsonl" --resume 0123456789abcdef
assert_one_line_error
assert_contains "$(err)" "no import run 0123456789abcdef is known"
assert_eq "$before" "$(count)" "tasks after the unknown run"

check "the same file with its bad line fixed in place: the rest stored once"
sed -i '2000s/, "after": 999999999//' "$TQ_TMP/a.jsonl"
assert_exit 0 tq submit --file "$TQ_TMP/a.jsonl" --resume "$run_a"
assert_eq 3000 "$(wc -l <"$TQ_OUT")" "ids printed"
assert_eq 3000 "$(of_batch a)" "tasks of a"
assert_eq 3000 "$(tq list --json --limit 0 --batch a |
	"$TQ_PYTHON" -c 'import json, sys; print(len({json.dumps(t["argv"]) for t in json.load(sys.stdin)}))')" \
	"distinct lines of a"

check "two resumes of one run at once: each line stored once, both print every id"
gen "$TQ_TMP/c.jsonl" 6000 c true 5000
stopped "$TQ_TMP/c.jsonl"
sed -i '5000s/, "after": 999999999//' "$TQ_TMP/c.jsonl"
"$TASKQ_BIN" submit --file "$TQ_TMP/c.jsonl" --resume "$RUN" >"$TQ_TMP/c1.ids" 2>"$TQ_TMP/c1.err" &
p1=$!
"$TASKQ_BIN" submit --file "$TQ_TMP/c.jsonl" --resume "$RUN" >"$TQ_TMP/c2.ids" 2>"$TQ_TMP/c2.err" &
p2=$!
tq_track "$p1"
tq_track "$p2"
wait "$p1" && r1=0 || r1=$?
wait "$p2" && r2=0 || r2=$?
assert_eq "0 0" "$r1 $r2" "exit statuses ($(cat "$TQ_TMP/c1.err" "$TQ_TMP/c2.err"))"
assert_eq 6000 "$(of_batch c)" "tasks of c"
assert_eq 6000 "$(wc -l <"$TQ_TMP/c1.ids")" "ids printed by the first"
cmp -s "$TQ_TMP/c1.ids" "$TQ_TMP/c2.ids" || fail "the two resumes printed different ids"
