#!/usr/bin/env bash
# --stall-timeout: an agent that waits for ever (no output, or the same
# reconnect line again and again) is stopped after DUR without new output,
# its attempt is `stalled`, classified network and retried with backoff;
# out of retries the task ends timed_out and `wait` exits 124. (Before, it
# ran until --timeout, 1 h for an agent, and a timed-out attempt was not
# retried.) Output that changes keeps a task alive; TERM escalates to KILL.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
. "$(dirname "$0")/lib_agents.sh"

CLAUDE=("$FAKEAGENT" -p hi --output-format stream-json --verbose)

serve_start 3

# jq-free JSON field of `taskq show ID --json`
show_field() {
	tq show "$1" --json | pyjson "d[\"$2\"]"
}

check "a silent agent is stopped after --stall-timeout, long before --timeout, and retried"
t0=$(_tq_now_ms)
a=$(submit_id --timeout 10m --stall-timeout 2s --retries 1 --backoff 1s --backoff-max 1s \
	-- "${CLAUDE[@]}" --mode hang)
wait_state "$a" timed_out 60
elapsed=$(($(_tq_now_ms) - t0))
[ "$elapsed" -lt 60000 ] || fail "task $a took $elapsed ms"
assert_eq "2" "$(attempt_count "$a")" "attempts"
assert_eq "stalled|network|15
stalled|network|15" "$(attempts_of "$a" outcome category signal)"
for n in 1 2; do
	ran=$(attempt_field "$a" "$n" runtime_ms)
	[ "$ran" -ge 1900 ] && [ "$ran" -lt 30000 ] || fail "attempt $n ran $ran ms, not about 2 s"
done
assert_contains "$(task_field "$a" reason)" "stalled: no new output for 2.0s; the last line: {"
check "it ends timed_out with outcome stalled: wait exits 124, show and list --json say stalled"
assert_exit 124 tq wait "$a"
assert_eq "timed_out stalled network" "$(tq show "$a" --json | pyjson '" ".join([d["state"], d["outcome"], d["category"]])')"
assert_eq 2000 "$(show_field "$a" stall_timeout_ms)"
assert_exit 0 tq list --json --state timed_out
assert_eq "[[$a, \"stalled\", \"network\"]]" "$(out | pyjson '[[t["id"], t["outcome"], t["category"]] for t in d]')"
assert_exit 0 tq show "$a"
out | grep -qE '^1 .* stalled +network +SIGTERM +stalled: no new output for 2\.0s' ||
	fail "show lists no stalled attempt 1: $(out | tail -3)"
check "classify --explain says the worker's verdict was stalled"
assert_exit 0 tq classify "$a" --explain
assert_contains "$(out)" "rule:       outcome.stalled"
assert_contains "$(out)" "the worker's verdict: stalled"
assert_contains "$(out)" "transient:  yes"

check "Codex repeating \"Reconnecting... waiting for network\" every 0.2 s is stalled too, then succeeds"
b=$(submit_id --stall-timeout 2s --retries 2 --backoff 1s --backoff-max 1s -- "$FAKEAGENT" \
	--style codex --mode reconnect --repeat-every 0.2 --fail-times 1 \
	--state-file "$TQ_TMP/b.n" exec --json hi)
wait_state "$b" succeeded 60
assert_eq "stalled|network
succeeded|" "$(attempts_of "$b" outcome category)"
reason=$(attempt_field "$b" 1 reason)
assert_contains "$reason" "repeated lines); the last: {\"type\":\"error\",\"message\":\"Reconnecting... waiting for network"
ran=$(attempt_field "$b" 1 runtime_ms)
[ "$ran" -lt 30000 ] || fail "the reconnecting attempt ran $ran ms"

check "output that changes keeps a task alive past its stall timeout"
c=$(submit_id --stall-timeout 2s -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "step $i"; sleep 0.4; done')
wait_state "$c" succeeded 60
assert_eq "succeeded" "$(attempts_of "$c" outcome)"

check "a stalled task that ignores TERM is KILLed after --kill-grace"
d=$(submit_id --stall-timeout 1s --kill-grace 1s --retries 0 -- "${CLAUDE[@]}" --mode hang --trap-term)
wait_state "$d" timed_out 60
assert_eq "stalled|9" "$(attempts_of "$d" outcome signal)"
assert_exit 124 tq wait "$d"

check "stats counts stalled attempts"
assert_exit 0 tq stats --json
assert_eq 4 "$(out | pyjson 'd["outcomes"]["stalled"]')"

check "a plain command has no stall timeout unless asked; --stall-timeout 0 is off"
e=$(submit_id -- true)
assert_eq 0 "$(show_field "$e" stall_timeout_ms)"
f=$(submit_id --stall-timeout 0 -- true)
assert_eq 0 "$(show_field "$f" stall_timeout_ms)"
assert_exit 2 tq submit --stall-timeout 5x -- true
assert_one_line_error
assert_contains "$(err)" "--stall-timeout"

check "taskq ask takes the profile's stall timeout (5m for the built-in agents); --stall-timeout overrides it"
PATH="$(fake_agents_path):$PATH"
g=$(tq ask "hello")
assert_eq 300000 "$(show_field "$g" stall_timeout_ms)"
h=$(tq ask --stall-timeout 0 "hello")
assert_eq 0 "$(show_field "$h" stall_timeout_ms)"
i=$(tq ask --stall-timeout 90s "hello")
assert_eq 90000 "$(show_field "$i" stall_timeout_ms)"
wait_state "$g" succeeded 60

check "--file: \"stall_timeout\" on a line; an agent line without one takes the profile's, or --stall-timeout's"
printf '%s\n' '{"cmd":["true"],"stall_timeout":"45s"}' '{"prompt":"hi"}' \
	'{"prompt":"hi","stall_timeout":"0"}' >"$TQ_TMP/tasks.jsonl"
assert_exit 0 tq submit --file "$TQ_TMP/tasks.jsonl" --json
ids=($(out | pyjson '" ".join(str(i["id"]) for i in d)'))
assert_eq "45000 300000 0" "$(show_field "${ids[0]}" stall_timeout_ms) $(show_field "${ids[1]}" stall_timeout_ms) $(show_field "${ids[2]}" stall_timeout_ms)"
assert_exit 0 tq submit --stall-timeout 1m --file "$TQ_TMP/tasks.jsonl" --json
ids=($(out | pyjson '" ".join(str(i["id"]) for i in d)'))
assert_eq "45000 60000 0" "$(show_field "${ids[0]}" stall_timeout_ms) $(show_field "${ids[1]}" stall_timeout_ms) $(show_field "${ids[2]}" stall_timeout_ms)"
printf '%s\n' '{"cmd":["true"],"stall_timeout":"soon"}' >"$TQ_TMP/bad.jsonl"
assert_exit 2 tq submit --file "$TQ_TMP/bad.jsonl"
assert_contains "$(err)" "stall_timeout"
