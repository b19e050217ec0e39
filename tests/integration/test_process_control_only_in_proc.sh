#!/usr/bin/env bash
# test_process_control_only_in_proc.sh - src/proc is the one place taskq
# starts a process and waits for signals (issue 18):
#   - every fork and exec goes through spawn.c (tq_spawn_start,
#     tq_spawn_detach), with one PATH search, so what a child gets (session,
#     fds, signals, environment, cwd, umask) is decided in one file. This
#     fails on a call of fork, exec*, posix_spawn*, clone, system or popen
#     in any other file under src/, on a line that is not a comment;
#   - every signalfd is opened and read by the event loop (loop.c), which
#     reaps at SIGCHLD and keeps the deadlines. This fails on signalfd(),
#     sigwaitinfo(), sigtimedwait(), sigsuspend(), sigwait() or a struct
#     signalfd_siginfo read into a variable outside src/proc, but in the
#     files of SIGNAL_OWN below.
. "$(dirname "$0")/lib.sh"

cd "$TASKQ_SRCDIR" || exit 1

# Lines of C under src/ (not src/proc) that match the extended regex $1,
# comments left out: a line whose text starts with /*, * or //.
outside_proc() {
	grep -rnE --include='*.c' --include='*.h' -- "$1" src |
		grep -v '^src/proc/' |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)' || true
}

check "no fork or exec outside src/proc"
calls='\b(execve|execv|execvp|execvpe|execl|execlp|execle|fexecve|posix_spawnp?|fork|vfork|clone|clone3|system|popen)[[:space:]]*\('
found=$(outside_proc "$calls")
[ -z "$found" ] || fail "a process started outside src/proc (use proc/spawn.h):
$found"
found=$(outside_proc '#include[[:space:]]*<spawn\.h>')
[ -z "$found" ] || fail "<spawn.h> outside src/proc:
$found"

# Files that wait for a signal on their own, and why.
SIGNAL_OWN=(
	# log --follow / submit --wait: the first of INT, TERM, HUP ends the
	# wait and a second one must stay pending to act at the release; the
	# loop reads every signal waiting. No child.
	src/cli/follow.c
)

check "signals are waited for and read in src/proc only"
sigwaits='\b(signalfd|sigwaitinfo|sigtimedwait|sigsuspend|sigwait)[[:space:]]*\(|struct signalfd_siginfo [a-z_]+;'
found=$(outside_proc "$sigwaits")
for f in "${SIGNAL_OWN[@]}"; do
	grep -qE "$sigwaits" "$f" || fail "SIGNAL_OWN: $f waits for no signal any more: take it off the list"
	found=$(grep -v "^$f:" <<<"$found" || true)
done
[ -z "$found" ] || fail "a signal waited for outside src/proc (use proc/loop.h):
$found"

check "the check finds what it looks for"
# the pattern itself, on a line of the proc/ file it must find
grep -qE "$calls" src/proc/spawn.c || fail "the pattern finds nothing in src/proc/spawn.c"
grep -qE "$sigwaits" src/proc/loop.c || fail "the pattern finds nothing in src/proc/loop.c"
