#!/usr/bin/env bash
# A full disk while a task writes its log: the task runs to its end and is
# recorded output_lost (not failed for its own reasons, not succeeded) with
# a reason that says so ("log write ...: No space left on device (ENOSPC);
# N of its M bytes of output kept"), an earlier task's log stays intact,
# `echo small` into a disk already full is output_lost with exit code 0 and
# log and poll say its output is missing, and the database and later tasks
# are fine once there is room again. The logs directory is a 1 MB tmpfs mounted by the
# test, so it needs root (and a kernel that lets us mount): skipped,
# saying why, otherwise.
. "$(dirname "$0")/lib_disk.sh"
disk_needed log_disk
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

logs="$TASKQ_HOME/logs"

first=$(submit_id -- seq 1 2000) # creates the state directory and logs/
disk_mount 1m "$logs"

serve_start 1
wait_state "$first" succeeded
check "a task that writes 5 MB into 1 MB: output_lost, saying the disk is full"
big=$(submit_id -- sh -c 'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 5000000')
wait_state "$big" failed 60
reason=$(task_field "$big" reason)
assert_contains "$reason" "its output could not all be stored: log write "
assert_contains "$reason" "No space left on device (ENOSPC)"
assert_contains "$reason" "of its 5000000 bytes of output kept"
assert_eq output_lost "$(outcome_of "$big")"
assert_eq 0 "$(task_field "$big" exit_code)" "its own exit code"
check "what reached the disk is whole lines of its output"
tq log "$big" --offset 0 >"$TQ_TMP/big.out"
n=$(wc -l <"$TQ_TMP/big.out")
[ "$n" -gt 1000 ] || fail "only $n lines were kept"
assert_eq 0 "$(grep -cvx 0123456789abcdefghijklmnopqrstuvwxyz "$TQ_TMP/big.out")" "lines that are not whole"

check "echo small into a full disk: output_lost, exit code 0, 0 bytes kept; log and poll say so"
dd if=/dev/zero of="$logs/filler" bs=64k 2>/dev/null || true # fill what is left
small=$(submit_id -- echo small)
wait_state "$small" failed 60
assert_eq "output_lost|0" "$(task_field "$small" outcome exit_code)"
assert_contains "$(task_field "$small" reason)" \
	"(ENOSPC); 0 of its 6 bytes of output kept, the rest dropped; the command itself ended with exit 0"
assert_exit 0 tq log "$small"
assert_eq "" "$(out)"
assert_one_line_error
assert_contains "$(err)" "task $small: output missing: attempt 1: "
assert_exit 0 tq poll "$small" --json
assert_eq true "$(pyjson 'd["output_missing"]' <"$TQ_OUT")"
rm -f "$logs/filler"

check "the earlier task's log is intact"
seq 1 2000 | cmp - <(tq log "$first" --offset 0) || fail "the first log changed"

check "the database is untouched; with room again, tasks run and log"
assert_exit 0 tq list --json
assert_eq 3 "$(out | pyjson 'len(d)')"
assert_exit 0 tq remove "$big" "$small"
after=$(submit_id -- sh -c 'echo after; echo err >&2')
wait_state "$after" succeeded
assert_eq "$(printf 'after\nerr')" "$(tq log "$after" --offset 0 | sort)"

assert_exit 0 tq shutdown
umount "$logs" || fail "umount $logs"
