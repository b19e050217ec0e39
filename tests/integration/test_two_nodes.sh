#!/usr/bin/env bash
# test_two_nodes.sh - two nodes on one PostgreSQL store (issue 20): two state
# directories with TASKQ_NODE=h1 and h2 on one machine, each with its own
# supervisor and workers. Tasks submitted on both nodes each run exactly
# once, some on each node, each attempt naming its node; a task's log reads
# the same from either node; status on either node lists both nodes'
# workers. A store of its own per state directory (SQLite) shares nothing:
# the test needs the PostgreSQL pass (two_nodes_pg) and skips otherwise.
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

check "60 tasks submitted on both nodes each run once, some on each node"
for i in $(seq 1 30); do
	on h1 submit --shell "echo $i >> $TQ_TMP/ran; echo h1-$i" >/dev/null || fail "submit on h1"
	on h2 submit --shell "echo $((i + 30)) >> $TQ_TMP/ran; echo h2-$i" >/dev/null ||
		fail "submit on h2"
done
wait_for "[ \"\$(TASKQ_HOME=$n1 state_count succeeded)\" -eq 60 ]" 120 ||
	fail "only $(TASKQ_HOME=$n1 state_count succeeded) of 60 succeeded"
assert_eq 60 "$(wc -l <"$TQ_TMP/ran")" "runs"
assert_eq 60 "$(sort -u "$TQ_TMP/ran" | wc -l)" "distinct runs"
for id in $(TASKQ_HOME=$n2 task_ids); do
	on h2 show "$id" --json
done >"$TQ_TMP/shown"
assert_eq 60 "$("$TQ_PYTHON" -c 'import json, sys; print(sum(len(json.loads(l)["attempts"]) for l in sys.stdin))' <"$TQ_TMP/shown")" "one attempt a task"
nodes=$("$TQ_PYTHON" -c 'import json, sys; print(" ".join(sorted({a["node"] for l in sys.stdin for a in json.loads(l)["attempts"]})))' <"$TQ_TMP/shown")
assert_eq "h1 h2" "$nodes" "both nodes ran tasks, each attempt names its node"

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
