#!/usr/bin/env bash
# test_session.sh - issue 7, sessions, end to end: a chain of fake-claude
# tasks submitted with `taskq submit --session KEY` and run by a supervisor
# with two workers. The links run one at a time in submit order; the first
# fails (a rate limit, --retries 0: not retried) and the session does not
# advance to the agent session it reported; the second succeeds and the
# session takes its agent session id (`taskq session show`, human and
# --json). A third link resumes that id
# (--resume, as {session_id} would expand) and the conversation goes on in
# the same agent session; a failed fourth leaves it there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

cd "$TQ_TMP" || exit 1

mkdir -p "$TQ_TMP/pybin"
ln -sfn "$(command -v "$TQ_PYTHON")" "$TQ_TMP/pybin/python3"
PATH="$TQ_TMP/pybin:$(fake_agents_path):$PATH"
export PATH
# {turns}: how many prompts this agent session has seen, this one included
fake_agent_args claude --result "turn {turns}: {prompt}"

assert_exit 0 tq submit --help
grep -q -- '--session' "$TQ_OUT" || skip "taskq submit has no --session yet"

serve_start 2

# the agent session of task ID's last attempt (NULL: none)
agent_session_of() { attempt_field "$1" last agent_session | sed 's/^$/NULL/'; }
# session KEY's agent session (NULL: none) and the task that set it, from
# session show --json
session_row() {
	tq session show "$1" --json |
		pyjson '"%s|%s" % (d["agent_session"] or "NULL", d["last_task_id"] or "")'
}

check "a chain: the failed first link does not advance the session"
# the first link sleeps, so the second would start at once if the chain
# did not hold it back
L1=$(submit_id --session chain --retries 0 -- \
	claude --mode rate_limit --sleep 0.5 -p first --output-format stream-json --verbose)
L2=$(submit_id --session chain -- claude -p second --output-format stream-json --verbose)
wait_state "$L1" failed 30
wait_state "$L2" succeeded 30
assert_eq 1 "$(task_field "$L1" attempt)" "the first link was not retried"
assert_eq rate_limit "$(task_field "$L1" category)"
S1=$(agent_session_of "$L1")
S2=$(agent_session_of "$L2")
[ "$S1" != NULL ] || fail "the failed link's result has its agent session id"
[ "$S2" != NULL ] || fail "the second link has an agent session id"
[ "$S1" != "$S2" ] || fail "two fresh runs, two agent sessions"
[ "$(task_field "$L2" started_at)" -ge "$(task_field "$L1" finished_at)" ] ||
	fail "the second link started before the first ended"
assert_eq "$S2|$L2" "$(session_row chain)" "sessions row"
# no session (every key a task names) holds the failed link's agent session
for key in $(for id in $(task_ids); do task_field "$id" session; done | sort -u); do
	assert_not_contains "$(tq session show "$key" --json | pyjson 'd["agent_session"]')" "$S1" \
		"the failed link's agent session was never session $key's"
done

check "taskq session show: the tasks in order and the current agent session"
assert_exit 0 tq session show chain
assert_contains "$(out)" "agent session:  $S2"
assert_contains "$(out)" "set by task:    $L2"
assert_contains "$(out)" "tasks:          2"
grep -qE "^ *$L1 +failed +claude +1 .* $S1\$" "$TQ_OUT" || fail "link 1 row: $(out)"
grep -qE "^ *$L2 +succeeded +claude +1 .* $S2\$" "$TQ_OUT" || fail "link 2 row: $(out)"
assert_exit 0 tq session show chain --json
assert_eq "$S2|$L2|$L1,$L2|failed,succeeded|$S1,$S2" "$(out | pyjson '"|".join((d["agent_session"], str(d["last_task_id"]), ",".join(str(t["id"]) for t in d["tasks"]), ",".join(t["state"] for t in d["tasks"]), ",".join(t["agent_session"] for t in d["tasks"])))')"

check "the next link resumes the session's agent session and it goes on"
L3=$(submit_id --session chain -- \
	claude -p third --resume "$S2" --output-format stream-json --verbose)
wait_state "$L3" succeeded 30
assert_eq "turn 2: third" "$(tq result "$L3")" "the resumed conversation's second turn"
assert_eq "$S2|$L3" "$(session_row chain)" "same agent session, last task moved on"

check "a failed link after a success leaves the session where it was"
L4=$(submit_id --session chain --retries 0 -- \
	claude --mode overload -p fourth --resume "$S2" --output-format stream-json --verbose)
wait_state "$L4" failed 30
assert_eq "$S2|$L3" "$(session_row chain)"
assert_exit 0 tq session show chain --json
assert_eq "$S2|$L3|4" "$(out | pyjson '"%s|%s|%d" % (d["agent_session"], d["last_task_id"], len(d["tasks"]))')"

check "a session with no success yet has no agent session; unknown keys exit 2"
L5=$(submit_id --session fresh --retries 0 -- \
	claude --mode auth -p x --output-format stream-json --verbose)
wait_state "$L5" failed 30
assert_eq "NULL|" "$(session_row fresh)"
assert_exit 0 tq session show fresh
assert_contains "$(out)" "agent session:  - (none yet)"
assert_exit 0 tq session show fresh --json
assert_eq "null" "$(out | pyjson 'd["agent_session"]')"
assert_exit 2 tq session show nosuch
assert_one_line_error
assert_contains "$(err)" 'session "nosuch": no such session'
assert_exit 2 tq session
assert_one_line_error
assert_exit 2 tq session list
assert_one_line_error
assert_exit 2 tq session show
assert_one_line_error
