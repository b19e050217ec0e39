#!/usr/bin/env bash
# test_two_nodes_node_killed.sh - a node SIGKILLed with tasks running, on one
# PostgreSQL store (issue 20): two state directories with TASKQ_NODE=h1 and
# h2 on one machine. h1's supervisor and workers are SIGKILLed while they
# run two tasks (one --retry-lost, one not), h2 busy with a task of its own
# and submits going on at both nodes. Then:
#   - h2 recovers h1's tasks once their lease has passed, not before: each
#     attempt is recorded lost (its reason names node h1), ended no earlier
#     than the lease it held; the --retry-lost task runs again on h2 and
#     succeeds, the other fails lost (show --json: attempts, outcome);
#   - h2 signals none of h1's processes, though they are processes of this
#     same machine (one pid space): the lost attempts' processes are still
#     alive after h2 recorded them lost;
#   - h1 started again kills the leftovers of its own dead workers: each
#     task's process, a child in its process group, and a child that left
#     it for a session of its own;
#   - and signals nothing of h2's: the retried task's new attempt (the same
#     task id, run by h2), h2's own task and h2's workers stay alive;
#   - every task submitted meanwhile runs exactly once.
# The test needs the PostgreSQL pass (two_nodes_node_killed_pg).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

if [ -z "${TASKQ_DB:-}" ]; then
	echo "SKIP $TQ_TEST: two nodes share a store only in PostgreSQL (the _pg pass)"
	exit 77
fi

n1="$TQ_TMP/n1" n2="$TQ_TMP/n2"
on() { local node=$1; shift; TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" "$TASKQ_BIN" "$@"; }
# node_serve NODE WORKERS LEASE: a foreground supervisor of NODE, tracked for
# cleanup; its pid in SERVE_PID. Waits until NODE's workers registered.
node_serve() {
	TASKQ_NODE=$1 TASKQ_HOME="$TQ_TMP/n${1#h}" tq_bg "$TASKQ_BIN" serve --foreground \
		--workers "$2" --lease "$3" 2>>"$TQ_TMP/serve.log"
	SERVE_PID=$TQ_LAST_PID
	wait_for "[ \"\$(node_live_workers $1)\" -ge $2 ]" 20 ||
		fail "$1's supervisor did not start: $(tail -5 "$TQ_TMP/serve.log")"
}
# node_workers NODE: the pids of NODE's workers in status --json (either
# node's view: one store)
node_workers() {
	local j
	j=$(on h2 status --json 2>/dev/null) || return 0
	json_get --in worker_list --each node pid <<<"$j" | sed -n "s/^$1|//p"
}
node_live_workers() {
	local n=0 pid
	for pid in $(node_workers "$1"); do
		_tq_alive "$pid" && n=$((n + 1))
	done
	echo "$n"
}
# at NODE ID PATH...: task ID's fields, read through NODE
at() { local node=$1; shift; TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" task_field "$@"; }
state_at() { TASKQ_HOME="$TQ_TMP/n${1#h}" state_of "$2"; }

# A task that records, per attempt, its pid, the pid of a child in its own
# process group and of a child in a session of its own ("PID PGCHILD
# SESSCHILD" appended to pids.NAME), then runs until the file go.NAME
# appears; gated tasks submitted with --name NAME.
TASK_SH='sleep 1000 & c1=$!; setsid sleep 1000 & c2=$!
echo "$$ $c1 $c2" >>"$1/pids.$2"
while [ ! -e "$1/go.$2" ]; do sleep 0.05; done
kill "$c1" "$c2"; echo "done $2"'
gated() { local node=$1 name=$2; shift 2
	on "$node" submit --name "$name" "$@" -- sh -c "$TASK_SH" gated "$TQ_TMP" "$name"; }
# the pids line of attempt N (1, 2...) of gated task NAME
pids_of() { sed -n "${2}p" "$TQ_TMP/pids.$1" 2>/dev/null; }
all_alive() { local p; for p in "$@"; do _tq_alive "$p" || return 1; done; }
none_alive() { local p; for p in "$@"; do ! _tq_alive "$p" || return 1; done; }

check "h1 runs two tasks, h2 one of its own, submits going on at both nodes"
node_serve h1 2 4s
H1_SERVE=$SERVE_PID
a=$(gated h1 a --retry-lost --retries 3 --backoff 100ms)
b=$(gated h1 b)
wait_for "[ -n \"\$(pids_of a 1)\" ] && [ -n \"\$(pids_of b 1)\" ]" 20 ||
	fail "h1 did not start its tasks: a $(state_at h1 "$a"), b $(state_at h1 "$b")"
assert_eq "h1 h1" "$(at h1 "$a" attempts.0.node) $(at h1 "$b" attempts.0.node)" "a and b run on h1"
node_serve h2 2 1s
H2_SERVE=$SERVE_PID
d=$(gated h2 d)
wait_for "[ -n \"\$(pids_of d 1)\" ]" 20 || fail "h2 did not start d: $(state_at h2 "$d")"
assert_eq h2 "$(at h2 "$d" attempts.0.node)" "d runs on h2"
read -r a_pid a_c1 a_c2 <<<"$(pids_of a 1)"
read -r b_pid b_c1 b_c2 <<<"$(pids_of b 1)"
read -r d_pid d_c1 d_c2 <<<"$(pids_of d 1)"
assert_eq "$a_pid $b_pid $d_pid" "$(at h2 "$a" attempts.0.pid) $(at h2 "$b" attempts.0.pid) $(at h2 "$d" attempts.0.pid)" \
	"the pids the store holds"
h1_workers=$(node_workers h1 | tr '\n' ' ')
h2_workers=$(node_workers h2 | tr '\n' ' ')
# Short tasks submitted at both nodes until the end of the recovery (h1's
# submits store the task themselves once its supervisor is dead): each
# appends its name to ran.
LOAD_SH='echo "$2" >>"$1/ran"'
load() {
	local node=$1 i=0
	while [ ! -e "$TQ_TMP/stop" ]; do
		i=$((i + 1))
		on "$node" submit --name "$node-$i" -- sh -c "$LOAD_SH" load "$TQ_TMP" "$node-$i" \
			>/dev/null 2>>"$TQ_TMP/load.err" || echo "$node-$i failed" >>"$TQ_TMP/load.err"
		echo "$i" >"$TQ_TMP/loaded.$node"
	done
}
load h1 &
l1=$!
load h2 &
l2=$!
tq_track "$l1"
tq_track "$l2"
wait_for "[ -s $TQ_TMP/loaded.h1 ] && [ -s $TQ_TMP/loaded.h2 ]" 20 || fail "no load"

check "h1's supervisor and workers SIGKILLed: its tasks' processes live on"
a_lease=$(at h2 "$a" lease_until)
b_lease=$(at h2 "$b" lease_until)
# shellcheck disable=SC2086 # pids are words
kill -KILL "$H1_SERVE" $h1_workers
wait_for "none_alive $H1_SERVE $h1_workers" 10 || fail "h1 did not die"
killed_at=$(date +%s%3N)
all_alive "$a_pid" "$a_c1" "$a_c2" "$b_pid" "$b_c1" "$b_c2" ||
	fail "h1's task processes died with their worker"

check "h2 recovers them once their lease has passed: a lost and run again on h2, b failed lost"
wait_state "$b" failed 30
assert_eq lost "$(at h2 "$b" outcome)"
assert_contains "$(at h2 "$b" reason)" "node h1" "b's reason names its node"
assert_eq 1 "$(TASKQ_HOME=$n2 attempt_count "$b")" "b's attempts (no --retry-lost)"
wait_for "[ \"\$(TASKQ_HOME=$n2 attempt_count $a)\" -ge 2 ] && [ -n \"\$(pids_of a 2)\" ]" 30 ||
	fail "a did not run again: $(state_at h2 "$a"), $(TASKQ_HOME=$n2 attempt_count "$a") attempts"
IFS='|' read -r out1 node1 end1 <<<"$(TASKQ_HOME=$n2 attempt_field "$a" 1 outcome node ended_at)"
assert_eq "lost h1" "$out1 $node1" "a's first attempt"
assert_contains "$(TASKQ_HOME=$n2 attempt_field "$a" 1 reason)" "node h1" "a's lost attempt names its node"
assert_eq "running h2" "$(state_at h2 "$a") $(TASKQ_HOME=$n2 attempt_field "$a" 2 node)" "a's second attempt"
b_end=$(TASKQ_HOME=$n2 attempt_field "$b" 1 ended_at)
echo "killed at $killed_at; leases until a $a_lease b $b_lease; recorded lost at a $end1 b $b_end"
[ "$end1" -ge "$a_lease" ] || fail "a recorded lost at $end1, before its lease ended at $a_lease"
[ "$b_end" -ge "$b_lease" ] || fail "b recorded lost at $b_end, before its lease ended at $b_lease"

check "h2 signalled none of h1's processes (one machine, one pid space)"
all_alive "$a_pid" "$a_c1" "$a_c2" "$b_pid" "$b_c1" "$b_c2" ||
	fail "h1's task processes were signalled after h2's recovery"
read -r a2_pid a2_c1 a2_c2 <<<"$(pids_of a 2)"
assert_eq "$a2_pid" "$(TASKQ_HOME=$n2 attempt_field "$a" 2 pid)" "a's second attempt's pid"

check "h1 started again kills its own dead workers' leftovers, process groups and sessions"
node_serve h1 2 4s
H1_SERVE=$SERVE_PID
wait_for "none_alive $a_pid $a_c1 $a_c2 $b_pid $b_c1 $b_c2" 20 ||
	fail "h1 left its leftovers alive: $(for p in $a_pid $a_c1 $a_c2 $b_pid $b_c1 $b_c2; do
		_tq_alive "$p" && echo "$p: $(tr '\0' ' ' <"/proc/$p/cmdline")"; done)"

check "and signalled nothing of h2's: a's new attempt, d, h2's workers"
all_alive "$a2_pid" "$a2_c1" "$a2_c2" || fail "h1 killed a's attempt 2, which h2 runs"
all_alive "$d_pid" "$d_c1" "$d_c2" || fail "h1 killed h2's task d"
# shellcheck disable=SC2086
all_alive "$H2_SERVE" $h2_workers || fail "h1 killed h2's supervisor or workers"
assert_eq "running running" "$(state_at h1 "$a") $(state_at h1 "$d")" "a and d still run"

check "the tasks end: a succeeded on its second attempt (on h2), d succeeded"
touch "$TQ_TMP/stop" "$TQ_TMP/go.a" "$TQ_TMP/go.d"
wait "$l1" "$l2"
wait_state "$a" succeeded 30
wait_state "$d" succeeded 30
assert_eq "lost|h1 succeeded|h2" "$(TASKQ_HOME=$n1 attempts_of "$a" outcome node | tr '\n' ' ' | sed 's/ $//')" \
	"a's attempts"
assert_eq "done a" "$(on h1 log "$a")" "a's log"
assert_eq 2 "$(wc -l <"$TQ_TMP/pids.a")" "a's attempts that started"

check "every task submitted meanwhile ran exactly once"
[ ! -s "$TQ_TMP/load.err" ] || fail "a submit failed: $(head -3 "$TQ_TMP/load.err")"
loaded=$(($(cat "$TQ_TMP/loaded.h1") + $(cat "$TQ_TMP/loaded.h2")))
wait_for "[ \"\$(TASKQ_HOME=$n2 state_count succeeded)\" -eq $((loaded + 2)) ]" 120 ||
	fail "$(TASKQ_HOME=$n2 state_count succeeded) of $((loaded + 2)) succeeded: $(on h2 status --json | json_get tasks)"
echo "$loaded tasks submitted during the crash and recovery"
assert_eq "$loaded" "$(wc -l <"$TQ_TMP/ran")" "runs"
assert_eq "$loaded" "$(sort -u "$TQ_TMP/ran" | wc -l)" "distinct runs"
