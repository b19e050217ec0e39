#!/usr/bin/env bash
# test_status_nodes.sh - `taskq status` lists every node's supervisor and
# workers from the store, from either node (issue 20): two state
# directories with TASKQ_NODE=h1 and h2 on one PostgreSQL store. Each
# node's status says its own supervisor as before (its pid, its --workers,
# its start: from its own row, not from the store's one set of meta values,
# which the last supervisor to start wrote for every node), then each node
# with its supervisor (pid, uptime, workers, last heartbeat) and its
# workers; --json's "supervisors" has a row a node, alive judged by the
# state directory's lock on this node and by the row on another. A node
# whose supervisor stopped says so on both. Before, h1's status said h2's
# worker count and start as its own, and listed no supervisor of h2. The
# test needs the PostgreSQL pass (status_nodes_pg; lib_nodes.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_nodes.sh"

# sups NODE: NODE's view of the supervisors, by node name:
# "node:pid:workers:alive:this_node ..."
sups() {
	on "$1" status --json | pyjson '" ".join("%s:%s:%s:%s:%s" % (s["node"], s["pid"], s["workers"], s["alive"], s["this_node"]) for s in sorted(d["supervisors"], key=lambda s: s["node"]))'
}

check "two supervisors, h1 with 2 workers, then h2 with 1"
node_serve h1 2
p1=$SERVE_PID
node_serve h2 1
p2=$SERVE_PID

check "h1's status: its own supervisor as its own, then both nodes with their workers"
assert_exit 0 on h1 status --json
assert_eq "h1|True|$p1|2" "$(out | pyjson '"%s|%s|%s|%s" % (d["node"], d["supervisor_running"], d["supervisor_pid"], d["workers"])')" \
	"h1's supervisor and its --workers"
assert_eq "h1:$p1:2:True:True h2:$p2:1:True:False" "$(sups h1)" "h1 lists both supervisors"
started1=$(out | pyjson 'd["started_at"]')
assert_eq "$started1" "$(out | pyjson '[s["started_at"] for s in d["supervisors"] if s["node"] == "h1"][0]')" \
	"h1's start, not h2's"
assert_exit 0 on h1 status
assert_contains "$(out)" "supervisor: running, pid $p1, up" "h1's first line"
assert_contains "$(out)" ", 2 workers" "h1's own worker count"
"$TQ_PYTHON" - "$p1" "$p2" "$TQ_OUT" <<'PY' || fail "h1's status is not listed by node: $(out)"
import re, sys
p1, p2, path = sys.argv[1:]
lines = [l for l in open(path).read().splitlines() if l.startswith(("node ", "worker "))]
want = [r"node h1 \(this one\): supervisor pid %s, up \S+, 2 workers \(seen \S+ ago\)$" % p1,
        r"worker 1: pid \d+, idle \(seen \S+ ago\)$",
        r"worker 2: pid \d+, idle \(seen \S+ ago\)$",
        r"node h2: supervisor pid %s, up \S+, 1 worker \(seen \S+ ago\)$" % p2,
        r"worker 1: pid \d+ on h2, idle \(seen \S+ ago\)$"]
if len(lines) != len(want) or not all(re.match(w, l) for w, l in zip(want, lines)):
    print("\n".join(lines), file=sys.stderr)
    sys.exit(1)
PY

check "h2's status: the same, from h2"
assert_exit 0 on h2 status --json
assert_eq "h2|True|$p2|1" "$(out | pyjson '"%s|%s|%s|%s" % (d["node"], d["supervisor_running"], d["supervisor_pid"], d["workers"])')" \
	"h2's supervisor and its --workers"
assert_eq "h1:$p1:2:True:False h2:$p2:1:True:True" "$(sups h2)" "h2 lists both supervisors"
assert_exit 0 on h2 status
"$TQ_PYTHON" - "$p1" "$p2" "$TQ_OUT" <<'PY' || fail "h2's status is not listed by node: $(out)"
import re, sys
p1, p2, path = sys.argv[1:]
lines = [l for l in open(path).read().splitlines() if l.startswith(("node ", "worker "))]
want = [r"node h2 \(this one\): supervisor pid %s, up \S+, 1 worker \(seen \S+ ago\)$" % p2,
        r"worker 1: pid \d+, idle \(seen \S+ ago\)$",
        r"node h1: supervisor pid %s, up \S+, 2 workers \(seen \S+ ago\)$" % p1,
        r"worker 1: pid \d+ on h1, idle \(seen \S+ ago\)$",
        r"worker 2: pid \d+ on h1, idle \(seen \S+ ago\)$"]
if len(lines) != len(want) or not all(re.match(w, l) for w, l in zip(want, lines)):
    print("\n".join(lines), file=sys.stderr)
    sys.exit(1)
PY

check "h2's supervisor stopped: both nodes say so"
assert_exit 0 on h2 shutdown
wait_for "! _tq_alive $p2" 20 || fail "h2's supervisor did not stop"
assert_eq "h1:$p1:2:True:False h2:$p2:1:False:True" "$(sups h2)" "h2's own view"
assert_eq "h1:$p1:2:True:True h2:$p2:1:False:False" "$(sups h1)" "h1's view"
assert_exit 0 on h1 status --json
assert_eq "1" "$(out | pyjson 'sum(1 for s in d["supervisors"] if s["stopped_at"] is not None)')" \
	"h2's row says when it stopped"
assert_exit 0 on h1 status
assert_contains "$(out)" "node h2: no supervisor (pid $p2 stopped" "h1's line for h2"
assert_exit 0 on h2 status
assert_contains "$(out)" "supervisor: not running" "h2's first line"
assert_contains "$(out)" "node h2 (this one): no supervisor (pid $p2 stopped" "h2's line for itself"
assert_contains "$(out)" "node h1: supervisor pid $p1, up" "h2 still lists h1's"
