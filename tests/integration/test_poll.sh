#!/usr/bin/env bash
# taskq poll: each reader gets the lines since its own previous poll, with
# the task's state; cursors live in the database, so they survive a
# supervisor restart and two readers never take each other's lines; one
# poll is bounded (1000 lines, 1M) and says when more is waiting; polls
# under one name at the same time never deliver a line twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# field KEY...: fields of the JSON in $TQ_OUT joined with "|" (Python's
# str(), json.dumps for lists)
field() {
	local keys
	keys=$(printf '"%s",' "$@")
	out | pyjson '"|".join(json.dumps(d[k]) if isinstance(d[k], list) else str(d[k]) for k in ['"$keys"'])'
}
# the "n" of each line of the JSON in $TQ_OUT, space-separated
line_ns() { out | pyjson '" ".join(str(l["n"]) for l in d["lines"])'; }

check "unknown task: exit 2; no reader name: exit 2"
assert_exit 2 tq poll 1
assert_contains "$(err)" "state directory $TASKQ_HOME does not exist"
queued=$(submit_id -- echo hi)
assert_exit 2 tq poll 99
assert_contains "$(err)" "task 99: no such task"
assert_exit 2 tq poll "$queued" --as ""
assert_exit 2 tq poll "$queued" --json --raw
check "a task that has not started: its state, no lines, exit 0"
assert_exit 0 tq poll "$queued" --json
assert_eq "queued|None|None|[]|False|1|0" "$(field state exit_code exit_status lines more next total)"
assert_exit 0 tq poll "$queued"
assert_eq "" "$(out)"
assert_eq "task $queued: queued; no new lines (0 in all)" "$(err)"
tq cancel "$queued" >/dev/null

serve_start 2
mkfifo "$TQ_TMP/gate"
id=$(submit_id -- bash -c "printf 'l1\nl2\nl3\n'; read x < '$TQ_TMP/gate'; echo l4; echo l5 >&2")
wait_for "[ \"\$(tq log $id --offset 0 | wc -l)\" -eq 3 ]" 20 || fail "the task did not write 3 lines"

check "reader a: lines 1-3 while the task runs, then nothing new"
assert_exit 0 tq poll "$id" --as a --json
assert_eq "$id|running|None" "$(field id state exit_status)"
assert_eq "1 2 3" "$(line_ns)"
assert_eq "False|4|3" "$(field more next total)"
assert_contains "$(out)" '"lines":[{"n":1,"stream":"stdout","text":"l1"},'
assert_exit 0 tq poll "$id" --as a --json
assert_eq "" "$(line_ns)"
assert_eq "False|4|3" "$(field more next total)"
check "reader b is not affected by a: it gets lines 1-3 too (human form)"
assert_exit 0 tq poll "$id" --as b
assert_eq "$(printf 'l1\nl2\nl3')" "$(out)"
assert_eq "task $id: running; 3 new lines (1-3 of 3)" "$(err)"

check "the task ends; the supervisor restarts; the cursors are still there"
timeout 10 sh -c "echo go > '$TQ_TMP/gate'" || fail "the task did not read its gate"
wait_state "$id" succeeded
assert_exit 0 tq shutdown
serve_start 1
# each reader's cursor is still at line 3: a gets lines 4-5, b l4 and l5
assert_exit 0 tq poll "$id" --as a --json
assert_eq "succeeded|succeeded|0|0" "$(field state outcome exit_code exit_status)"
assert_eq "4 5" "$(line_ns)"
assert_eq "False|6|5" "$(field more next total)"
assert_exit 0 tq poll "$id" --as b
assert_eq "$(printf 'l4\nl5')" "$(sort <"$TQ_OUT")"
assert_eq "task $id: succeeded, exit status 0; 2 new lines (4-5 of 5); end of output" "$(err)"
check "a third reader (the default one) gets everything once"
assert_exit 0 tq poll "$id"
assert_eq 5 "$(out | wc -l)"
assert_exit 0 tq poll "$id"
assert_eq "" "$(out)"
assert_eq "task $id: succeeded, exit status 0; no new lines (5 in all); end of output" "$(err)"

check "a failed task: its exit code and status"
bad=$(submit_id -- sh -c 'echo oops >&2; exit 7')
wait_state "$bad" failed
assert_exit 0 tq poll "$bad" --json
assert_eq "failed|failed|7|7" "$(field state outcome exit_code exit_status)"
assert_eq '[{"n": 1, "stream": "stderr", "text": "oops"}]' "$(field lines)"

check "one poll returns at most 1000 lines, and says more is waiting"
many=$(submit_id -- seq 1 2500)
wait_state "$many" succeeded
assert_exit 0 tq poll "$many" --as p --json
assert_eq "1000|1|1000|True|1001|2500" "$(out | pyjson '"|".join(str(x) for x in (len(d["lines"]), d["lines"][0]["n"], d["lines"][-1]["text"], d["more"], d["next"], d["total"]))')"
assert_exit 0 tq poll "$many" --as p
assert_eq "$(seq 1001 2000)" "$(out)"
assert_eq "task $many: succeeded, exit status 0; 1000 new lines (1001-2000 of 2500); more waiting" "$(err)"
assert_exit 0 tq poll "$many" --as p --json
assert_eq "500|2001|False|2501" "$(out | pyjson '"|".join(str(x) for x in (len(d["lines"]), d["lines"][0]["n"], d["more"], d["next"]))')"

check "... and at most 1M of text"
wide=$(submit_id -- bash -c 'x=$(head -c 9999 /dev/zero | tr "\0" w); for i in $(seq 1 300); do echo "$x"; done')
wait_state "$wide" succeeded
assert_exit 0 tq poll "$wide" --json
got=$(out | pyjson 'len(d["lines"])')
[ $((got * 9999)) -le 1048576 ] && [ $(((got + 1) * 9999)) -gt 1048576 ] ||
	fail "a poll of 9999-byte lines returned $got of them"
assert_eq "True|$((got + 1))" "$(field more next)"

check "polls under one name at once: every line delivered exactly once"
racers=()
for i in 1 2 3 4 5 6 7 8; do
	"$TASKQ_BIN" poll "$many" --as racer --json >"$TQ_TMP/race.$i" &
	racers+=($!)
	tq_track $!
done
for pid in "${racers[@]}"; do
	wait "$pid" || fail "a racing poll failed"
done
cat "$TQ_TMP"/race.* | "$TQ_PYTHON" -c '
import json, sys
ns = [l["n"] for raw in sys.stdin for l in json.loads(raw)["lines"]]
assert sorted(ns) == list(range(1, 2501)), (len(ns), len(set(ns)))
' || fail "racing polls lost or repeated lines"

check "removing the task removes its cursors"
assert_exit 0 tq remove "$many"
assert_eq 0 "$(task_exists "$many")"
assert_exit 2 tq poll "$many" --as p
assert_eq 0 "$(tq_sql "select count(*) from cursors where task_id = $many")" # SQL: the database itself (no row of a removed task is left; no command reads one)
