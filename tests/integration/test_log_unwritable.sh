#!/usr/bin/env bash
# A task whose log cannot be written (here: the workers run under a file
# size limit, RLIMIT_FSIZE, so a log write fails with EFBIG; no mount, no
# root) gets the true reason: outcome output_lost, its own exit code, a
# reason naming the failed call, its errno and how much was kept; it runs to
# its end (not killed), is not retried, keeps what was stored; log prints
# that and says on stderr that output is missing, and so does log --follow
# once the task it follows has ended; poll notes it, and
# --json has output_missing. A later task with a small log is unaffected.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

LIMIT_KB=2000                 # ulimit -f: 2,048,000 bytes for every file
OUT_BYTES=3029999             # 30,000 lines of 100 x's, newlines between them

tq submit -- true >/dev/null # creates the state directory and the database
tq_bg bash -c 'ulimit -f "$1" && exec "$2" serve --foreground --workers 1 --lease 1s' \
	sh "$LIMIT_KB" "$TASKQ_BIN" 2>>"$TQ_TMP/serve.log"
SERVE_PID=$TQ_LAST_PID
wait_for "[ \"\$(live_workers)\" -ge 1 ]" 20 || fail "supervisor did not start: $(cat "$TQ_TMP/serve.log")"

big() { # big EXIT: 3 MB of output, a marker file at the end, then exit EXIT
	echo "head -c 3000000 /dev/zero | tr '\\0' x | fold -w 100; touch '$TQ_TMP/ran.$1'; exit $1"
}

check "a task whose output outgrows the file size limit: output_lost, exit code 0"
id=$(tq submit --retries 3 --shell "$(big 0)")
wait_for "[ \"\$(state_of $id)\" = failed ]" 60 ||
	fail "task $id is $(state_of "$id"): $(tail -5 "$TQ_TMP/serve.log")"
assert_exit 0 tq show "$id" --json
assert_eq output_lost "$(pyjson 'd["outcome"]' <"$TQ_OUT")" "outcome"
assert_eq 0 "$(pyjson 'd["exit_code"]' <"$TQ_OUT")" "its own exit code"
reason=$(pyjson 'd["reason"]' <"$TQ_OUT")
assert_contains "$reason" "its output could not all be stored: log write "
assert_contains "$reason" "$id.log: File too large (EFBIG)"
assert_contains "$reason" "bytes of output kept, the rest dropped; the command itself ended with exit 0"
assert_contains "$reason" "of its $OUT_BYTES bytes"
[ -e "$TQ_TMP/ran.0" ] || fail "the task was stopped instead of running to its end"

check "not retried; what was stored is kept, whole lines, as many bytes as the reason says"
assert_eq 1 "$(pyjson 'len(d["attempts"])' <"$TQ_OUT")" "attempts"
kept=$(sed -n 's/.*; \([0-9]*\) of its [0-9]* bytes of output kept.*/\1/p' <<<"$reason")
[ "$kept" -gt 1000000 ] && [ "$kept" -lt "$OUT_BYTES" ] || fail "kept $kept bytes"
assert_exit 0 tq log "$id" --offset 0
assert_eq "$kept" "$(wc -c <"$TQ_OUT")" "bytes log prints"
assert_eq 0 "$(grep -cvx "$(printf 'x%.0s' $(seq 100))" "$TQ_OUT" || true)" "lines that are not whole"

check "log says on stderr, in one line, that output is missing"
assert_one_line_error
assert_contains "$(err)" "taskq: log: task $id: output missing: attempt 1: its output could not all be stored"

check "log --follow of the ended task says it too, in the same line"
assert_exit 1 tq log "$id" --follow --limit 1
assert_contains "$(err)" "taskq: log: task $id: output missing: attempt 1: its output could not all be stored"

check "log --follow started while the task runs: the line comes once it has ended"
fol=$(tq submit --shell "while [ ! -e '$TQ_TMP/go.f' ]; do sleep 0.02; done; $(big 0)")
wait_state "$fol" running 30
# --offset 0: every line, however far the task got before the follower's
# first read. Plain --follow starts with the last 200 lines (as log does);
# a follower that first reads after the task has begun writing (a slow
# start: under ASan it is often done) leaves out the lines before those.
"$TASKQ_BIN" log "$fol" --follow --offset 0 >"$TQ_TMP/f.out" 2>"$TQ_TMP/f.err" &
fpid=$!
tq_track "$fpid"
# The task writes once the follower is in its loop (its inotify watch on
# logs/ is made after the first read), so it reads while the log grows and
# is cut at the failed write, not only after the end.
wait_for "ls -l /proc/$fpid/fd 2>/dev/null | grep -q inotify" 30 ||
	fail "log --follow did not start following: $(cat "$TQ_TMP/f.err")"
touch "$TQ_TMP/go.f"
wait_for "! _tq_alive $fpid" 60 || fail "log --follow did not exit"
wait "$fpid" && frc=0 || frc=$?
assert_eq 1 "$frc" "log --follow exit status ($(cat "$TQ_TMP/f.err"))"
assert_contains "$(cat "$TQ_TMP/f.err")" "taskq: log: task $fol: output missing: attempt 1: its output could not all be stored"
assert_eq "$(tq log "$fol" --offset 0 2>/dev/null | wc -c)" "$(wc -c <"$TQ_TMP/f.out")" "bytes followed"

check "wait exits 1 (exit code 0, but its output is missing: no success)"
assert_exit 1 tq wait "$id"

check "poll notes it; poll --json has output_missing"
assert_exit 0 tq poll "$id" --as t --json
assert_eq true "$(pyjson 'd["output_missing"]' <"$TQ_OUT")" "output_missing"
assert_exit 0 tq poll "$id" --as t
assert_contains "$(err)" "output missing: attempt 1 could not store all of it"

check "a command that fails on its own keeps its exit code beside the lost output"
id3=$(tq submit --shell "$(big 3)")
wait_for "[ \"\$(state_of $id3)\" = failed ]" 60 || fail "task $id3 is $(state_of "$id3")"
assert_eq "output_lost|3" "$(task_field "$id3" outcome exit_code)"
assert_contains "$(task_field "$id3" reason)" "the command itself ended with exit 3"
assert_exit 3 tq wait "$id3"

check "a task with a small log is unaffected"
ok=$(tq submit -- echo small)
wait_state "$ok" succeeded
assert_exit 0 tq log "$ok"
assert_eq small "$(out)"
assert_eq "" "$(err)"
assert_exit 0 tq poll "$ok" --json
assert_eq false "$(pyjson 'd["output_missing"]' <"$TQ_OUT")" "output_missing of a whole log"
