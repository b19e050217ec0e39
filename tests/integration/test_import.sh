#!/usr/bin/env bash
# test_import.sh - taskq submit --file: JSON lines into tasks, the command
# line's options as defaults, a bad line named by its number (the file is
# read whole first: nothing added), 10,000 lines (stored in short chunks:
# test_import_chunks.sh), a line the store refuses, --json, stdin, and
# --unique keys already held.
. "$(dirname "$0")/lib.sh"

col() { task_field "$@"; }
count() { task_count; }
# labels ID: task ID's labels, "K=V" joined by ',' in key order
labels() { tq show "$1" --json | pyjson '",".join(k + "=" + v for k, v in sorted(d["labels"].items()))'; }

mkdir -p "$TQ_TMP/work/sub"
cd "$TQ_TMP/work"
real=$(pwd -P)

check "each field of a line lands in its column"
cat >tasks.jsonl <<'EOF'
{"cmd":["echo","a b","c"],"name":"first","priority":5,"labels":{"kind":"review"},"timeout":"5m","retries":0}

{"shell":"echo $GREETING > out.txt","cwd":"sub","env":{"GREETING":"hi","HOME":null},"batch":"b2","group":"g2"}
{"cmd":["true"],"unique":"u1","session":"s1","on_exit":"echo done","max_output":"1M","kill_grace":1.5,"delay":60}
{"cmd":["true"],"at":"2031-01-02T03:04:05Z","max_output":2048,"timeout":90,"backoff":"1m","backoff_max":"2h","retry_lost":true,"pty":true}
EOF
GREETING=outer assert_exit 0 tq submit --file tasks.jsonl
assert_eq "1 2 3 4" "$(out | tr '\n' ' ' | sed 's/ $//')"
assert_eq "" "$(err)"
assert_eq "$(hex_args echo "a b" c)" "$(task_argv_hex 1)"
assert_eq "first|5|300000|0|$real|kind=review" \
	"$(col 1 name priority timeout_ms max_retries cwd)|$(labels 1)"
assert_eq "$(hex_args /bin/sh -c 'echo $GREETING > out.txt')" "$(task_argv_hex 2)"
assert_eq "true|$real/sub|b2|g2" "$(col 2 shell cwd batch group)"
env2=$(task_env 2)
assert_contains "$env2" "GREETING=hi"
assert_eq 0 "$(grep -c '^HOME=' <<<"$env2" || true)" "HOME unset by a null"
assert_eq 1 "$(task_env 1 | grep -c '^HOME=')" "HOME kept without one"
assert_contains "$(task_env 1)" "GREETING=outer" "a line without env gets the submitter's"
assert_eq "u1|s1|echo done|1048576|1500|scheduled" \
	"$(col 3 unique_key session on_exit max_output kill_grace_ms state)"
delay=$(tq show 3 --json | pyjson 'd["run_after"] - d["created_at"]')
[ "$delay" -ge 59000 ] && [ "$delay" -le 60000 ] || fail "delay 60: run_after - created_at = $delay"
assert_eq "1925089445000|2048|90000|60000|7200000|true|true" \
	"$(col 4 run_after max_output timeout_ms backoff_ms backoff_max_ms retry_lost pty)"
assert_eq 1 "$(tq list --json --limit 0 | pyjson 'len({t["created_at"] for t in d})')" \
	"one transaction, one time"

check "the command line's options are defaults; a line's fields win"
cat >defaults.jsonl <<'EOF'
{"cmd":["true"]}
{"cmd":["true"],"priority":-3,"batch":"mine","labels":{"kind":"x","extra":"y"},"timeout":0}
EOF
assert_exit 0 tq submit --batch nightly --priority 7 --label kind=cron --timeout 2h --group cron --file defaults.jsonl
assert_eq "5 6" "$(out | tr '\n' ' ' | sed 's/ $//')"
assert_eq "nightly|7|7200000|cron|kind=cron" "$(col 5 batch priority timeout_ms group)|$(labels 5)"
assert_eq "mine|-3|0|cron|extra=y,kind=x" "$(col 6 batch priority timeout_ms group)|$(labels 6)"

check "after and after_any: an id, an array, or a string of ids"
printf '%s\n' '{"cmd":["true"],"after":1}' '{"cmd":["true"],"after":[1,2]}' \
	'{"cmd":["true"],"after_any":"1,2"}' >deps.jsonl
assert_exit 0 tq submit --file deps.jsonl
assert_eq "7 8 9" "$(out | tr '\n' ' ' | sed 's/ $//')"
assert_eq "7:1:success 8:1:success 8:2:success 9:1:any 9:2:any" \
	"$(for id in $(task_ids); do
		[ "$id" -ge 7 ] && tq show "$id" --json |
			pyjson '" ".join("%d:%d:%s" % (d["id"], a["id"], "any" if a["any"] else "success") for a in sorted(d["after"], key=lambda a: a["id"]))'
	done | paste -sd' ')"

check "--json prints one array; - reads stdin; a held unique key prints the holder's id"
printf '%s\n' '{"cmd":["true"],"unique":"u1"}' '{"cmd":["true"],"unique":"u2"}' \
	'{"cmd":["true"],"unique":"u2"}' | { assert_exit 0 tq submit --json --file -; }
assert_eq '[{"id":3,"existed":true},{"id":10},{"id":10,"existed":true}]' "$(out)"
assert_eq "taskq: submit: 2 of 3 tasks were already present under their unique key; not added again (their ids are printed)" "$(err)"
: | { assert_exit 0 tq submit --json --file -; }
assert_eq '[]' "$(out)" "an empty file adds nothing"
printf '\xef\xbb\xbf{"cmd":["true"],"name":"bom"}\r\n\r\n  \t\n' >crlf.jsonl
assert_exit 0 tq submit --file crlf.jsonl
assert_eq bom "$(col "$(out)" name)" "a byte order mark and CRLF line ends are accepted"

check "bad lines: the line's number and the reason, exit 2, nothing added"
before=$(count)
# bad_line N JSON TEXT: a file whose line N is JSON (after good and blank
# lines) is refused naming bad.jsonl:N and TEXT
bad_line() {
	{
		echo '{"cmd":["true"]}'
		echo
		echo '{"shell":"true"}'
		printf '%s\n' "$1"
		echo '{"cmd":["true"]}'
	} >bad.jsonl
	assert_exit 2 tq submit --file bad.jsonl
	assert_one_line_error
	assert_contains "$(err)" "taskq: submit: bad.jsonl:4: $2"
	assert_eq "$before" "$(count)" "tasks after a refused file"
}
bad_line '{"cmd":"ls"}' '"cmd": expected an array of strings'
bad_line '{"cmd":["ls",3]}' '"cmd": item 2: expected a string'
bad_line '{"cmd":["ls"],"priority":"high"}' '"priority": expected a number'
bad_line '{"cmd":["ls"],"priority":1.5}' '"priority": expected a whole number'
bad_line '{"cmd":["ls"],"priority":1e999}' '"priority": expected a whole number'
bad_line '{"cmd":["ls"],"timeout":true}' '"timeout": expected a duration'
bad_line '{"cmd":["ls"],"timeout":"5x"}' '"timeout": "5x": expected a duration'
bad_line '{"cmd":["ls"],"labels":["a"]}' '"labels": expected an object'
bad_line '{"cmd":["ls"],"env":{"A":1}}' '"env": "A": expected a string'
bad_line '{"cmd":["ls"],"name":""}' '"name": empty name'
bad_line '{"cmd":["ls"],"comand":["x"]}' 'unknown field "comand"'
bad_line '{"cmd":["ls"],"cmd":["ls"]}' 'field "cmd" given twice'
bad_line '{"name":"x"}' 'no command: give "cmd" (an array of strings) or "shell" (a string)'
bad_line '{"cmd":[]}' '"cmd": empty'
bad_line '{"cmd":["ls"],"shell":"ls"}' 'give "cmd" or "shell", not both'
bad_line '{"cmd":["ls"],"after":[1],"after_any":[2]}' 'give "after" or "after_any", not both'
bad_line '{"cmd":["ls"],"delay":"1m","at":"04:00"}' 'give "delay" or "at", not both'
bad_line '{"cmd":["ls"],"at":"noon"}' '"at": "noon": expected a time'
bad_line '{"cmd":["ls"],"cwd":"nowhere"}' '"cwd": "nowhere": No such file or directory'
bad_line '{"cmd":["ls"],"after":999999}' 'dependency 999999: no such task'
bad_line '{"cmd":["a\u0000b"]}' 'a string holds U+0000 (NUL)'
bad_line '["ls"]' 'expected a JSON object'
bad_line '{"cmd":["ls"]} x' 'not valid JSON'
bad_line '{"cmd":["ls"]' 'not valid JSON'
bad_line '{"prompt":"hi","cmd":["ls"]}' 'an agent task takes "prompt", not "cmd" or "shell"'
bad_line '{"agent":"claude"}' 'an agent task needs "prompt"'
deep=$(printf '[%.0s' $(seq 5000))
bad_line "$deep" 'not valid JSON'
printf '{"cmd":["true"]}\n{"cmd":["x\0y"]}\n' >nul.jsonl
assert_exit 2 tq submit --file nul.jsonl
assert_eq 'taskq: submit: nul.jsonl:2: holds a NUL byte' "$(err)"
printf '{"cmd":["true"],"after":987654}\n' >one.jsonl
assert_exit 2 tq submit --file one.jsonl
assert_eq 'taskq: submit: one.jsonl:1: dependency 987654: no such task' "$(err)" \
	"a one-line file's store error names its line too"
printf '{"cmd":["true"]}\n{"cmd":1}\n' | { assert_exit 2 tq submit --file -; }
assert_eq 'taskq: submit: <stdin>:2: "cmd": expected an array of strings such as ["make","all"]' "$(err)"
assert_eq "$before" "$(count)"

check "--file with a command, --shell or --wait, or a file that is not there: exit 2"
assert_exit 2 tq submit --file tasks.jsonl -- true
assert_one_line_error
assert_exit 2 tq submit --file tasks.jsonl --shell true
assert_one_line_error
assert_exit 2 tq submit --wait --file tasks.jsonl
assert_one_line_error
assert_contains "$(err)" "wait --batch"
assert_exit 2 tq submit --file missing.jsonl
assert_one_line_error
assert_contains "$(err)" 'missing.jsonl'
assert_exit 2 tq submit --file sub
assert_one_line_error
assert_eq "$before" "$(count)"

check "10,000 lines: all added"
"$TQ_PYTHON" -c '
import json
for i in range(10000):
    print(json.dumps({"cmd": ["echo", "task %d" % i], "name": "t%d" % i, "priority": i % 7}))
' >big.jsonl
t0=$(_tq_now_ms)
assert_exit 0 tq submit --batch big --file big.jsonl
t1=$(_tq_now_ms)
echo "submit --file of 10,000 lines: $((t1 - t0)) ms (wall, this machine, under its load)"
assert_eq 10000 "$(out | wc -l)"
assert_eq 10000 "$(tq_json batch show big --json -- total)"
assert_eq "$(out | head -1) $(out | tail -1)" "$(task_ids --batch big | sed -n '1p;$p' | paste -sd' ')"
assert_eq "t9999" "$(col "$(out | tail -1)" name)" "ids in the file's order"

check "10,000 lines with a bad line 9,999: nothing added"
before=$(count)
"$TQ_PYTHON" -c '
import json
for i in range(1, 10001):
    t = {"cmd": ["echo", str(i)], "batch": "bad"}
    if i == 9999:
        t["retries"] = "many"
    print(json.dumps(t))
' >big-bad.jsonl
assert_exit 2 tq submit --file big-bad.jsonl
assert_eq 'taskq: submit: big-bad.jsonl:9999: "retries": expected a number' "$(err)"
# a line the store refuses (an unknown dependency) on line 9,999: the same
"$TQ_PYTHON" -c '
import json
for i in range(1, 10001):
    t = {"cmd": ["echo", str(i)], "batch": "bad"}
    if i == 9999:
        t["after"] = 987654
    print(json.dumps(t))
' >big-bad2.jsonl
# the store takes the file in chunks: those before the chunk of line 9,999
# stay, and the error says which they are (resumed: test_import_chunks.sh)
assert_exit 2 tq submit --file big-bad2.jsonl
assert_one_line_error
assert_contains "$(err)" 'taskq: submit: big-bad2.jsonl:9999: dependency 987654: no such task; '
stored=$(out | wc -l)
assert_contains "$(err)" "the tasks of lines 1-$stored are stored ($stored tasks"
assert_eq "$((before + stored))" "$(count)"
assert_eq "$stored" "$(task_count --batch bad)"
