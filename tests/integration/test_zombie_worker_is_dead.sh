#!/usr/bin/env bash
# A worker that died but was not reaped yet (a zombie: its supervisor is
# stopped, or it was reparented to an init that does not reap) is dead:
# status calls it dead (--json "alive": false), and `taskq kill` of its
# task does not wait on it as on a live worker. Its pid with its start time
# still names it in /proc, which made it "running task N" before.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# the supervisor is SIGSTOPped below: a failure must not leave it stopped
cont_sup() { [ -n "${SERVE_PID:-}" ] && kill -CONT "$SERVE_PID" 2>/dev/null; true; }
trap 'rc=$?; set +e; cont_sup; (exit $rc); _tq_cleanup' EXIT

proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	echo "${s%% *}"
}

serve_start 1
long=$(submit_id -- sleep 300)
wait_state "$long" running
wid=$(attempt_field "$long" 1 worker_id)
wpid=$(worker_field "$wid" pid)
[ -n "$wpid" ] || fail "no worker $wid for task $long: $(tq status --json)"

check "a worker killed while its supervisor is stopped is a zombie"
kill -STOP "$SERVE_PID"
kill -KILL "$wpid"
wait_for "[ \"\$(proc_state $wpid)\" = Z ]" 10 || fail "worker $wpid is not a zombie: $(proc_state "$wpid")"

check "status calls the zombie worker dead"
assert_exit 0 tq status --json
assert_eq false "$(out | pyjson "next(w for w in d['worker_list'] if w['pid'] == $wpid)['alive']")" \
	"alive of zombie worker $wpid"
assert_exit 0 tq status
assert_contains "$(out)" "pid $wpid, dead (was running task $long,"

check "taskq kill of its task says at once that its worker is dead"
t0=$(_tq_now_ms)
assert_exit 1 tq kill "$long"
assert_one_line_error
assert_contains "$(err)" "its worker is not alive"
[ $(($(_tq_now_ms) - t0)) -lt 3000 ] || fail "kill took $(($(_tq_now_ms) - t0)) ms"

check "the supervisor, continued, reaps it and runs the task again or recovers it"
cont_sup
wait_for "[ -z \"\$(proc_state $wpid)\" ] || [ \"\$(proc_state $wpid)\" != Z ]" 20 ||
	fail "the supervisor did not reap worker $wpid"
