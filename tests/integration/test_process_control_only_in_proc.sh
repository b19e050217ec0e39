#!/usr/bin/env bash
# test_process_control_only_in_proc.sh - src/proc is the one place taskq
# starts a process (issue 18): every fork and exec goes through spawn.c
# (tq_spawn_start, tq_spawn_detach), with one PATH search, so what a child
# gets (session, fds, signals, environment, cwd, umask) is decided in one
# file. This fails on a call of fork, exec*, posix_spawn*, clone, system or
# popen in any other file under src/, on a line that is not a comment.
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

check "the check finds what it looks for"
# the pattern itself, on a line of the proc/ file it must find
grep -qE "$calls" src/proc/spawn.c || fail "the pattern finds nothing in src/proc/spawn.c"
