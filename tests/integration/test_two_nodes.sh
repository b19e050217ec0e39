#!/usr/bin/env bash
# test_two_nodes.sh - two nodes on one PostgreSQL store (issue 20): two state
# directories with TASKQ_NODE=h1 and h2 on one machine, each with its own
# supervisor and workers. 600 tasks submitted on both nodes at once (single
# submits through each node's supervisor, and submit --file) each run
# exactly once, some on each node, each attempt naming its node, every
# printed id holding the task its submit named; a task's log reads the same
# from either node; status on either node lists both nodes' workers. A
# store of its own per state directory (SQLite) shares nothing: the test
# needs the PostgreSQL pass (two_nodes_pg) and skips otherwise. About 12 s
# at load 9 on the 2-core machine (600 tasks stored in 4 s, run in 6).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

if [ -z "${TASKQ_DB:-}" ]; then
	echo "SKIP $TQ_TEST: two nodes share a store only in PostgreSQL (the two_nodes_pg pass)"
	exit 77
fi

n1="$TQ_TMP/n1" n2="$TQ_TMP/n2"
on() { local node=$1; shift; TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" "$TASKQ_BIN" "$@"; }

check "two supervisors, h1 and h2, on one database"
TASKQ_NODE=h1 TASKQ_HOME=$n1 serve_start 2
TASKQ_NODE=h2 TASKQ_HOME=$n2 serve_start 4
assert_exit 0 test -S "$n1/submit.sock" -o -d "$n1"
assert_exit 0 env TASKQ_HOME="$n1" "$TASKQ_BIN" status --json
assert_eq "h1 h1 h2 h2 h2 h2" "$(out | pyjson '" ".join(sorted(w["node"] for w in d["worker_list"]))')" \
	"h1's status lists both nodes' workers"

check "600 tasks submitted on both nodes at once each run exactly once, some on each node"
# Each node has two submitters at the same time, while both nodes' workers
# run: 60 single submits (through the node's own supervisor socket) and 240
# tasks in 4 files of 60 (submit --file: stored by the submitting process
# itself). Task k appends k to one file both nodes' tasks share, so a task
# run twice or never shows there, whatever the store says.
N_SINGLE=60 N_FILES=4 N_FILE=60
per_node=$((N_SINGLE + N_FILES * N_FILE))
TOTAL=$((2 * per_node))
TASK_SH='echo "$1" >>"$2"; echo "$3-$1"'
TASK_JSON=$("$TQ_PYTHON" -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$TASK_SH")
# k = the task's number (1..TOTAL): node h1 takes 1..per_node, h2 the rest
singles() {
	local node=$1 base=$2 k id
	for ((k = base + 1; k <= base + N_SINGLE; k++)); do
		id=$(on "$node" submit --name "t$k" -- sh -c "$TASK_SH" t "$k" "$TQ_TMP/ran" "$node") ||
			{ echo "$node: submit t$k failed" >>"$TQ_TMP/submit.err"; return; }
		echo "$id t$k" >>"$TQ_TMP/ids.$node.single"
	done
}
files() {
	local node=$1 base=$2 f k j
	for ((f = 0; f < N_FILES; f++)); do
		: >"$TQ_TMP/file.$node.$f"
		for ((j = 1; j <= N_FILE; j++)); do
			k=$((base + N_SINGLE + f * N_FILE + j))
			printf '{"name":"t%d","cmd":["sh","-c",%s,"t","%d","%s","%s"]}\n' \
				"$k" "$TASK_JSON" "$k" "$TQ_TMP/ran" "$node" >>"$TQ_TMP/file.$node.$f"
		done
		on "$node" submit --file "$TQ_TMP/file.$node.$f" >>"$TQ_TMP/ids.$node.file.$f" ||
			{ echo "$node: submit --file $f failed" >>"$TQ_TMP/submit.err"; return; }
	done
}
t0=$(_tq_now_ms)
subs=()
singles h1 0 2>>"$TQ_TMP/submit.err" &
subs+=($!)
files h1 0 2>>"$TQ_TMP/submit.err" &
subs+=($!)
singles h2 "$per_node" 2>>"$TQ_TMP/submit.err" &
subs+=($!)
files h2 "$per_node" 2>>"$TQ_TMP/submit.err" &
subs+=($!)
for p in "${subs[@]}"; do
	wait "$p"
done
echo "$TOTAL tasks submitted in $(($(_tq_now_ms) - t0)) ms"
[ ! -s "$TQ_TMP/submit.err" ] || fail "a submit failed: $(head -5 "$TQ_TMP/submit.err")"
wait_for "[ \"\$(TASKQ_HOME=$n1 state_count succeeded)\" -eq $TOTAL ]" 240 ||
	fail "only $(TASKQ_HOME=$n1 state_count succeeded) of $TOTAL succeeded: $(TASKQ_HOME=$n1 tq_json status --json -- tasks)"
echo "all $TOTAL ran $(($(_tq_now_ms) - t0)) ms after the first submit"
assert_eq "$TOTAL" "$(TASKQ_HOME=$n2 task_count)" "tasks stored"
assert_eq "$TOTAL" "$(wc -l <"$TQ_TMP/ran")" "runs"
assert_eq "$TOTAL" "$(sort -u "$TQ_TMP/ran" | wc -l)" "distinct runs"
assert_eq "$(seq 1 "$TOTAL")" "$(sort -n "$TQ_TMP/ran")" "each task's number once"
# every printed id holds the task its submit named, read from the other node
TASKQ_HOME=$n2 "$TASKQ_BIN" list --json --limit 0 >"$TQ_TMP/list.json"
"$TQ_PYTHON" - "$TQ_TMP" "$N_SINGLE" "$N_FILES" "$N_FILE" <<'PY' || fail "printed ids and stored tasks differ"
import json, sys
tmp, n_single, n_files, n_file = sys.argv[1], *map(int, sys.argv[2:])
name_of = {t["id"]: t["name"] for t in json.load(open(tmp + "/list.json"))}
per_node = n_single + n_files * n_file
bad, seen = [], 0
for node, base in (("h1", 0), ("h2", per_node)):
    for line in open("%s/ids.%s.single" % (tmp, node)):
        i, name = line.split()
        seen += 1
        if name_of.get(int(i)) != name:
            bad.append((node, i, name, name_of.get(int(i))))
    for f in range(n_files):
        ids = [int(l) for l in open("%s/ids.%s.file.%d" % (tmp, node, f))]
        for j, i in enumerate(ids):
            seen += 1
            want = "t%d" % (base + n_single + f * n_file + j + 1)
            if name_of.get(i) != want:
                bad.append((node, i, want, name_of.get(i)))
if bad or seen != 2 * per_node or len(name_of) != 2 * per_node:
    print("ids printed %d, stored %d, wrong: %s" % (seen, len(name_of), bad[:5]), file=sys.stderr)
    sys.exit(1)
PY
TASKQ_HOME=$n2 task_ids | xargs -r env TASKQ_HOME="$n2" TASKQ_NODE=h2 "$TASKQ_BIN" show --json >"$TQ_TMP/shown"
assert_eq "$TOTAL" "$(wc -l <"$TQ_TMP/shown")" "tasks shown"
assert_eq "$TOTAL" "$("$TQ_PYTHON" -c 'import json, sys; print(sum(len(json.loads(l)["attempts"]) for l in sys.stdin))' <"$TQ_TMP/shown")" "one attempt a task"
ran_on=$("$TQ_PYTHON" -c '
import collections, json, sys
c = collections.Counter(a["node"] for l in sys.stdin for a in json.loads(l)["attempts"])
print(" ".join("%s:%d" % kv for kv in sorted(c.items())))' <"$TQ_TMP/shown")
echo "attempts by node: $ran_on"
assert_eq "h1 h2" "$(echo "$ran_on" | tr ' ' '\n' | cut -d: -f1 | tr '\n' ' ' | sed 's/ $//')" \
	"both nodes ran tasks, each attempt names its node"

check "a task's log reads the same from either node"
id=$(on h1 submit --shell 'printf "one\ntwo\n"; printf "err\n" >&2; printf "no newline"')
TASKQ_HOME=$n1 wait_state "$id" succeeded
assert_exit 0 on h1 log "$id"
from1=$(out)
assert_exit 0 on h2 log "$id"
assert_eq "$from1" "$(out)" "log from h2"
assert_contains "$from1" "no newline" "the last piece kept"
assert_exit 0 on h2 log "$id" --stream stderr
assert_eq "err" "$(out)" "stderr from h2"
