#!/usr/bin/env bash
# test_umask.sh - a task runs with its submitter's umask, not with the
# supervisor's (issue 16, item 2). The supervisor here is started under
# umask 0000, as an autostart from a permissive shell would be; each task is
# submitted under another umask, through the supervisor's socket, directly,
# by submit --file and by ask:
#   - the task's own `umask` prints the submitter's, and the files it
#     creates get the modes that umask gives; so do its on-exit hook's;
#   - show says "umask: 0077", show --json "umask": "0077";
#   - taskq retry runs it again with the umask stored at submit, not the
#     retrier's;
#   - a task stored before taskq kept the umask (NULL: schema 3) runs with
#     its worker's, as it did, and show says it is not known.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

W="$TQ_TMP/work"
mkdir -p "$W"
cd "$W" || exit 1
umask 0000
serve_start 1
umask 0022

# The task's output: what its `umask` printed and its file's mode.
lines_of() { tq log "$1" | tr '\n' ' ' | sed 's/ $//'; }

check "submit through the supervisor under umask 077: the task's umask and its file's mode"
# TASKQ_SUBMIT_VIA=supervisor: the submit fails unless it went through the
# supervisor's socket
id=$( (umask 077; TASKQ_SUBMIT_VIA=supervisor tq submit -- sh -c 'umask; touch f1; stat -c %a f1') )
wait_state "$id" succeeded
assert_eq "0077 600" "$(lines_of "$id")" "umask and mode of task $id"
assert_eq 600 "$(stat -c %a "$W/f1")"

check "show and show --json say the umask"
assert_exit 0 tq show "$id"
assert_contains "$(out)" "umask:        0077"
assert_exit 0 tq show --json "$id"
assert_eq 0077 "$(out | pyjson 'd["umask"]')"

check "submitted directly under umask 027 (and a mask with an odd bit, 0002)"
id2=$( (umask 027; TASKQ_SUBMIT_VIA=direct tq submit -- sh -c 'umask; mkdir d2; stat -c %a d2') )
id3=$( (umask 002; TASKQ_SUBMIT_VIA=direct tq submit -- sh -c 'umask; touch f3; stat -c %a f3') )
wait_state "$id2" succeeded
wait_state "$id3" succeeded
assert_eq "0027 750" "$(lines_of "$id2")" "task $id2"
assert_eq "0002 664" "$(lines_of "$id3")" "task $id3"

check "the on-exit hook's files get the task's umask"
id=$( (umask 077; tq submit --on-exit 'touch hook.out' -- true) )
wait_state "$id" succeeded
wait_for "[ -e '$W/hook.out' ]" 20 || fail "the on-exit hook did not run"
assert_eq 600 "$(stat -c %a "$W/hook.out")" "mode of the hook's file"

check "submit --file: every line gets the umask of the submit"
printf '%s\n' '{"shell":"umask; touch l1; stat -c %a l1"}' '{"cmd":["sh","-c","umask"]}' \
	>"$TQ_TMP/tasks.jsonl"
ids=$( (umask 037; tq submit --file "$TQ_TMP/tasks.jsonl") )
a=$(echo "$ids" | sed -n 1p)
b=$(echo "$ids" | sed -n 2p)
wait_state "$a" succeeded
wait_state "$b" succeeded
assert_eq "0037 640" "$(lines_of "$a")" "first line's task"
assert_eq "0037" "$(lines_of "$b")" "second line's task"

check "taskq retry runs it again with the umask stored at submit"
id=$( (umask 077; tq submit -- sh -c 'umask; exit 3') )
wait_state "$id" failed
(umask 000; tq retry "$id" >/dev/null)
wait_for "[ \"\$(task_field $id attempt)\" = 2 ]" 20 ||
	fail "task $id was not retried"
wait_state "$id" failed
assert_eq "0077 0077" "$(lines_of "$id")" "both attempts of task $id"

check "ask: the agent runs with the submitter's umask"
PATH="$(fake_agents_path):$PATH"
export PATH
REC="$TQ_TMP/rec.jsonl"
fake_agent_args claude --record "$REC"
id=$( (umask 027; tq ask --retries 0 "what is the umask?") )
wait_state "$id" succeeded
assert_eq 0027 "$(tq show --json "$id" | pyjson 'd["umask"]')" "stored umask of ask task $id"
assert_eq 0027 "$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["umask"])' "$REC")" \
	"the agent's umask"

check "a task stored before taskq kept the umask runs with its worker's (0000 here)"
tq pause old >/dev/null
id=$( (umask 077; tq submit --group old -- sh -c 'umask; touch n1; stat -c %a n1') )
tq_sql "update tasks set umask = null where id = $id" # SQL: the database itself (a row as schema 4's migration leaves it)
tq resume old >/dev/null
wait_state "$id" succeeded
assert_eq "0000 666" "$(lines_of "$id")" "task $id"
assert_exit 0 tq show "$id"
assert_contains "$(out)" "umask:        - (not known: it runs with the worker's)"
assert_eq null "$(tq show --json "$id" | pyjson 'd["umask"]')"
