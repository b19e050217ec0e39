#!/usr/bin/env bash
# taskq log --follow: prints lines as the task writes them (live, not at
# its end), then exits with the task's exit status: its exit code, 128+N
# for taskq kill, 124 for a timeout, 127 when it could not start, 1 when
# canceled; --stream and --json follow too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# A task that blocks until the test writes to its gate (a FIFO).
mkgate() { mkfifo "$TQ_TMP/$1"; }
open_gate() { timeout 10 sh -c "echo go > '$TQ_TMP/$1'" || fail "gate $1: nobody read it"; }

# follow_bg NAME ARGS...: taskq log ARGS --follow in the background, output
# in $TQ_TMP/NAME.out; its pid in FOLLOW_PID.
follow_bg() {
	local name=$1
	shift
	"$TASKQ_BIN" log "$@" --follow >"$TQ_TMP/$name.out" 2>"$TQ_TMP/$name.err" &
	FOLLOW_PID=$!
	tq_track "$FOLLOW_PID"
}

# follow_rc PID: wait (with a deadline) for a follower to exit; its status
# in FOLLOW_RC (not printed: wait must run in this shell, not a subshell).
follow_rc() {
	wait_for "! _tq_alive $1" 30 || fail "log --follow did not exit"
	FOLLOW_RC=0
	wait "$1" || FOLLOW_RC=$?
}

check "a queued task that is canceled: follow waits, then exits 1"
queued=$(submit_id -- echo never)
follow_bg canceled "$queued"
c_pid=$FOLLOW_PID
# in its wait loop once it watches the logs directory
wait_for "ls -l /proc/$c_pid/fd | grep -q inotify" 10 || fail "follow did not start waiting"
assert_exit 0 tq cancel "$queued"
follow_rc "$c_pid"
assert_eq 1 "$FOLLOW_RC" "exit status of log --follow"

serve_start 2
mkgate g1
gated=$(submit_id -- bash -c "echo before; read x < '$TQ_TMP/g1'; echo after1; echo after2 >&2; exit 3")
wait_state "$gated" running
check "follow prints what is there, then new lines as they are written"
follow_bg all "$gated"
all_pid=$FOLLOW_PID
follow_bg errs "$gated" --stream stderr --json
errs_pid=$FOLLOW_PID
wait_for "grep -qx before '$TQ_TMP/all.out'" 10 || fail "follow did not print the first line"
_tq_alive "$all_pid" || fail "follow exited while the task runs"
open_gate g1
check "then it exits with the task's exit code"
follow_rc "$all_pid"
assert_eq 3 "$FOLLOW_RC" "exit status of log --follow"
assert_eq "$(printf 'after1\nafter2\nbefore')" "$(sort "$TQ_TMP/all.out")"
assert_eq "before" "$(head -n 1 "$TQ_TMP/all.out")"
assert_eq "" "$(cat "$TQ_TMP/all.err")"
check "--stream stderr --json follows only stderr, as JSON"
follow_rc "$errs_pid"
assert_eq 3 "$FOLLOW_RC" "exit status of log --follow"
assert_eq '{"n":1,"stream":"stderr","text":"after2"}' "$(cat "$TQ_TMP/errs.out")"

check "a task that already ended: its lines, its exit code, at once"
assert_exit 3 tq log "$gated" --follow
assert_eq "$(printf 'after1\nafter2\nbefore')" "$(out | sort)"
assert_exit 3 tq log "$gated" --follow --offset 2
assert_eq 1 "$(out | wc -l)"

check "--limit with --follow: the last M lines, then the new ones"
mkgate g2
slow=$(submit_id -- bash -c "seq 1 50; read x < '$TQ_TMP/g2'; echo 51; exit 0")
wait_for "[ \"\$(tq log $slow --offset 0 | wc -l)\" -eq 50 ]" 20 || fail "task did not write 50 lines"
follow_bg tail "$slow" --limit 2
tail_pid=$FOLLOW_PID
wait_for "[ \"\$(cat '$TQ_TMP/tail.out')\" = \"\$(seq 49 50)\" ]" 10 || fail "tail: $(cat "$TQ_TMP/tail.out")"
open_gate g2
follow_rc "$tail_pid"
assert_eq 0 "$FOLLOW_RC" "exit status of log --follow"
assert_eq "$(seq 49 51)" "$(cat "$TQ_TMP/tail.out")"
assert_eq "lines 49-50 of 50; --offset/--limit to page" "$(cat "$TQ_TMP/tail.err")"

check "killed by taskq kill (TERM): 143"
napper=$(submit_id -- sleep 1000)
wait_state "$napper" running
follow_bg killed "$napper"
k_pid=$FOLLOW_PID
assert_exit 0 tq kill "$napper"
follow_rc "$k_pid"
assert_eq 143 "$FOLLOW_RC" "exit status of log --follow"

check "timed out: 124"
late=$(submit_id --timeout 300ms -- sleep 1000)
assert_exit 124 tq log "$late" --follow
check "could not start: 127"
nocmd=$(submit_id -- no-such-command-xyz)
assert_exit 127 tq log "$nocmd" --follow
check "died by a signal: 128+N"
sig=$(submit_id -- sh -c 'kill -USR1 $$')
assert_exit $((128 + 10)) tq log "$sig" --follow
check "succeeded: 0"
ok=$(submit_id -- echo fine)
assert_exit 0 tq log "$ok" -f
assert_eq fine "$(out)"

check "an unknown id is exit 2, as without --follow"
assert_exit 2 tq log 9999 --follow
