#!/usr/bin/env bash
# taskq group set NAME --parallel N: with 3 workers, a group limited to 1
# never runs two of its tasks at once, while an unlimited group's tasks run
# side by side (and beside it). Each task records its start and end times
# (nanoseconds) in a file; overlaps are computed from those. Also: group
# list, status showing the limit, and the usage errors.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "usage errors: no name, no --parallel, a bad number"
assert_exit 2 tq group
assert_one_line_error
assert_exit 2 tq group set
assert_one_line_error
assert_exit 2 tq group set solo
assert_contains "$(err)" "--parallel"
assert_exit 2 tq group set solo --parallel -1
assert_one_line_error
assert_exit 2 tq group set solo --parallel many
assert_contains "$(err)" "--parallel"
assert_exit 2 tq group set solo --parallel 100001
assert_exit 2 tq group frob
assert_one_line_error

check "group set before any task: the group is created with the limit"
assert_exit 0 tq group set solo --parallel 1
assert_eq "group solo: parallel 1" "$(out)"
assert_exit 0 tq group list --json
assert_eq '[["solo", 1, false, 0, 0]]' "$(out | pyjson '[[g["name"], g["parallel"], g["paused"], g["queued"], g["running"]] for g in d]')"

# a task: "GROUP START_NS END_NS" appended to times when it ends
task() {
	submit_id --group "$1" --shell "s=\$(date +%s%N); sleep $2; echo \"$1 \$s \$(date +%s%N)\" >> '$TQ_TMP/times'" >/dev/null
}
for i in 1 2 3 4; do task solo 0.3; done
for i in 1 2 3 4; do task multi 0.6; done
tq group set multi --parallel 0 >/dev/null

check "group list and status show the limit and the queued tasks"
assert_exit 0 tq group list
assert_contains "$(out)" "solo   1"
assert_contains "$(out)" "multi  unlimited"
assert_exit 0 tq status
assert_contains "$(out)" "group solo: 0 running, 4 queued, parallel 1"
assert_exit 0 tq status --json
assert_eq "1 4" "$(out | pyjson '" ".join(str(g[k]) for g in d["groups"] if g["name"] == "solo" for k in ("parallel", "queued"))')"

serve_start 3
wait_for "[ \"\$(task_count --state succeeded)\" -eq 8 ]" 60 ||
	fail "not all ran: $(tq_json list --json -- --each id state group | paste -sd" ")"

# Largest number of tasks of a group (or of all) running at the same time.
overlap() {
	"$TQ_PYTHON" - "$TQ_TMP/times" "$1" <<'PY'
import sys
ev = []
for line in open(sys.argv[1]):
    g, s, e = line.split()
    if sys.argv[2] in (g, "all"):
        ev.append((int(s), 1))
        ev.append((int(e), -1))
ev.sort(key=lambda x: (x[0], x[1]))  # an end before a start at the same ns
cur = best = 0
for _, d in ev:
    cur += d
    best = max(best, cur)
print(best)
PY
}

check "the limited group never ran two at once"
assert_eq 8 "$(wc -l <"$TQ_TMP/times")"
assert_eq 1 "$(overlap solo)"
check "the unlimited group ran side by side, and beside the limited one"
[ "$(overlap multi)" -ge 2 ] || fail "multi tasks never overlapped: $(cat "$TQ_TMP/times")"
# some solo task ran while a multi task ran
both=$("$TQ_PYTHON" - "$TQ_TMP/times" <<'PY'
import sys
iv = {"solo": [], "multi": []}
for line in open(sys.argv[1]):
    g, s, e = line.split()
    iv[g].append((int(s), int(e)))
print(any(s1 < e2 and s2 < e1 for s1, e1 in iv["solo"] for s2, e2 in iv["multi"]))
PY
)
assert_eq True "$both" "a solo task ran beside a multi task"

check "lifting the limit (0): unlimited again"
assert_exit 0 tq group set solo --parallel 0
assert_eq "group solo: parallel unlimited" "$(out)"
assert_eq 0 "$(group_field solo parallel)"
