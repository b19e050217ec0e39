#!/usr/bin/env bash
# test_serve_stops_without_fds.sh - a supervisor with no file descriptor to
# spare (EMFILE: RLIMIT_NOFILE lowered under it with prlimit) still stops
# when told to, its own workers and the ones it adopted alike: it signalled
# them through tq_proc_signal, which opens a pidfd and /proc files, so a stop
# reached no worker and it waited for them for ever (`taskq shutdown`: "has
# not stopped yet"; a second shutdown did nothing), while they took tasks.
# And while it cannot accept, it pauses accepting instead of spinning on the
# backlog, clients store their tasks themselves, and the socket serves again
# once fds are free. Its poll set may then hold more entries than the limit,
# which poll(2) refuses: it polls them in slices (proc/loop.c).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

command -v prlimit >/dev/null || { echo "SKIP: no prlimit"; exit 77; }

LOG="$TASKQ_HOME/serve.log"
# In a sanitizer build: LeakSanitizer's check at exit needs fds (it reads
# /proc/PID/task) and no ptrace (strace below); this test takes both away
# from the supervisor on purpose.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

daemon_start() {
	assert_exit 0 timeout 20 "$TASKQ_BIN" serve "$@"
	SUP=$(cat "$TASKQ_HOME/serve.pid")
	tq_track "$SUP"
	wait_for "[ \"\$(live_workers)\" -ge 1 ]" 20 || fail "no worker: $(tail -5 "$LOG")"
	WORKERS=$(worker_pids)
	for w in $WORKERS; do
		tq_track "$w"
	done
}

# no new fd in PID: its soft limit below every fd it has (0-2 at least)
no_fds() { prlimit --pid "$1" --nofile=3: || fail "prlimit on $1"; }
fds_back() { prlimit --pid "$1" --nofile=1024: || fail "prlimit on $1"; }

stopped() {
	! _tq_alive "$SUP" || return 1
	for w in $WORKERS; do
		! _tq_alive "$w" || return 1
	done
}

assert_exit 0 tq submit --no-start -- true

check "no fd to spare: accepting pauses, submits store themselves, serving resumes"
daemon_start --workers 2
no_fds "$SUP"
assert_exit 0 timeout 20 "$TASKQ_BIN" submit --name while-emfile -- true
assert_eq 1 "$(task_count --name while-emfile)"
if command -v strace >/dev/null; then
	# a connection waits in the backlog the supervisor cannot accept from
	"$TQ_PYTHON" -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(4)' \
		"$TASKQ_HOME/submit.sock" &
	holder=$!
	timeout 3 strace -q -c -e trace=accept4 -o "$TQ_TMP/strace" -p "$SUP" || true
	n=$(awk '$NF == "accept4" { print $4 }' "$TQ_TMP/strace")
	wait "$holder" || true
	echo "    (accept4 calls in 3 s: ${n:-0})"
	[ "${n:-0}" -le 12 ] || fail "accept4 called $n times in 3 s: the loop spins"
fi
fds_back "$SUP"
wait_for "TASKQ_SUBMIT_VIA=supervisor '$TASKQ_BIN' submit --name after-emfile -- true" 10 ||
	fail "the socket does not serve again: $(tail -3 "$LOG")"

check "no fd to spare: shutdown stops the supervisor and its workers"
no_fds "$SUP"
assert_exit 0 timeout 30 "$TASKQ_BIN" shutdown
wait_for stopped 10 || fail "still running: $(tail -3 "$LOG")"

check "no fd to spare: adopted workers are stopped too, and shutdown --now's grace reaches them"
daemon_start --workers 1
assert_exit 0 tq submit -- sleep 300
id=$(out)
wait_state "$id" running
kill -KILL "$SUP"
wait_for "! _tq_alive $SUP" 10 || fail "the supervisor outlived SIGKILL"
daemon_start --workers 1
assert_contains "$(cat "$LOG")" "adopted worker 1"
no_fds "$SUP"
# the task's grace is 30 s by default: --now (grace 0) must reach the worker
assert_exit 0 timeout 20 "$TASKQ_BIN" shutdown --now
wait_for stopped 10 || fail "still running: $(tail -3 "$LOG")"
state=$(state_of "$id")
[ "$state" != running ] || fail "task $id is still running"

# poll(2) refuses more entries than the soft limit allows (EINVAL): with
# one descriptor more (PostgreSQL's LISTEN connection) the supervisor spun
# on that error and never read SIGTERM
if grep -q ': poll: ' "$LOG"* 2>/dev/null; then
	fail "the supervisor's poll failed: $(grep -h ': poll: ' "$LOG"* | head -3)"
fi
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"* 2>/dev/null; then
	fail "sanitizer report: $(grep -hE -A20 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"* | head -40)"
fi
