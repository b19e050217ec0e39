#!/usr/bin/env bash
# test_session_cwd.sh - a --session keeps the working directory of its first
# task (issue 17, item 4), with the fake agents (tests/fixtures/fakeagent,
# which keeps Claude's conversations per directory as the real CLI does and
# says "No conversation found" when resumed from another):
#   - `cd A; taskq ask --session k one; cd B; taskq ask --session k two`:
#     the second runs in A and resumes the first's conversation; show, show
#     --json and session show say where;
#   - a later link whose --cwd names another directory is refused at submit
#     with one line, exit 2, nothing stored (ask, submit, a --file line);
#     --cwd naming the session's own directory is fine;
#   - the same for plain commands: `submit --session` from B runs in A, also
#     as a line of submit --file.
# The real CLIs (claude, gemini) against the mock: test_session_cwd_real.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
REC="$TQ_TMP/rec.jsonl"
fake_agent_args claude --record "$REC"
A="$TQ_TMP/dir a"
B="$TQ_TMP/dir b"
mkdir -p "$A" "$B"
ntasks() { task_count; }
# rec N EXPR: Python EXPR over the agent's Nth recorded run (d; -1: the last).
rec() {
	"$TQ_PYTHON" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")][int(sys.argv[2])]
print(eval(sys.argv[3]))
' "$REC" "$1" "$2"
}

serve_start 1

check "ask --session from A, then from B: the second runs in A and resumes the first"
cd "$A" || exit 1
s1=$(tq ask --session k --retries 0 "remember the word kiwi")
cd "$B" || exit 1
s2=$(tq ask --session k --retries 0 "which word?")
wait_state "$s1" succeeded
wait_state "$s2" succeeded
first=$(attempts_of "$s1" agent_session)
[ -n "$first" ] || fail "task $s1 reported no agent session"
assert_eq "$A" "$(rec -1 'd["cwd"]')" "the second link's directory"
assert_contains "$(rec -1 '" ".join(d["argv"])')" "--resume $first"
assert_eq "$first" "$(attempts_of "$s2" agent_session)" \
	"the second link continued the first's conversation"
assert_eq "$A" "$(tq show --json "$s2" | pyjson 'd["cwd"]')" "show --json cwd"
assert_exit 0 tq show "$s2"
assert_contains "$(out)" "cwd:          \"$A\""
assert_exit 0 tq session show k
assert_contains "$(out)" "directory:      \"$A\""
assert_eq "$A" "$(tq session show --json k | pyjson 'd["cwd"]')" "session show --json cwd"

check "a later link with another --cwd is refused with one line, exit 2, nothing stored"
n=$(ntasks)
assert_exit 2 tq ask --session k --cwd "$B" --retries 0 "three"
assert_one_line_error
assert_contains "$(err)" "session k runs in $A (its first task's directory), not in --cwd $B"
assert_exit 2 tq submit --session k --cwd . -- true
assert_one_line_error
assert_eq "$n" "$(ntasks)" "tasks stored"
check "--cwd naming the session's own directory is taken"
s3=$(tq ask --session k --cwd "$A" --retries 0 "four")
wait_state "$s3" succeeded
assert_eq "$A" "$(rec -1 'd["cwd"]')" "the third link's directory"

check "submit --session for plain commands: from B it runs in A"
cd "$A" || exit 1
p1=$(tq submit --session plain -- pwd)
cd "$B" || exit 1
p2=$(tq submit --session plain -- pwd)
wait_state "$p1" succeeded
wait_state "$p2" succeeded
assert_eq "$A" "$(tq log "$p2")" "where the second plain link ran"

check "submit --file: a session's line runs in its directory; one with another cwd is refused"
printf '%s\n' '{"cmd":["pwd"],"session":"plain"}' >"$TQ_TMP/ok.jsonl"
p3=$(tq submit --file "$TQ_TMP/ok.jsonl")
wait_state "$p3" succeeded
assert_eq "$A" "$(tq log "$p3")" "the --file link's directory"
printf '%s\n' '{"cmd":["true"]}' "{\"cmd\":[\"pwd\"],\"session\":\"plain\",\"cwd\":\"$B\"}" \
	>"$TQ_TMP/bad.jsonl"
n=$(ntasks)
assert_exit 2 tq submit --file "$TQ_TMP/bad.jsonl"
assert_one_line_error
assert_contains "$(err)" "bad.jsonl:2: session plain runs in $A"
assert_eq "$n" "$(ntasks)" "tasks stored"
