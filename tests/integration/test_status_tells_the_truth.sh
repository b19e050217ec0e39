#!/usr/bin/env bash
# taskq status says what is so: the state directory's path with its control
# characters escaped (exact in --json); after a supervisor adopts the
# workers a killed one left, each slot once, in slot order, even after an
# adopted worker dies and its slot is refilled; a worker killed while no
# supervisor watched is "dead", not "running task N" (--json: "alive");
# a group paused by a rate limit counts its task waiting for the retry as
# scheduled, not as "0 queued".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

odd="$TQ_TMP/a$(printf '\t')b$(printf '\033')c"
export TASKQ_HOME="$odd"

# the pids of the workers listed in slot $1 (not stopped)
worker_pid() { tq_json status --json -- --in worker_list --each slot pid | awk -F'|' -v s="$1" '$1 == s { print $2 }'; }
# how many workers are listed (not stopped)
listed_workers() { tq status --json | pyjson 'len(d["worker_list"])'; }
slots() { tq status --json | pyjson '" ".join(str(w["slot"]) for w in d["worker_list"])'; }

check "the path: escaped on a terminal's line, exact in --json"
assert_exit 0 tq submit --no-start -- true
assert_exit 0 tq status
assert_contains "$(out)" 'state directory: '"$TQ_TMP"'/a\tb\033c'
assert_not_contains "$(out)" "$(printf '\033')"
assert_exit 0 tq status --json
assert_eq "$odd" "$(out | pyjson 'd["home"]')"

check "a supervisor adopts the workers a killed one left, each in its own slot"
serve_start 2
first_sup=$SERVE_PID
kill -KILL "$(worker_pid 1)"
# the supervisor starts worker 1 again: rows now worker 2, then worker 1
wait_for "[ \"\$(live_workers)\" -eq 2 ] && [ \"\$(listed_workers)\" -eq 2 ]" 20 ||
	fail "worker 1 was not started again"
kill -KILL "$first_sup"
wait_for "! _tq_alive $first_sup" 10 || fail "the supervisor did not die"
serve_start 2
assert_eq "1 2" "$(slots)"
check "an adopted worker dies; its slot's next worker does not take another's name"
kill -KILL "$(worker_pid 2)"
wait_for "[ \"\$(listed_workers)\" -eq 2 ] && [ \"\$(live_workers)\" -eq 2 ]" 20 ||
	fail "worker 2 was not started again: $(tq status --json)"
assert_eq "1 2" "$(slots)"
assert_exit 0 tq status
assert_eq 1 "$(out | grep -c '^worker 1:')" "lines for worker 1: $(out)"
assert_eq 1 "$(out | grep -c '^worker 2:')" "lines for worker 2: $(out)"

check "a worker killed while no supervisor watches: dead, not running its task"
long=$(submit_id -- sleep 300)
wait_state "$long" running
# its worker: the one whose id is the attempt's worker_id (status --json)
wid=$(tq show "$long" --json | pyjson 'd["attempts"][-1]["worker_id"]')
assert_exit 0 tq status --json
wpid=$(out | pyjson "next(w['pid'] for w in d['worker_list'] if w['id'] == $wid)")
slot=$(out | pyjson "next(w['slot'] for w in d['worker_list'] if w['id'] == $wid)")
assert_eq "$long" "$(out | pyjson "next(w['task'] for w in d['worker_list'] if w['id'] == $wid)")" \
	"the task of worker $wid (pid $wpid)"
kill -KILL "$SERVE_PID"
wait_for "! _tq_alive $SERVE_PID" 10 || fail "the supervisor did not die"
kill -KILL "$wpid"
wait_for "! _tq_alive $wpid" 10 || fail "the worker did not die"
wait_for "tq status --json | pyjson 'next(w for w in d[\"worker_list\"] if w[\"pid\"] == $wpid)[\"alive\"]' | grep -qx false" 10 ||
	fail "status still calls worker pid $wpid alive: $(tq status --json)"
assert_exit 0 tq status
assert_contains "$(out)" "worker $slot: pid $wpid, dead (was running task $long,"
assert_contains "$(out)" "the next supervisor (taskq serve) recovers the task"
assert_not_contains "$(out)" "pid $wpid, running task"
# a supervisor recovers the task and kills what is left of it (sleep 300)
serve_start 2
wait_for "[ \"\$(state_of $long)\" != running ]" 30 || fail "task $long was not recovered"

check "a group paused by a rate limit: its task waiting for the retry is scheduled"
cat > "$TQ_TMP/agent.sh" <<'AGENT'
#!/bin/sh
echo '{"type":"assistant","message":{"model":"<synthetic>","content":[]},"error":"rate_limit"}'
echo '{"is_error":true,"type":"result","api_error_status":429,"subtype":"success","result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}'
exit 1
AGENT
chmod +x "$TQ_TMP/agent.sh"
rl=$(submit_id --group api --backoff 10m --backoff-max 10m -- "$TQ_TMP/agent.sh")
wait_state "$rl" scheduled 30
assert_exit 0 tq status
assert_contains "$(out)" "group api: 0 running, 0 queued, 1 scheduled, paused until"
assert_exit 0 tq status --json
assert_eq "0 1 0" "$(out | pyjson '" ".join(str(g[k]) for g in d["groups"] if g["name"] == "api" for k in ("queued", "scheduled", "blocked"))')"
assert_exit 0 tq group list --json
assert_eq 1 "$(out | pyjson 'next(g for g in d if g["name"] == "api")["scheduled"]')"
