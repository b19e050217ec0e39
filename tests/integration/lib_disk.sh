# lib_disk.sh - a small file system for the tests of a full disk: a tmpfs
# the test mounts, so they need root and a kernel that lets them mount.
#
#   disk_needed NAME    before lib.sh: skips test NAME (exit 77, saying
#                       why) unless a tmpfs can be mounted here
#   disk_mount SIZE DIR after lib.sh: a tmpfs of SIZE (mount's size=, mode
#                       0700) on DIR, unmounted (lazily: a process being
#                       stopped may still hold a file open) on exit before
#                       lib.sh's cleanup removes the directory

disk_needed() {
	local probe
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP test_$1: needs root to mount a small tmpfs"
		exit 77
	fi
	probe=$(mktemp -d "${TMPDIR:-/tmp}/taskq-mnt-XXXXXX")
	if ! mount -t tmpfs -o size=64k tmpfs "$probe" 2>/dev/null; then
		rmdir "$probe"
		echo "SKIP test_$1: mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?)"
		exit 77
	fi
	umount "$probe"
	rmdir "$probe"
}

_DISK_MOUNTS=()
_disk_cleanup() {
	local rc=$? d
	set +e
	for d in "${_DISK_MOUNTS[@]}"; do
		mountpoint -q "$d" && umount -l "$d"
	done
	return "$rc" # for _tq_cleanup, which exits with it
}

disk_mount() {
	mount -t tmpfs -o "size=$1,mode=0700" tmpfs "$2" || fail "mount tmpfs on $2"
	((${#_DISK_MOUNTS[@]})) || trap '_disk_cleanup; _tq_cleanup' EXIT
	_DISK_MOUNTS+=("$2")
}
