/*
 * status.c - the one mapping from how a task ended to an exit status, the
 * shell's way, for every command that exits "with the task's status"
 * (log --follow, submit --wait, and later wait). The table is documented in
 * `taskq help log` and the README; change all three together.
 *
 *     succeeded                       0
 *     failed (exit code N)            N (1 if the code is 0 or missing)
 *     failed (signaled by signal N)   128+N
 *     timed_out                       124 (as timeout(1))
 *     timed_out (stalled)             124: --stall-timeout is a timeout too
 *     killed (taskq kill)             128+N for the signal that ended it,
 *                                     else for the signal asked for, else 137
 *     failed (spawn_failed)           127 (as the shell: command not found)
 *     failed (output_overflow, lost)  1
 *     failed (output_lost)            as failed or signaled, by the process's
 *                                     own exit (1 for an exit code 0: its
 *                                     output is missing, so no success)
 *     canceled                        1
 */
#include "cli.h"

#include <signal.h>

int cli_task_status(const struct tq_task *t)
{
	if (!tq_state_final(t->state))
		return -1;
	switch (t->outcome) {
	case TQ_OUT_SUCCEEDED:
		return t->state == TQ_SUCCEEDED ? 0 : 1;
	case TQ_OUT_FAILED:
		return t->exit_code > 0 && t->exit_code < 256 ? t->exit_code : 1;
	case TQ_OUT_SIGNALED:
		return t->signal > 0 ? 128 + t->signal : 1;
	case TQ_OUT_TIMED_OUT:
	case TQ_OUT_STALLED:
		return 124;
	case TQ_OUT_KILLED:
		if (t->signal > 0)
			return 128 + t->signal;
		return 128 + (t->kill_signal > 0 ? t->kill_signal : SIGKILL);
	case TQ_OUT_SPAWN_FAILED:
		return 127;
	case TQ_OUT_OUTPUT_LOST:
		if (t->signal > 0)
			return 128 + t->signal;
		return t->exit_code > 0 && t->exit_code < 256 ? t->exit_code : 1;
	default: /* output_overflow, lost, canceled, none */
		break;
	}
	if (t->state == TQ_SUCCEEDED)
		return 0;
	if (t->state == TQ_TIMED_OUT)
		return 124;
	return 1;
}
