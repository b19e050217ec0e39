#!/usr/bin/env bash
# The supervisor makes room in the WAL file ahead of its submits' frames
# (issue 21: zeros written once its answers are sent, so that a commit
# writes over the file instead of making it longer). That room is a few
# MiB; on a disk without them it must give back what it took and leave the
# space to the submits themselves: on a 3 MiB state directory (a tmpfs the
# test mounts: root only, skipped otherwise) submits go through the
# supervisor until the disk, not the room, is full, each acknowledged one
# is stored, and the first that does not fit gets one line and exit 1. On a
# disk with room, the room is made (the WAL file grows to it once) and the
# submits do not grow the file further.
. "$(dirname "$0")/lib_disk.sh"
disk_needed submit_room_on_a_small_disk
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

mkdir -p "$TASKQ_HOME"
WAL=$TASKQ_HOME/taskq.db-wal
wal_size() { stat -c %s "$WAL"; }

check "a disk with room: the WAL file is made long enough once, then not grown"
disk_mount 32m "$TASKQ_HOME"
serve_start 1
assert_exit 0 tq pause true
assert_exit 0 tq submit -- true
# the room comes once the answer is sent: 1000 frames and more
wait_for "[ \$(wal_size) -ge $((1000 * 4120)) ]" 10 ||
	fail "no room made in the WAL: $(wal_size) bytes"
room=$(wal_size)
for i in $(seq 1 40); do
	assert_exit 0 tq submit -- true
done
assert_eq "$room" "$(wal_size)" "the WAL file's size after 40 more submits"
assert_eq 41 "$(state_count queued)" "tasks queued"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"
umount "$TASKQ_HOME" || fail "umount $TASKQ_HOME"

check "a 3 MiB disk: the room is given back, the submits fill the disk"
disk_mount 3m "$TASKQ_HOME"
serve_start 1
assert_exit 0 tq pause true
# ten submits: the supervisor tries to make its room after the first's
# answer (it has done so by the second's), fails, and gives the space back
for i in $(seq 1 10); do
	assert_exit 0 tq submit -- true
done
avail=$(df --output=avail -k "$TASKQ_HOME" | tail -1 | tr -d " ")
echo "    (${avail} KiB free after 10 submits; the WAL file $(wal_size) bytes)"
[ "$avail" -ge 1024 ] ||
	fail "the room the supervisor could not make was kept: ${avail} KiB free, the WAL $(wal_size) bytes"
n=10
while [ $n -lt 1000 ]; do
	run tq submit -- true
	[ "$TQ_RC" = 0 ] || break
	n=$((n + 1))
done
[ "$TQ_RC" != 0 ] || fail "1000 submits fit in 3 MiB?"
echo "    ($n submits stored before the disk was full; the WAL file $(wal_size) bytes)"
# each submit's commit is ~25 KiB of WAL (six frames): a room of 4 MiB or
# more that stayed would have failed the first ones
[ "$n" -ge 60 ] || fail "only $n submits before the disk was full"
assert_eq 1 "$TQ_RC" "the exit code of a submit on the full disk"
assert_one_line_error
assert_contains "$(err)" "disk is full" "the error"
assert_eq "$n" "$(state_count queued)" "every acknowledged submit stored"
