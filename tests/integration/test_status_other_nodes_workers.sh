#!/usr/bin/env bash
# status on one node about another node's workers (issue 20): their pids name
# nothing on this node, so whether they live is told by their lease and
# heartbeat, not by this node's processes; their lines name their node.
# Two nodes on one SQLite state directory (TASKQ_NODE=h2, then h1), as
# test_recovery_acts_on_own_node_only has them. (Before: h1 judged h2's
# worker by a local pid, and called a worker holding a live lease dead.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "h2's worker runs a task; h2's processes gone (another machine, to h1): h1 calls it running on h2"
export TASKQ_NODE=h2
serve_start 1 --lease 60s
t1=$(submit_id -- sleep 1000)
wait_for "[ -n \"\$(task_pid $t1)\" ]" 10
p1=$(task_pid "$t1")
wait_for "[ -n \"\$(running_worker_pid $t1)\" ]" 10
w1=$(running_worker_pid "$t1")
# what h1 sees of a worker on another machine: a pid it cannot look at
kill -9 "$SERVE_PID" "$w1"
wait_for "! _tq_alive $SERVE_PID && ! _tq_alive $w1" 5 || fail "h2 did not die"
export TASKQ_NODE=h1
assert_exit 0 tq status --json
assert_eq "h2|True|$t1" "$(out | pyjson '"%s|%s|%s" % (d["worker_list"][0]["node"], d["worker_list"][0]["alive"], d["worker_list"][0]["task"])')" \
	"alive while it holds the lease"
assert_exit 0 tq status
assert_contains "$(out)" "worker 1: pid $w1 on h2, running task $t1" "the line names its node"
assert_not_contains "$(out)" "dead" "not called dead"

check "on h2 itself the same worker is dead, as before"
assert_exit 0 env TASKQ_NODE=h2 "$TASKQ_BIN" status
assert_contains "$(out)" "worker 1: pid $w1, dead (was running task $t1" "h2 judges its own pid"
kill -9 -- "-$p1" 2>/dev/null || kill -9 "$p1"
wait_for "! _tq_alive $p1" 5
