#!/usr/bin/env bash
# What a task costs its worker in system calls, counted by strace -f -c
# over `taskq drain --workers 1` (supervisor, worker and tasks): per task,
# the difference between a drain of 40 `true` and one of 10, over 30, so
# that what a drain costs once (start, stop) drops out. Issue 21's counts:
# a spawn reset all 64 signals in its child (glibc's posix_spawn: 62
# rt_sigaction a task), each of its file actions asked getrlimit (7
# prlimit64 a task), and the sweep after each task listed
# /proc/self/task (2 getdents64 a task). These bounds are far above what
# the fixed code makes and far below what each of those made. Later: the
# process record cut after each write (2 ftruncate a task), a cgroup made
# and removed for each task (a mkdirat and an unlinkat), the cwd's stat
# and access before each spawn, the sweep's
# look at a worker with no child left (getpid, getsid, getpgrp and 5 calls
# on /proc), the doorbell opened and closed at each ring, the signalfd read
# again to see it empty.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null; then
	echo "SKIP: no strace (apt-get install strace) to count system calls"
	exit 77
fi
if ! strace -f -c -o /dev/null true 2>/dev/null; then
	echo "SKIP: strace cannot trace here (ptrace refused)"
	exit 77
fi
export TASKQ_AUTOSTART=0

# drain_counts N: a fresh state directory with N `true` tasks drained by
# one worker under strace; prints "SYSCALL CALLS" lines.
drain_counts() {
	local n=$1 home="$TQ_TMP/home$1" i
	for ((i = 0; i < n; i++)); do
		TASKQ_HOME=$home tq submit true >/dev/null
	done
	# (LeakSanitizer cannot run under ptrace: off in an ASan build)
	TASKQ_HOME=$home ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -c -o "$TQ_TMP/strace$n" "$TASKQ_BIN" drain --workers 1 \
		>/dev/null 2>"$TQ_TMP/drain$n.err" || {
		cat "$TQ_TMP/drain$n.err" >&2
		fail "drain of $n under strace failed"
	}
	assert_eq "$n" "$(TASKQ_HOME=$home tq list --state succeeded --limit 1000 | tail -n +2 | wc -l)" \
		"tasks succeeded in the drain of $n"
	awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print $NF, $4 }' "$TQ_TMP/strace$n"
}

# per_task NAME: (calls in the drain of 40 - in the drain of 10) / 30,
# rounded down.
per_task() {
	local a b
	a=$(awk -v k="$1" '$1 == k { print $2 }' "$TQ_TMP/c10")
	b=$(awk -v k="$1" '$1 == k { print $2 }' "$TQ_TMP/c40")
	echo $(((${b:-0} - ${a:-0}) / 30))
}

check "10 and 40 tasks drained under strace"
drain_counts 10 >"$TQ_TMP/c10"
drain_counts 40 >"$TQ_TMP/c40"

check "a task's spawn resets only the signals its worker ignores or catches"
n=$(per_task rt_sigaction)
[ "$n" -le 8 ] || fail "$n rt_sigaction a task (a spawn resets every signal?)"

check "a task's spawn asks no limit of the kernel"
n=$(per_task prlimit64)
[ "$n" -le 1 ] || fail "$n prlimit64 a task (posix_spawn's file actions?)"

check "the sweep after a task reads its worker's children without listing /proc/self/task"
n=$(per_task getdents64)
[ "$n" -le 1 ] || fail "$n getdents64 a task (the sweep lists a directory?)"

check "the sweep after a task that left no child reads nothing (waitid says so)"
n=$(per_task getsid)
[ "$n" -eq 0 ] || fail "$n getsid a task (the sweep looked for children when none was left)"

check "a process record is written over, never cut"
n=$(per_task ftruncate)
[ "$n" -eq 0 ] || fail "$n ftruncate a task"

check "a task's cwd is looked at only when its program is not found"
n=$(per_task faccessat2)
[ "$n" -le 1 ] || fail "$n faccessat2 a task (the cwd's and the program's?)"

# (0 also where no cgroup is delegated: then a task has none)
check "a task starts in its worker's cgroup, kept between tasks: none made or removed a task"
n=$(per_task mkdirat)
m=$(per_task unlinkat)
[ "$n" -eq 0 ] && [ "$m" -eq 0 ] || fail "$n mkdirat and $m unlinkat a task"

# The calls themselves, in a drain of 5: a pipe's flags set without
# asking them first (F_GETFL on each of a task's two pipes), and a small
# /proc or cgroup file read once, not again to see its end (/proc/PID/stat
# after each spawn, cgroup.events twice after each task where a cgroup
# is delegated).
check "no F_GETFL on a task's pipes, no read that only finds a /proc or cgroup file's end"
home="$TQ_TMP/home5"
for i in 1 2 3 4 5; do TASKQ_HOME=$home tq submit true >/dev/null; done
TASKQ_HOME=$home ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -y -e trace=read,pread64,fcntl,openat -o "$TQ_TMP/calls5" "$TASKQ_BIN" drain --workers 1 \
	>/dev/null 2>"$TQ_TMP/drain5.err" || { cat "$TQ_TMP/drain5.err" >&2; fail "drain of 5 under strace failed"; }
n=$(grep -cE 'fcntl\([0-9]+<pipe:\[[0-9]+\]>, F_GETFL' "$TQ_TMP/calls5" || true)
[ "$n" -eq 0 ] || fail "$n F_GETFL on pipes in a drain of 5: $(grep -m1 F_GETFL "$TQ_TMP/calls5")"
n=$(grep -cE 'read(64)?\([0-9]+</(proc/[0-9]+/stat|[^>]*/cgroup\.events)>, "", ' "$TQ_TMP/calls5" || true)
[ "$n" -eq 0 ] || fail "$n reads that found only the end of a /proc or cgroup file: $(
	grep -m1 -E 'read(64)?\([0-9]+</(proc/[0-9]+/stat|[^>]*/cgroup\.events)>, "", ' "$TQ_TMP/calls5")"

# The worker rings the doorbell for the backlog after each claim (4 of the
# 5): through the FIFO it holds, not an open, a write and a close each.
check "no open of the doorbell per task, no read of the signalfd that finds it empty"
n=$(grep -cE 'openat\(.*/doorbell"' "$TQ_TMP/calls5" || true)
[ "$n" -le 2 ] || fail "$n opens of the doorbell in a drain of 5: $(grep -m1 'doorbell"' "$TQ_TMP/calls5")"
n=$(grep -cE 'read\([0-9]+<anon_inode:\[signalfd\]>, .*EAGAIN' "$TQ_TMP/calls5" || true)
[ "$n" -le 2 ] || fail "$n reads of the signalfd that found it empty in a drain of 5"
