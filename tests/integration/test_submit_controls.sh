#!/usr/bin/env bash
# test_submit_controls.sh - the queue controls of submit: --unique under
# concurrent submitters, --after / --after-any through a failure, --delay
# against a running supervisor, --at's forms, --priority order with one
# worker, --session and --on-exit as stored.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

col() { task_field "$@"; }
# Remove every task (none is running here).
remove_all() {
	local id
	for id in $(task_ids); do
		tq remove "$id" >/dev/null || fail "remove $id"
	done
}

check "--unique: a held key prints the holder's id, says so on stderr, exits 0"
assert_exit 0 tq submit --unique nightly -- true
first=$(out)
assert_exit 0 tq submit --unique nightly -- false
assert_eq "$first" "$(out)"
assert_eq "taskq: submit: task $first holds unique key \"nightly\"; not added" "$(err)"
assert_exit 0 tq submit --json --unique nightly -- true
assert_eq "{\"id\":$first,\"existed\":true}" "$(out)"
assert_eq 1 "$(task_count)"
assert_exit 2 tq submit --unique "" -- true
assert_one_line_error

# A sanitizer build's process costs ~10x a normal one's (140 ms of CPU a
# submit, most of it mapping shadow memory): it checks memory, not the race,
# so it runs 8 x 25; a normal build runs the full 8 x 200.
per=200
if grep -qa __asan_init "$TASKQ_BIN"; then
	per=25
fi
total=$((8 * per))
check "--unique: 8 concurrent submitters x $per submits of one key add one task"
remove_all
for p in $(seq 1 8); do
	(
		for i in $(seq 1 "$per"); do
			"$TASKQ_BIN" submit --unique race -- echo "$p.$i" || echo "rc=$?"
		done >"$TQ_TMP/race.$p.out" 2>"$TQ_TMP/race.$p.err"
	) &
	tq_track $!
done
wait_for "[ \$(cat $TQ_TMP/race.*.out 2>/dev/null | wc -l) -ge $total ]" 300 ||
	fail "the submitters did not finish: $(cat "$TQ_TMP"/race.*.out | wc -l) lines"
wait
assert_eq 1 "$(task_count)" "tasks"
holder=$(task_ids)
assert_eq race "$(col "$holder" unique_key)" "the one task holds the key"
assert_eq "$total $holder" "$(cat "$TQ_TMP"/race.*.out | sort | uniq -c | awk '{print $1, $2}')" \
	"every submitter printed the holder's id"
assert_eq $((total - 1)) "$(cat "$TQ_TMP"/race.*.err | grep -c "holds unique key \"race\"; not added")"
assert_eq $((total - 1)) "$(cat "$TQ_TMP"/race.*.err | wc -l)" "nothing else on stderr"

check "--unique: a key is free again once its task has ended"
assert_exit 0 tq cancel "$holder"
assert_exit 0 tq submit --unique race -- true
[ "$(out)" -gt "$holder" ] || fail "expected a new task, got $(out)"
assert_eq "" "$(err)"

check "--after / --after-any: bad ids are usage errors naming the id"
assert_exit 2 tq submit --after 99999 -- true
assert_one_line_error
assert_contains "$(err)" "99999"
assert_exit 2 tq submit --after 1,x -- true
assert_one_line_error
assert_contains "$(err)" '--after "1,x"'
assert_exit 2 tq submit --after 0 -- true
assert_one_line_error
assert_exit 2 tq submit --after "$holder" --after-any "$holder" -- true
assert_one_line_error
assert_contains "$(err)" "not both"
before=$(task_count)

check "--priority: out of range or not a number is refused"
assert_exit 2 tq submit --priority 2147483648 -- true
assert_one_line_error
assert_exit 2 tq submit --priority high -- true
assert_one_line_error
assert_eq "$before" "$(task_count)" "nothing stored by refused submits"

check "--at: HH:MM is the next such local time; ISO-8601 with and without a zone"
# a fixed zone (+05:30, no DST) given as a POSIX string: no tzdata needed
export TZ=XST-5:30
expect_clock() { # HH:MM -> ms of its next local occurrence (as python sees TZ)
	"$TQ_PYTHON" -c '
import sys, time, datetime
time.tzset()
now = time.time()
h, m = map(int, sys.argv[1].split(":"))
d = datetime.datetime.fromtimestamp(now).replace(hour=h, minute=m, second=0, microsecond=0)
t = time.mktime(d.timetuple())
if t <= now:
    d = d + datetime.timedelta(days=1)
    t = time.mktime(d.timetuple())
print(int(t) * 1000)' "$1"
}
clock_in() { # minutes from now -> HH:MM local
	"$TQ_PYTHON" -c 'import sys, time; time.tzset(); print(time.strftime("%H:%M", time.localtime(time.time() + int(sys.argv[1]) * 60)))' "$1"
}
for mins in 90 -90; do
	hm=$(clock_in $mins)
	# a minute boundary between the two reads would move the answer
	want=$(expect_clock "$hm")
	assert_exit 0 tq submit --at "$hm" -- true
	id=$(out)
	got=$(col "$id" run_after)
	[ "$got" = "$want" ] || [ "$got" = "$(expect_clock "$hm")" ] ||
		fail "--at $hm: run_after $got, expected $want"
	assert_eq scheduled "$(col "$id" state)"
done
now_ms=$(_tq_now_ms)
got=$(col "$id" run_after)
# -90 minutes has passed today: tomorrow, so between 22 and 24 hours ahead
[ "$got" -gt $((now_ms + 22 * 3600 * 1000)) ] && [ "$got" -le $((now_ms + 24 * 3600 * 1000)) ] ||
	fail "--at $(clock_in -90): run_after $got is not tomorrow (now $now_ms)"
assert_exit 0 tq submit --at 2031-01-02T03:04:05Z -- true
assert_eq 1925089445000 "$(col "$(out)" run_after)"
assert_exit 0 tq submit --at 2031-01-02T03:04:05.250+02:00 -- true
assert_eq $((1925089445000 - 7200000 + 250)) "$(col "$(out)" run_after)"
assert_exit 0 tq submit --at 2031-01-02T08:34 -- true
assert_eq 1925089440000 "$(col "$(out)" run_after)" "no zone: local time (+05:30)"
assert_exit 0 tq submit --at "2031-01-02 08:34:05" -- true
assert_eq 1925089445000 "$(col "$(out)" run_after)"
assert_exit 0 tq submit --at 2031-01-02 -- true
assert_eq $((1925089445000 - (3 * 3600 + 4 * 60 + 5) * 1000 - 19800000)) "$(col "$(out)" run_after)" \
	"a date alone is its local midnight"
unset TZ
before=$(task_count)
for bad in garbage 25:00 12:60 7:30 2031-02-29 2031-13-01 2031-01-02T03 \
	2031-01-02T03:04Zjunk 2031-01-02T03:04+25:00 ""; do
	assert_exit 2 tq submit --at "$bad" -- true
	assert_one_line_error
	assert_contains "$(err)" "--at \"$bad\": expected a time such as 04:00"
done
assert_exit 2 tq submit --at 04:00 --delay 5m -- true
assert_one_line_error
assert_contains "$(err)" "not both"
assert_exit 2 tq submit --delay soon -- true
assert_one_line_error
assert_contains "$(err)" "--delay"
assert_eq "$before" "$(task_count)"

check "--session and --on-exit are stored; a session's tasks wait for the one before"
assert_exit 0 tq submit --session s1 --on-exit 'echo "$TASKQ_ID" >> done' -- true
s1=$(out)
assert_eq s1 "$(col "$s1" session)"
assert_eq 'echo "$TASKQ_ID" >> done' "$(col "$s1" on_exit)"
assert_exit 0 tq submit --session s1 -- true
s2=$(out)
assert_eq blocked "$(col "$s2" state)"
assert_eq "[{\"id\": $s1, \"any\": true}]" "$(col "$s2" after)" "a session's task waits for the one before to end"
assert_exit 2 tq submit --on-exit '' -- true
assert_one_line_error
assert_exit 2 tq submit --session $'a\tb' -- true
assert_one_line_error
# clear the queue for the runs below: nothing here should run
remove_all

check "--priority: one worker runs higher first, ties in submit order"
order="$TQ_TMP/order"
for spec in "0 a" "5 b" "5 c" "-1 d" "10 e" "0 f"; do
	set -- $spec
	assert_exit 0 tq submit --priority "$1" --group prio --shell "echo $2 >> $order"
done
serve_start 1
wait_for "[ \$(task_count --group prio --state succeeded) -eq 6 ]" 30 ||
	fail "priority tasks did not all succeed: $(tq list)"
assert_eq "e b c a f d" "$(tr '\n' ' ' <"$order" | sed 's/ $//')"

check "--after: a chain A -> B -> C where B fails: C is canceled with the reason; --after-any runs"
gate="$TQ_TMP/gate"
assert_exit 0 tq submit --shell "while [ ! -e $gate ]; do sleep 0.05; done"
a=$(out)
assert_exit 0 tq submit --after "$a" --retries 0 -- sh -c 'exit 3'
b=$(out)
assert_exit 0 tq submit --after "$b" -- true
c=$(out)
assert_exit 0 tq submit --after-any "$b" -- true
d=$(out)
assert_exit 0 tq submit --after "$a,$c" -- true
e=$(out)
assert_eq blocked "$(state_of "$b")"
assert_eq blocked "$(state_of "$c")"
assert_eq blocked "$(state_of "$d")"
touch "$gate"
wait_state "$a" succeeded
wait_state "$b" failed
wait_state "$d" succeeded
wait_state "$c" canceled
wait_state "$e" canceled
assert_contains "$(col "$c" reason)" "$b"
assert_contains "$(col "$e" reason)" "$c"
assert_eq "0 0" "$(attempt_count "$c") $(attempt_count "$e")" "canceled tasks never ran"
check "--after a task that already failed: canceled at once; --after-any it: runs"
assert_exit 0 tq submit --after "$b" -- true
late=$(out)
assert_eq canceled "$(state_of "$late")"
assert_contains "$(col "$late" reason)" "$b"
assert_exit 0 tq submit --after-any "$b" -- true
wait_state "$(out)" succeeded

check "--delay 2s: scheduled, and not started before its time while a supervisor runs"
assert_exit 0 tq submit --delay 2s -- true
id=$(out)
assert_eq scheduled "$(state_of "$id")"
created=$(col "$id" created_at)
run_after=$(col "$id" run_after)
[ "$run_after" -ge $((created + 1900)) ] && [ "$run_after" -le $((created + 2000)) ] ||
	fail "run_after $run_after is not created_at $created + 2s"
wait_state "$id" succeeded 20
started=$(col "$id" started_at)
# Its time is run_after: the client counts the delay from just before it
# hands the task over, so created_at (stamped at the commit) may be a few
# ms later, and created_at + 2000 is not a bound the task must respect.
[ "$started" -ge "$run_after" ] ||
	fail "started at $started, before its run_after $run_after"
[ "$started" -ge "$run_after" ] || fail "started at $started, before run_after $run_after"
