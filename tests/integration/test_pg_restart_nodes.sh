#!/usr/bin/env bash
# test_pg_restart_nodes.sh - PostgreSQL restarted while submits go on from
# two nodes and tasks run (issue 20): two state directories (TASKQ_NODE h1,
# h2) on one store, a submitter on each (h1's through its supervisor's
# socket, h2's directly), each task sleeping a little so some run across
# each outage; the store restarted twice and every connection ended once
# (pg_terminate_backend) meanwhile. Every acknowledged task is stored and
# its command runs exactly once (its number once in a file all tasks append
# to), and succeeds, its log whole: no lease is judged lost while the store
# was away, no output lost. The
# cluster is the test's own (lib_pg.sh), so its restarts touch no other
# test. Leases are 1 s (lib_serve.sh), shorter than each outage.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_pg.sh"

pg_own_cluster
assert_exit 0 tq db migrate
n1="$TQ_TMP/n1" n2="$TQ_TMP/n2"
TASKQ_NODE=h1 TASKQ_HOME=$n1 serve_start 2
TASKQ_NODE=h2 TASKQ_HOME=$n2 serve_start 2

check "restarts while two nodes submit and run: every acknowledged task stored, run once, succeeded"
# submitter NODE BASE VIA: tasks BASE+1, BASE+2, ... until the stop file;
# "ID K" for each acknowledged, "K" for each refused
submitter() {
	local node=$1 k=$2 via=$3 id
	while [ ! -e "$TQ_TMP/stop" ]; do
		k=$((k + 1))
		if id=$(TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" TASKQ_SUBMIT_VIA=$via \
			"$TASKQ_BIN" submit --name "t$k" -- sh -c 'echo "$1" >>"$2"; echo "start $1"
				sleep 0.3; echo "end $1"' t "$k" \
			"$TQ_TMP/ran" 2>>"$TQ_TMP/submit.err"); then
			echo "$id $k" >>"$TQ_TMP/acked.$node"
		else
			echo "$k" >>"$TQ_TMP/refused.$node"
		fi
	done
}
acked() { cat "$TQ_TMP"/acked.* 2>/dev/null | wc -l; }
# until N more submits were acknowledged
more_acked() {
	local want=$(($(acked) + $1))
	wait_for "[ \$(acked) -ge $want ]" 60 || fail "submits stalled at $(acked): $(tail -3 "$TQ_TMP/submit.err")"
}
submitter h1 0 auto &
sub1=$!
tq_track "$sub1"
submitter h2 100000 direct &
sub2=$!
tq_track "$sub2"
more_acked 15
pg_restart fast
more_acked 15
pg_terminate_all >/dev/null
more_acked 15
pg_restart fast
more_acked 15
touch "$TQ_TMP/stop"
wait "$sub1" "$sub2"
total=$(acked)
echo "$total acknowledged"
# each submit rides the outages out (TASKQ_DB_RETRY's 30 s)
assert_eq 0 "$(cat "$TQ_TMP"/refused.* 2>/dev/null | wc -l)" "refused submits: $(sort "$TQ_TMP/submit.err" 2>/dev/null | uniq -c | sort -rn | head -3)"
# the tasks that did not succeed, their reasons and what the log says of them
not_succeeded() {
	local id
	for id in $(TASKQ_HOME=$n1 task_ids --state failed) $(TASKQ_HOME=$n1 task_ids --state running); do
		echo "task $id: $(TASKQ_HOME=$n1 task_field "$id" state reason)"
		grep "task $id[: ]" "$TQ_TMP/serve.log" | head -5
	done
}
wait_for "[ \"\$(TASKQ_HOME=$n1 state_count succeeded)\" -ge $total ]" 120 ||
	fail "$(TASKQ_HOME=$n1 state_count succeeded) of $total succeeded: $(not_succeeded)"
assert_eq "" "$(sort "$TQ_TMP/ran" | uniq -d | head -5)" "tasks whose command ran twice"
TASKQ_HOME=$n2 "$TASKQ_BIN" list --json --limit 0 >"$TQ_TMP/list.json"
cat "$TQ_TMP"/acked.* >"$TQ_TMP/acked"
"$TQ_PYTHON" - "$TQ_TMP" <<'PY' || fail "acknowledged tasks and what ran differ"
import json, sys
tmp = sys.argv[1]
tasks = {t["id"]: t for t in json.load(open(tmp + "/list.json"))}
ran = [int(l) for l in open(tmp + "/ran")]
bad = []
for line in open(tmp + "/acked"):
    i, k = map(int, line.split())
    t = tasks.get(i)
    if t is None or t["name"] != "t%d" % k or t["state"] != "succeeded":
        bad.append((i, k, t and (t["name"], t["state"])))
    elif ran.count(k) != 1:
        bad.append((i, k, "ran %d times" % ran.count(k)))
if bad:
    print("wrong: %s" % bad[:5], file=sys.stderr)
    sys.exit(1)
PY
while read -r id k; do
	assert_eq "start $k
end $k" "$(TASKQ_HOME=$n1 "$TASKQ_BIN" log "$id")" "task $id's log"
done <"$TQ_TMP/acked"
! grep -E "attempt [0-9]+: lost" "$TQ_TMP/serve.log" | head -3 | grep . ||
	fail "a task was recorded lost"
