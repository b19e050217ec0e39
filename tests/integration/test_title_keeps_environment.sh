#!/usr/bin/env bash
# A supervisor and its workers retitle themselves (setproctitle: "taskq:
# supervisor: 2 workers") without writing over their environment: processes
# are found by the marks it holds (a worker's TASKQ_WORKER_PROC, proc/proc.h;
# a test run's TASKQ_TESTRUN_MARK, by which lib.sh's cleanup stops what a
# test left), so /proc/PID/environ must still read as it was given. With
# libbsd linked static (9730893) setproctitle_init was handed environ and
# laid the title over it: a supervisor's environment read back as its title
# and the cleanup of a failed test could not find an autostarted one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

mark="TQ_TITLE_MARK=kept-$$-$RANDOM"
export "${mark?}"

# has_mark PID: PID's environment, as the kernel shows it, holds the mark.
# (grep reads a process substitution: under pipefail, "tr | grep -q" fails
# when grep's early exit kills tr with SIGPIPE)
has_mark() { grep -qxF "$mark" < <({ tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null); }
title_of() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null; }

check "a foreground supervisor and its workers: retitled, environment intact"
serve_start 2
wait_for "title_of $SERVE_PID | grep -q '^taskq: supervisor: 2 workers'" 10 ||
	fail "the supervisor's title is [$(title_of "$SERVE_PID")]"
has_mark "$SERVE_PID" || fail "the supervisor's environment lost the mark: [$(title_of "$SERVE_PID")]"
for w in $(worker_pids); do
	wait_for "title_of $w | grep -q '^taskq: worker [0-9]*: idle'" 10 ||
		fail "worker $w's title is [$(title_of "$w")]"
	has_mark "$w" || fail "worker $w's environment lost the mark"
done
tq shutdown >/dev/null
wait_for "! _tq_alive $SERVE_PID" 20 || fail "the supervisor did not stop"

check "a supervisor started in the background (serve, as autostart does)"
tq serve --workers 1 >/dev/null 2>&1 || fail "serve failed"
sup=$("$TASKQ_BIN" status --json | json_get supervisor_pid)
[ -n "$sup" ] && _tq_alive "$sup" || fail "no supervisor running ($sup)"
wait_for "title_of $sup | grep -q '^taskq: supervisor: 1 worker'" 10 ||
	fail "the supervisor's title is [$(title_of "$sup")]"
has_mark "$sup" || fail "the background supervisor's environment lost the mark"
tq shutdown >/dev/null
wait_for "! _tq_alive $sup" 20 || fail "the supervisor did not stop"
