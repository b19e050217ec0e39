#!/usr/bin/env bash
# A full disk while a task writes its log: the task fails with a reason
# that says so ("log write ...: No space left on device"), an earlier
# task's log stays intact, and the database and later tasks are fine once
# there is room again. The logs directory is a 1 MB tmpfs mounted by the
# test, so it needs root (and a kernel that lets us mount): skipped,
# saying why, otherwise.
skip() {
	echo "SKIP test_log_disk: $*"
	exit 77 # meson's "skipped"
}
[ "$(id -u)" = 0 ] || skip "needs root to mount a small tmpfs"
probe=$(mktemp -d "${TMPDIR:-/tmp}/taskq-mnt-XXXXXX")
if ! mount -t tmpfs -o size=64k tmpfs "$probe" 2>/dev/null; then
	rmdir "$probe"
	skip "mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?)"
fi
umount "$probe"
rmdir "$probe"

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# Unmount before lib.sh's cleanup removes the directory; lazily, since a
# process we are about to stop may still hold a log open.
logs="$TASKQ_HOME/logs"
_disk_cleanup() {
	local rc=$?
	set +e
	mountpoint -q "$logs" && umount -l "$logs"
	return "$rc" # for _tq_cleanup, which exits with it
}
trap '_disk_cleanup; _tq_cleanup' EXIT

first=$(submit_id -- seq 1 2000) # creates the state directory and logs/
mount -t tmpfs -o size=1m,mode=0700 tmpfs "$logs" || fail "mount tmpfs on $logs"

serve_start 1
wait_state "$first" succeeded
check "a task that writes 5 MB into 1 MB fails, saying the disk is full"
big=$(submit_id -- sh -c 'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 5000000')
wait_state "$big" failed 60
reason=$(tq_sql "select reason from tasks where id = $big")
assert_contains "$reason" "No space left on device"
assert_contains "$reason" "log"
assert_eq failed "$(outcome_of "$big")"
check "what reached the disk is whole lines of its output"
tq log "$big" --offset 0 >"$TQ_TMP/big.out"
n=$(wc -l <"$TQ_TMP/big.out")
[ "$n" -gt 1000 ] || fail "only $n lines were kept"
assert_eq 0 "$(grep -cvx 0123456789abcdefghijklmnopqrstuvwxyz "$TQ_TMP/big.out")" "lines that are not whole"

check "the earlier task's log is intact"
seq 1 2000 | cmp - <(tq log "$first" --offset 0) || fail "the first log changed"

check "the database is untouched; with room again, tasks run and log"
assert_exit 0 tq list --json
assert_eq 2 "$(out | pyjson 'len(d)')"
assert_exit 0 tq remove "$big"
after=$(submit_id -- sh -c 'echo after; echo err >&2')
wait_state "$after" succeeded
assert_eq "$(printf 'after\nerr')" "$(tq log "$after" --offset 0 | sort)"

assert_exit 0 tq shutdown
umount "$logs" || fail "umount $logs"
