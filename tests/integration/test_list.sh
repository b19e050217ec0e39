#!/usr/bin/env bash
# test_list.sh - taskq list: aligned columns, newest first, the filters,
# --limit/--offset, --json with its stable field names, the empty cases.
# Tasks that ran are made by writing their end state into the database with
# the sqlite3 shell: list only reads what a worker would have recorded.
. "$(dirname "$0")/lib.sh"

check "no state directory yet: exit 2 and one line saying so (not an empty table); nothing is created"
assert_exit 2 tq list
assert_one_line_error
assert_contains "$(err)" "state directory $TASKQ_HOME does not exist"
assert_eq "" "$(out)"
assert_exit 2 tq list --json
assert_eq "" "$(out)"
assert_eq no "$([ -e "$TASKQ_HOME" ] && echo yes || echo no)" "list created the home"

# 1..6: a mix of names, labels, batches
tq submit --name alpha --label kind=review --batch b1 true >/dev/null
tq submit --name beta --label kind=build true >/dev/null
tq submit --name alpha --batch b1 true >/dev/null
tq submit --name gamma true >/dev/null
tq submit --name delta true >/dev/null
tq submit --name six true >/dev/null
now=$(($(date +%s) * 1000))
# 2 succeeded after 65 s; 3 failed with exit 3; 4 killed by SIGKILL; 5 runs;
# 6 has a name with a terminal escape
ends="update tasks set state='succeeded', started_at=$now-100000, finished_at=$now-35000,
	exit_code=0, outcome='succeeded', attempt=1 where id=2;
	update tasks set state='failed', started_at=$now-10000, finished_at=$now-9500,
	exit_code=3, outcome='failed', attempt=1 where id=3;
	update tasks set state='killed', started_at=$now-4000, finished_at=$now-2000,
	signal=9, outcome='killed', attempt=1 where id=4;
	update tasks set state='running', started_at=$now-5000, attempt=1 where id=5;
	update tasks set name = 'evil' || char(27) || '[2Jname' where id=6;"
tq_sql "$ends" # SQL: the database itself (setup: ends at chosen times, a name submit refuses)
# (submit refuses control characters in names; the store may still hold
# them from elsewhere, and list must not pass them to a terminal)
tq cancel 1 >/dev/null

check "newest first, aligned columns, one header line"
assert_exit 0 tq list
assert_eq 7 "$(out | wc -l)" "lines"
assert_eq "ID  STATE      NAME             STARTED              RUNTIME     EXIT" "$(out | head -1)"
assert_eq "6 5 4 3 2 1" "$(out | tail -n +2 | awk '{printf "%s%s", sep, $1; sep=" "}')" "order"
# EXIT is right-aligned, so every line (header included) is as long
assert_eq 1 "$(out | awk '{ print length($0) }' | sort -u | wc -l)" "line lengths"

check "the columns: state, name, started, runtime, exit"
row() { out | awk -v id="$1" '$1 == id'; }
assert_contains "$(row 2)" "succeeded"
assert_contains "$(row 2)" "beta"
assert_contains "$(row 2)" "1m05s"
assert_eq 0 "$(row 2 | awk '{print $NF}')"
assert_eq 3 "$(row 3 | awk '{print $NF}')" "exit code"
assert_eq "500ms" "$(row 3 | awk '{print $(NF-1)}')" "runtime"
assert_eq SIGKILL "$(row 4 | awk '{print $NF}')" "signal"
assert_contains "$(row 5)" "running"
assert_eq "-" "$(row 5 | awk '{print $NF}')" "exit of a running task"
assert_contains "$(row 1)" "canceled"
assert_eq "- -" "$(row 6 | awk '{print $(NF-2), $NF}')" "started and exit of a queued task"
date_re='^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$'
started=$(row 2 | grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}')
[[ $started =~ $date_re ]] || fail "STARTED is not a date: [$started]"

check "names are escaped: no terminal control reaches the screen"
assert_contains "$(row 6)" 'evil\033[2Jname'
assert_eq 0 "$(out | LC_ALL=C grep -c $'\e' || true)" "raw escape bytes"

check "--state filters, one or several; bad names exit 2 listing the valid ones"
assert_exit 0 tq list --state queued
assert_eq "6" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 0 tq list --state running,canceled,failed
assert_eq "5 3 1" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 2 tq list --state bogus
assert_eq 'taskq: list: --state "bogus": expected one of queued, scheduled, blocked, running, succeeded, failed, timed_out, killed, canceled' "$(err)"
assert_exit 2 tq list --state queued,
assert_one_line_error
assert_exit 2 tq list --state ''
assert_one_line_error

check "--name, --label, --batch"
assert_exit 0 tq list --name alpha
assert_eq "3 1" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 0 tq list --label kind=build
assert_eq "2" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 0 tq list --batch b1 --state canceled
assert_eq "1" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 2 tq list --label nokv
assert_one_line_error

check "--limit and --offset"
assert_exit 0 tq list --limit 2
assert_eq "6 5" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 0 tq list --limit 2 --offset 3
assert_eq "3 2" "$(out | tail -n +2 | awk '{print $1}' | xargs)"
assert_exit 0 tq list --limit 0
assert_eq 6 "$(out | tail -n +2 | wc -l)" "--limit 0 is no limit"
for bad in -1 x 1.5 ''; do
	assert_exit 2 tq list --limit "$bad"
	assert_one_line_error
	assert_exit 2 tq list --offset "$bad"
	assert_one_line_error
done

check "the default limit is 50"
for i in $(seq 60); do tq submit true >/dev/null; done
assert_exit 0 tq list
assert_eq 51 "$(out | wc -l)"

check "--json: an array of objects with the stable field names"
assert_exit 0 tq list --json --limit 0
assert_eq 66 "$(out | pyjson 'len(d)')"
assert_eq '["argv", "attempt", "batch", "category", "cost_usd", "created_at", "cwd", "exit_code", "finished_at", "group", "id", "idle_timeout_ms", "name", "outcome", "priority", "reason", "runtime_ms", "signal", "started_at", "state", "warm"]' \
	"$(out | pyjson 'sorted(d[-1].keys())')"
assert_eq 66 "$(out | pyjson 'd[0]["id"]')" "newest first"
assert_eq '[1, "canceled", "canceled", null]' \
	"$(out | pyjson '[(x["id"], x["state"], x["outcome"], x["started_at"]) for x in d if x["id"] == 1][0]')"
assert_eq '[65000, 0, null, "succeeded"]' \
	"$(out | pyjson '[(x["runtime_ms"], x["exit_code"], x["signal"], x["outcome"]) for x in d if x["id"] == 2][0]')"
assert_eq '[9, null, "killed"]' \
	"$(out | pyjson '[(x["signal"], x["exit_code"], x["state"]) for x in d if x["id"] == 4][0]')"
assert_eq 'true' "$(out | pyjson '[x["runtime_ms"] >= 5000 for x in d if x["id"] == 5][0]')" \
	"runtime of a running task counts up to now"
assert_eq '["true"]' "$(out | pyjson '[x["argv"] for x in d if x["id"] == 4][0]')"
assert_eq $'evil\e[2Jname' "$(tq list --json --name $'evil\e[2Jname' | pyjson 'd[0]["name"]')"

check "--json with a filter that matches nothing is []"
assert_exit 0 tq list --json --name nobody
assert_eq "[]" "$(out)"
assert_exit 0 tq list --name nobody
assert_eq "ID  STATE  NAME  STARTED  RUNTIME  EXIT" "$(out)"

check "the alias ls"
assert_exit 0 tq ls --limit 1 --json
assert_eq 66 "$(out | pyjson 'd[0]["id"]')"

check "UTF-8 names pass through in a UTF-8 locale and are escaped in C; bidi controls always"
tq submit --name 'café 日本' true >/dev/null
tq submit --name $'rtl\xe2\x80\xaeevil' true >/dev/null
# a name that is not UTF-8, as an older taskq stored it (submit refuses one)
badid=$(tq submit --name badbyte true)
tq_sql "UPDATE tasks SET name = CAST(x'626164ff62797465' AS TEXT) WHERE id = $badid" # SQL: the database itself (a name an older taskq stored: no command stores one now)
assert_exit 0 env LC_ALL=C.UTF-8 "$TASKQ_BIN" list --limit 3
assert_contains "$(out)" 'café 日本'
assert_contains "$(out)" 'rtl\342\200\256evil'
assert_contains "$(out)" 'bad\377byte'
assert_eq 1 "$(out | "$TQ_PYTHON" -c '
import sys, unicodedata
w = lambda c: 2 if unicodedata.east_asian_width(c) in "WF" else 1
print(len({sum(map(w, l.rstrip("\n"))) for l in sys.stdin}))')" "lines of equal display width"
assert_exit 0 env LC_ALL=C "$TASKQ_BIN" list --limit 3
assert_contains "$(out)" 'caf\303\251 \346\227\245\346\234\254'

check "colour only on a terminal, and never with NO_COLOR"
assert_exit 0 tq list --state succeeded
assert_not_contains "$(out)" $'\e[' "colour in a pipe"
if command -v script >/dev/null; then
	tty_out=$(script -qec "$TASKQ_BIN list --state succeeded" /dev/null)
	assert_contains "$tty_out" $'\e[32msucceeded\e[0m' "colour on a terminal"
	tty_out=$(NO_COLOR=1 script -qec "$TASKQ_BIN list --state succeeded" /dev/null)
	assert_not_contains "$tty_out" $'\e[' "colour with NO_COLOR"
else
	echo "(script(1) not installed: the terminal case is skipped)"
fi

check "a write error on stdout is a runtime error"
assert_exit 1 sh -c "\"\$TASKQ_BIN\" list >/dev/full"
assert_one_line_error
assert_contains "$(err)" "write to stdout"
