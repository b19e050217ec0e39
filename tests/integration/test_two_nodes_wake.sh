#!/usr/bin/env bash
# test_two_nodes_wake.sh - another node's idle worker starts a task at once
# (issue 20: LISTEN/NOTIFY as the doorbell across nodes): two state
# directories with TASKQ_NODE=h1 and h2 on one PostgreSQL store; h1's two
# workers are busy, h2's one is idle. What makes a task runnable on h1 is started
# by h2 within WAKE_MS, far inside the 10 s idle beat at which h2's worker
# would otherwise look: a submit (several in turn, each right after h2's
# worker went idle again, so no beat can be near), a retry, a resume of a
# paused group, a group's limit raised, and a --delay that comes due (h2's
# worker sets its timer by the task when it hears of it). Before, each took
# until h2's next idle beat (~10 s). The test needs the PostgreSQL pass
# (two_nodes_wake_pg; lib_nodes.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_nodes.sh"

# far inside the idle beat (10 s), with room for a loaded machine
WAKE_MS=2500
n1="$TQ_TMP/n1"
# node_busy NODE: how many of NODE's workers run a task
node_busy() { echo $(($(node_workers "$1") - $(node_workers "$1" idle))); }
field() { TASKQ_HOME=$n1 TASKQ_NODE=h1 task_field "$@"; }
# started ID [N]: true once task ID has N attempts (default 1)
started() { [ "$(TASKQ_HOME=$n1 TASKQ_NODE=h1 attempt_count "$1")" -ge "${2:-1}" ]; }
# wait_started ID WHAT FROM_MS: task ID started on h2 within WAKE_MS of
# FROM_MS (ms since the epoch); the wait itself is bounded by twice the
# idle beat, so that a failure says how long it took
wait_started() {
	local id=$1 what=$2 from=$3 at node
	wait_for "started $id" 25 || fail "$what: task $id never started"
	at=$(field "$id" attempts.0.started_at)
	node=$(field "$id" attempts.0.node)
	echo "$what: task $id started on $node $((at - from)) ms after"
	assert_eq h2 "$node" "$what: run by h2's idle worker"
	[ $((at - from)) -le $WAKE_MS ] ||
		fail "$what: task $id started $((at - from)) ms after, not within $WAKE_MS ms"
}
# h2_idle: h2's worker has gone idle after its last task (its end written;
# it waits on its doorbell again, its idle timer set afresh)
h2_idle() {
	wait_for "[ \"\$(node_workers h2 idle)\" -ge 1 ] && [ \"\$(node_busy h2)\" -eq 0 ]" 20 ||
		fail "h2's worker did not go idle"
}

check "h1's workers busy, h2's idle"
# h1's two workers run a task each, the second in a group limited to one
node_serve h1 2 --lease 10s
assert_exit 0 on h1 group set limited --parallel 1
blocker=$(on h1 submit -- sleep 600)
hold=$(on h1 submit --group limited -- sleep 600)
wait_for "started $blocker && started $hold" 20 || fail "h1's tasks did not start"
node_serve h2 1 --lease 10s
h2_idle
assert_eq "h1 h1" "$(field "$blocker" attempts.0.node) $(field "$hold" attempts.0.node)" \
	"h1 runs both"

check "a submit on h1 is started by h2's idle worker at once, each time"
for k in 1 2 3; do
	h2_idle
	t0=$(_tq_now_ms)
	id=$(on h1 submit -- true) || fail "submit $k"
	wait_started "$id" "submit $k" "$t0"
	wait_for "[ \"\$(field $id state)\" = succeeded ]" 20 || fail "task $id did not succeed"
done

check "a retry on h1"
h2_idle
t0=$(_tq_now_ms)
assert_exit 0 on h1 retry "$id"
wait_for "started $id 2" 25 || fail "the retry never started"
at=$(field "$id" attempts.1.started_at)
echo "retry: started on $(field "$id" attempts.1.node) $((at - t0)) ms after"
assert_eq h2 "$(field "$id" attempts.1.node)" "retry run by h2"
[ $((at - t0)) -le $WAKE_MS ] || fail "the retry started $((at - t0)) ms after, not within $WAKE_MS ms"

check "a resume on h1 of a paused group"
h2_idle
assert_exit 0 on h1 pause held
id=$(on h1 submit --group held -- true)
assert_eq queued "$(field "$id" state)" "held by the pause"
h2_idle
t0=$(_tq_now_ms)
assert_exit 0 on h1 resume held
wait_started "$id" "resume" "$t0"

check "a group's limit raised on h1"
id=$(on h1 submit --group limited -- true)
h2_idle
assert_eq queued "$(field "$id" state)" "held by the limit"
t0=$(_tq_now_ms)
assert_exit 0 on h1 group set limited --parallel 2
wait_started "$id" "limit raised" "$t0"

check "a --delay submitted on h1 starts on h2 when it comes due"
h2_idle
t0=$(_tq_now_ms)
id=$(on h1 submit --delay 2s -- true)
wait_started "$id" "delay 2s" "$((t0 + 2000))"

assert_exit 0 on h1 kill "$blocker"
assert_exit 0 on h1 kill "$hold"
