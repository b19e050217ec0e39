#!/usr/bin/env bash
# test_serve_log_replaced.sh - whatever someone puts at HOME/serve.log, the
# processes that write it neither hang nor follow it, and what they write
# stays bounded (issue 16, item 7, tried as an attacker):
# - a FIFO there hung every writer in open(2) for ever: `taskq serve`, and so
#   any submit that autostarts it, the running supervisor (no more submits,
#   signals, shutdown) and its workers (no more tasks); now serve refuses in
#   one line and the running ones write on into the file they have;
# - a directory or a symlink there (serve.log removed first) left the
#   supervisor and its workers writing into the removed file without bound,
#   out of reach of any rotation; now that file is emptied at the bound;
# - a rotation stopped between its rename and its create (its process
#   killed there, or serve.log moved aside) while no supervisor runs: the
#   workers wrote on into serve.log.1 without bound; now the first of them
#   to find it so finishes the rotation.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

LOG="$TASKQ_HOME/serve.log"
BOUND=65536
# lines of ~400 bytes a task's worker writes (its on-exit hook's output)
HOOK='for n in $(seq 1 20); do printf "hook-%s-%02d-%0370d\n" $TASKQ_ID $n 0; done'

# A writer blocked opening a FIFO (the defect) is let go by any opener for
# reading: done before cleanup, so nothing a failed run started stays stuck.
release_fifo() {
	if [ -p "$LOG" ]; then
		timeout 2 "$TQ_PYTHON" -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR))' "$LOG" || true
	fi
}
trap 'rc=$?; set +e; release_fifo; (exit $rc); _tq_cleanup' EXIT

# A background supervisor (the one that owns serve.log), its pid and its
# workers' pids tracked so that cleanup stops them.
daemon_start() {
	assert_exit 0 timeout 20 "$TASKQ_BIN" serve "$@"
	SUP=$(cat "$TASKQ_HOME/serve.pid")
	tq_track "$SUP"
	wait_for "[ \"\$(live_workers)\" -ge 1 ]" 20 || fail "no worker: $(tail -5 "$LOG")"
	for w in $(worker_pids); do
		tq_track "$w"
	done
}

# The size of the file fd 2 of PID writes to, wherever it is.
fd2_size() { stat -L -c %s "/proc/$1/fd/2"; }

# submit_hooks N [ARGS]: N tasks whose hooks write 20 lines each to the log
submit_hooks() {
	local n=$1
	shift
	IDS=()
	for _ in $(seq 1 "$n"); do
		assert_exit 0 tq submit "$@" --on-exit "$HOOK" -- true
		IDS+=("$(out)")
	done
}

wait_ended() {
	for id in "${IDS[@]}"; do
		wait_for "[ \"\$(state_of $id)\" = succeeded ]" 60 || {
			release_fifo
			fail "task $id is $(state_of "$id") after 60 s"
		}
	done
}

check "a FIFO at serve.log: serve refuses at once, in one line; a submit stores its task"
assert_exit 0 tq submit --no-start -- true
rm -f "$LOG"
mkfifo -m 600 "$LOG"
run timeout 20 "$TASKQ_BIN" serve
release_fifo
assert_eq 1 "$TQ_RC" "serve's exit (124: it hung)"
assert_one_line_error
assert_contains "$(err)" "serve.log is not a regular file of ours (a FIFO)"
# a submit that would autostart the supervisor is not held either
TASKQ_AUTOSTART=1 run timeout 20 "$TASKQ_BIN" submit --name through-fifo -- true
release_fifo
assert_eq 0 "$TQ_RC" "submit's exit (124: it hung)"
assert_eq 1 "$(task_count --name through-fifo)"

check "a directory or a symlink at serve.log: serve says which, and follows nothing"
rm -f "$LOG"
mkdir "$LOG"
assert_exit 1 timeout 20 "$TASKQ_BIN" serve
assert_one_line_error
assert_contains "$(err)" "(a directory)"
rmdir "$LOG"
ln -s "$TQ_TMP/elsewhere" "$LOG"
assert_exit 1 timeout 20 "$TASKQ_BIN" serve
assert_one_line_error
assert_contains "$(err)" "(a symbolic link)"
[ ! -e "$TQ_TMP/elsewhere" ] || fail "serve created the symlink's target"
rm -f "$LOG"

check "serve.log replaced by a FIFO under a running supervisor: tasks go on, shutdown works"
daemon_start --workers 1
rm -f "$LOG"
mkfifo -m 600 "$LOG"
# the worker writes a line a task, the supervisor one for the garbage
"$TQ_PYTHON" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"garbage!"); s.close()' \
	"$TASKQ_HOME/submit.sock"
submit_hooks 3
wait_ended
run timeout 20 "$TASKQ_BIN" shutdown
release_fifo
assert_eq 0 "$TQ_RC" "shutdown's exit: $(err)"
rm -f "$LOG"

check "serve.log replaced by a directory: the removed file they write stays within the bound"
daemon_start --workers 2 --log-size 64K
rm -f "$LOG"
mkdir "$LOG"
# 40 tasks x 20 lines x ~400 bytes: 320 KB, five times the bound
submit_hooks 40
wait_ended
# the hooks' lines are written after the task is recorded: give them time
wait_for "[ \$(fd2_size $SUP) -gt 0 ]" 10 || true
for pid in "$SUP" $(worker_pids); do
	size=$(fd2_size "$pid")
	[ "$size" -le $((BOUND + 16384)) ] || fail "pid $pid writes into a removed file of $size bytes"
done
assert_exit 0 tq shutdown
rmdir "$LOG"

check "a rotation left half done while no supervisor runs: the workers finish it"
daemon_start --workers 1 --log-size 64K --log-files 3
kill -KILL "$SUP"
wait_for "! _tq_alive $SUP" 10 || fail "the supervisor outlived SIGKILL"
# what a rotation killed between its rename and its create leaves
mv "$LOG" "$LOG.1"
submit_hooks 40 --no-start
wait_ended
wait_for "[ -e '$LOG' ]" 10 || fail "serve.log was not made again: $(ls -l "$TASKQ_HOME")"
for f in "$LOG"*; do
	[ "$(wc -c <"$f")" -le $((BOUND + 16384)) ] || fail "$f is $(wc -c <"$f") bytes, over 64K"
done
# a new supervisor adopts the worker and stops it
daemon_start --workers 1
assert_exit 0 tq shutdown

if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"* 2>/dev/null; then
	fail "sanitizer report: $(grep -hE -A20 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"* | head -40)"
fi
