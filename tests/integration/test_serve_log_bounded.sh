#!/usr/bin/env bash
# test_serve_log_bounded.sh - a background supervisor's serve.log stays
# bounded (issue 16, item 7): a client looping connect, 8 garbage bytes,
# close (which grew it by 82 MB in 10 s) costs one line and then one count
# line every 10 s, with the exact count; the log rotates by size into
# serve.log.1..N, each file under the bound, whoever writes (the
# supervisor, or workers through the stderr they inherited); and nothing
# else is lost: every line a task's worker writes is there, once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

SOCK="$TASKQ_HOME/submit.sock"
LOG="$TASKQ_HOME/serve.log"

# garbage SECONDS OUT: connect, send 8 bytes, close, for SECONDS, in the
# background; OUT gets how many were sent whole.
cat >"$TQ_TMP/garbage.py" <<'EOF'
import os, socket, sys, time
path, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
end, n = time.monotonic() + secs, 0
while time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        s.sendall(b"garbage!")
        n += 1
    except OSError:
        pass
    s.close()
with open(out + ".tmp", "w") as f:
    f.write("%d\n" % n)
os.rename(out + ".tmp", out)
EOF
garbage() {
	rm -f "$2"
	tq_bg "$TQ_PYTHON" "$TQ_TMP/garbage.py" "$SOCK" "$1" "$2"
}

# A background supervisor (the one that writes serve.log), tracked so that
# cleanup stops it.
daemon_start() {
	assert_exit 0 tq serve "$@"
	tq_track "$(cat "$TASKQ_HOME/serve.pid")"
	wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(tail -5 "$LOG")"
}

daemon_stop() {
	assert_exit 0 tq shutdown # returns once it has stopped
}

# The garbage lines in all log files: "PLAIN SUM" (lines without a count,
# and the sum of the counts).
garbage_lines() {
	cat "$LOG"* | "$TQ_PYTHON" -c '
import re, sys
plain = total = 0
for line in sys.stdin:
    if "bad magic" not in line:
        continue
    m = re.search(r"\(repeated (\d+) times? in the last \d+ s\)$", line)
    if m:
        total += int(m.group(1))
    else:
        plain += 1
print(plain, total)
'
}

# ids of tasks whose on-exit hook prints 20 distinct lines of ~400 bytes
# (each its own line in the worker's log)
HOOK='for n in $(seq 1 20); do printf "hook-%s-%02d-%0370d\n" $TASKQ_ID $n 0; done'

check "a garbage loop costs a line and a count, with the exact count"
daemon_start --workers 1
garbage 3 "$TQ_TMP/sent"
wait_for "[ -e '$TQ_TMP/sent' ]" 30 || fail "the garbage loop did not end"
sent=$(cat "$TQ_TMP/sent")
[ "$sent" -gt 100 ] || fail "only $sent garbage connections"
assert_exit 0 tq submit --on-exit "$HOOK" -- true
id=$(out)
wait_state "$id" succeeded
wait_for "[ \$(grep -c 'on-exit stdout: hook-' '$LOG') -ge 20 ]" 30 || fail "hook lines missing"
daemon_stop
read -r plain total < <(garbage_lines)
echo "    ($sent connections: $plain line(s), counts summing to $total)"
[ "$plain" -ge 1 ] && [ "$plain" -le 2 ] || fail "$plain garbage lines for $sent connections"
assert_eq "$sent" $((plain + total)) "lines and counts against connections"
size=$(cat "$LOG"* | wc -c)
[ "$size" -lt 65536 ] || fail "the log grew to $size bytes"

check "a task's worker lines are all there"
assert_eq 20 "$(grep -c "task $id on-exit stdout: hook-$id-" "$LOG")" "its hook's lines"
assert_eq 1 "$(grep -c "taskq worker 1 (pid [0-9]*): task $id attempt 1: succeeded" "$LOG")"

check "serve --log-size and --log-files are checked, and kept for later supervisors"
assert_exit 2 tq serve --log-size 1K
assert_one_line_error
assert_contains "$(err)" "--log-size"
assert_exit 2 tq serve --log-files 0
assert_one_line_error
assert_exit 2 tq drain --log-size 1M
assert_one_line_error
rm -f "$LOG"*
assert_exit 0 tq status --json
assert_eq "10485760|3" "$(out | pyjson '"%d|%d" % (d["serve_log_size"], d["serve_log_files"])')" \
	"the default bounds, before any supervisor stored its own"
daemon_start --workers 2 --log-size 64K --log-files 4
assert_exit 0 tq status --json
assert_eq "65536|4" "$(out | pyjson '"%d|%d" % (d["serve_log_size"], d["serve_log_files"])')" \
	"the bounds stored for later supervisors"

check "rotated by size, supervisor and worker lines alike, under the bound, nothing lost"
garbage 6 "$TQ_TMP/sent"
ids=()
for i in $(seq 1 20); do
	assert_exit 0 tq submit --on-exit "$HOOK" -- true
	ids+=("$(out)")
done
for id in "${ids[@]}"; do
	wait_state "$id" succeeded 60
done
wait_for "[ -e '$TQ_TMP/sent' ]" 30 || fail "the garbage loop did not end"
sent=$(cat "$TQ_TMP/sent")
# the workers' last lines (the hooks) are written after the task is recorded
wait_for "[ \$(cat '$LOG'* | grep -c 'on-exit stdout: hook-') -ge 400 ]" 30 ||
	fail "hook lines missing: $(cat "$LOG"* | grep -c 'on-exit stdout: hook-') of 400"
daemon_stop
ls -l "$LOG"* | sed 's/^/    /'
[ -e "$LOG.1" ] && [ -e "$LOG.2" ] || fail "the log was not rotated: $(ls "$TASKQ_HOME")"
[ ! -e "$LOG.5" ] || fail "more files than --log-files 4"
# within the bound, but for what another process writes while one rotates
# (diag.h): a line or two, a burst of a hook's lines if the rotating one is
# descheduled just then
for f in "$LOG"*; do
	[ "$(wc -c <"$f")" -le $((65536 + 16384)) ] || fail "$f is $(wc -c <"$f") bytes, over 64K"
done
for id in "${ids[@]}"; do
	for n in $(seq -w 1 20); do
		c=$(cat "$LOG"* | grep -c "task $id on-exit stdout: hook-$id-$n-")
		[ "$c" = 1 ] || fail "task $id's hook line $n is there $c times"
	done
	c=$(cat "$LOG"* | grep -c "task $id attempt 1: succeeded")
	[ "$c" = 1 ] || fail "task $id's end is logged $c times"
done
read -r plain total < <(garbage_lines)
echo "    ($sent connections: $plain line(s), counts summing to $total)"
[ "$plain" -ge 1 ] && [ "$plain" -le 2 ] || fail "$plain garbage lines for $sent connections"
assert_eq "$sent" $((plain + total)) "lines and counts against connections"
check "with its supervisor killed, the workers go on logging and rotating on their own"
rm -f "$LOG"*
daemon_start --workers 2
pid=$(cat "$TASKQ_HOME/serve.pid")
kill -KILL "$pid"
wait_for "! _tq_alive $pid" 10 || fail "the supervisor outlived SIGKILL"
ids=()
for i in $(seq 1 12); do
	assert_exit 0 tq submit --no-start --on-exit "$HOOK" -- true
	ids+=("$(out)")
done
for id in "${ids[@]}"; do
	wait_state "$id" succeeded 60
done
wait_for "[ \$(cat '$LOG'* | grep -c 'on-exit stdout: hook-') -ge 240 ]" 30 ||
	fail "hook lines missing: $(cat "$LOG"* | grep -c 'on-exit stdout: hook-') of 240"
[ -e "$LOG.1" ] || fail "the workers did not rotate the log: $(ls -l "$TASKQ_HOME")"
for f in "$LOG"*; do
	[ "$(wc -c <"$f")" -le $((65536 + 16384)) ] || fail "$f is $(wc -c <"$f") bytes, over 64K"
done
for id in "${ids[@]}"; do
	c=$(cat "$LOG"* | grep -c "task $id on-exit stdout: hook-$id-")
	[ "$c" = 20 ] || fail "task $id's hook lines are there $c times, not 20"
done
# a new supervisor adopts them, and stops them
daemon_start --workers 2
assert_contains "$(cat "$LOG")" "adopted worker"
daemon_stop

if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"*; then
	fail "sanitizer report: $(grep -hE -A20 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"* | head -40)"
fi
