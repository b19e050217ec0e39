#!/usr/bin/env bash
# test_show.sh - taskq show ID...: every stored field, the environment with
# secret-looking values masked unless --show-env, labels, dependencies,
# attempts, --json; unknown and malformed ids exit 2; several ids in one
# call.
. "$(dirname "$0")/lib.sh"

check "unknown id, before and after the database exists: exit 2"
assert_exit 2 tq show 99
assert_eq "taskq: show: state directory $TASKQ_HOME does not exist (state directory from TASKQ_HOME); check the path (a submit creates it)" "$(err)"
assert_eq no "$([ -e "$TASKQ_HOME" ] && echo yes || echo no)" "show created the home"
tq submit true >/dev/null
assert_exit 2 tq show 99
assert_eq 'taskq: show: task 99: no such task' "$(err)"
assert_exit 2 tq show 99 --json
assert_eq "" "$(out)"

check "ids that are not ids: exit 2 quoting them"
for bad in abc 0 1.5 1e3 99999999999999999999 ''; do
	assert_exit 2 tq show "$bad"
	assert_one_line_error
	assert_contains "$(err)" "\"$bad\": expected a task id"
done
assert_exit 2 tq show -1
assert_one_line_error
assert_exit 2 tq show
assert_one_line_error
assert_exit 2 tq show 1 abc
assert_one_line_error
assert_eq "" "$(out)" "shown before every id was checked"

check "secret-looking values are masked unless --show-env"
assert_exit 0 env FOO_TOKEN=tok123 MY_API_KEY=key456 db_password=pw789 \
	Client_Secret=s3cr3t PLAIN=visible "$TASKQ_BIN" submit --name masked \
	--label team=core --label 'note=a "quoted" value' --priority 7 --batch nightly \
	--timeout 1h -- sh -c 'echo "$FOO_TOKEN"'
id=$(out)
assert_exit 0 tq show "$id"
shown=$(out)
for secret in tok123 key456 pw789 s3cr3t; do
	assert_not_contains "$shown" "$secret" "a secret in show"
done
for masked in '"FOO_TOKEN=***"' '"MY_API_KEY=***"' '"db_password=***"' '"Client_Secret=***"' \
	'"PLAIN=visible"'; do
	assert_contains "$shown" "$masked"
done
assert_exit 0 tq show "$id" --json
for secret in tok123 key456 pw789 s3cr3t; do
	assert_not_contains "$(out)" "$secret" "a secret in show --json"
done
assert_contains "$(out | pyjson 'd["env"]')" '"FOO_TOKEN=***"'
assert_exit 0 tq show "$id" --show-env
for kv in FOO_TOKEN=tok123 MY_API_KEY=key456 db_password=pw789 Client_Secret=s3cr3t; do
	assert_contains "$(out)" "\"$kv\""
done
assert_exit 0 tq show "$id" --json --show-env
assert_contains "$(out | pyjson 'd["env"]')" '"FOO_TOKEN=tok123"'
assert_eq tok123 "$(task_env "$id" | sed -n 's/^FOO_TOKEN=//p')" "the store keeps the real value"

check "the human show has every field"
assert_exit 0 tq show "$id"
shown=$(out)
for want in "id:           $id" "name:         masked" "state:        queued" \
	"argv:         3 arguments" '    "sh"' '    "-c"' '    "echo \"$FOO_TOKEN\""' \
	"cwd:          \"$(pwd -P)\"" "group:        sh" "batch:        nightly" \
	"priority:     7" "timeout:      1h00m" "kill grace:   5.0s" "max output:   50M" \
	"max retries:  3" "stdin:        null" "attempt:      0" "exit:         -" \
	"labels:       2" '    note="a \"quoted\" value"' '    team="core"' "after:        0" \
	"environment:  " "attempts:     0"; do
	assert_contains "$shown" "$want"
done
created=$(grep '^created:' <<<"$shown")
[[ $created =~ ^created:\ +[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9:]{8}$ ]] ||
	fail "created is not a date: [$created]"

check "show --json: the list fields and the rest"
assert_exit 0 tq show "$id" --json
j=$(out)
keys="id state name argv cwd batch group priority created_at started_at finished_at
	runtime_ms exit_code signal outcome category reason attempt shell session unique_key
	run_after timeout_ms kill_grace_ms max_output max_retries retry_lost backoff_ms
	backoff_max_ms stdin pty on_exit agent model prompt isolate sources kill_signal
	kill_requested_at worker_id lease_until env labels after attempts"
assert_eq "[]" "$(pyjson "[k for k in '''$keys'''.split() if k not in d]" <<<"$j")" \
	"fields missing from show --json"
assert_eq '{"note": "a \"quoted\" value", "team": "core"}' "$(pyjson 'd["labels"]' <<<"$j")"
assert_eq 3600000 "$(pyjson 'd["timeout_ms"]' <<<"$j")"
assert_eq '[]' "$(pyjson 'd["attempts"]' <<<"$j")"
assert_eq nightly "$(pyjson 'd["batch"]' <<<"$j")"
assert_eq null "$(pyjson 'd["started_at"]' <<<"$j")"

check "cwd that is not UTF-8: U+FFFD in cwd, the exact bytes in cwd_base64"
dir="$TQ_TMP/"$'d\xffir'
mkdir "$dir"
assert_exit 0 tq submit --cwd "$dir" true
id2=$(out)
assert_exit 0 tq show "$id2" --json
assert_eq "$(printf '%s' "$dir" | base64 -w0)" "$(out | pyjson 'd["cwd_base64"]')"
assert_contains "$(out | pyjson 'd["cwd"]')" $'d\xef\xbf\xbdir'
assert_exit 0 tq show "$id2"
assert_contains "$(out)" 'd\377ir'

check "attempts and the outcome, as a worker would have recorded them"
now=$(($(date +%s) * 1000))
ran="update tasks set state='failed', attempt=2, started_at=$now-3000, finished_at=$now-1000,
	exit_code=1, outcome='failed', category='rate_limit', reason='HTTP 429' where id=$id;
	insert into attempts(task_id, attempt, worker_id, pid, pgid, proc_start, started_at,
		ended_at, signal, outcome, category, reason, counted) values ($id, 1, 1, 4242, 4242,
		777001, $now-9000, $now-8000, 15, 'signaled', 'unknown', 'terminated', 0);
	insert into attempts(task_id, attempt, worker_id, pid, pgid, proc_start, started_at,
		ended_at, exit_code, outcome, category, reason) values ($id, 2, 1, 4243, 4243,
		777002, $now-3000, $now-1000, 1, 'failed', 'rate_limit', 'HTTP 429');"
tq_sql "$ran" # SQL: the database itself (setup: attempts with chosen pids, times and ends)
assert_exit 0 tq show "$id"
shown=$(out)
assert_contains "$shown" "attempts:     2"
assert_contains "$shown" "outcome:      failed"
assert_contains "$shown" "category:     rate_limit"
assert_contains "$shown" "reason:       HTTP 429"
assert_contains "$shown" "runtime:      2.0s"
head=$(grep -E '^ *N +STARTED' <<<"$shown")
assert_contains "$head" "OUTCOME"
a1=$(grep -E '^1  ' <<<"$shown")
assert_contains "$a1" "signaled"
assert_contains "$a1" "SIGTERM"
assert_contains "$a1" "1.0s"
a2=$(grep -E '^2  ' <<<"$shown")
assert_contains "$a2" "rate_limit"
assert_contains "$a2" "HTTP 429"
assert_exit 0 tq show "$id" --json
assert_eq '[[1, 15, null, "signaled", 1000], [2, null, 1, "failed", 2000]]' \
	"$(out | pyjson '[(a["attempt"], a["signal"], a["exit_code"], a["outcome"], a["runtime_ms"]) for a in d["attempts"]]')"
assert_eq '[[1, 4242, 4242, 777001, false], [2, 4243, 4243, 777002, true]]' \
	"$(out | pyjson '[(a["attempt"], a["pid"], a["pgid"], a["proc_start"], a["counted"]) for a in d["attempts"]]')" \
	"each attempt's process, its identity, and whether it counts against --retries"

check "dependencies are listed"
# (a queued task after one that failed already: submit --after cancels it)
tq_sql "insert into deps(task_id, dep_id) values ($id2, $id)" # SQL: the database itself (setup: a dependency no submit makes)
assert_exit 0 tq show "$id2"
assert_contains "$(out)" "after:        1"
assert_contains "$(out)" "    $id (to succeed)"
assert_exit 0 tq show "$id2" --json
assert_eq "[{\"id\": $id, \"any\": false}]" "$(out | pyjson 'd["after"]')"

check "several ids: each task in turn, in the order given, as show shows it alone"
assert_exit 0 tq show "$id2" "$id" --json
assert_eq "$(tq show "$id2" --json)"$'\n'"$(tq show "$id" --json)" "$(out)" "one object a line"
assert_exit 0 tq show "$id" "$id2"
assert_eq "$(tq show "$id")"$'\n\n'"$(tq show "$id2")" "$(out)" "each block, a blank line between"
check "several ids, one with no task: said on one line, the others shown, exit 2"
assert_exit 2 tq show "$id" 99 "$id2" --json
assert_eq "$id $id2" "$(out | "$TQ_PYTHON" -c 'import json, sys; print(*(json.loads(l)["id"] for l in sys.stdin))')"
assert_one_line_error
assert_eq 'taskq: show: task 99: no such task' "$(err)"
