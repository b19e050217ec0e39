/*
 * onexit.c - `submit --on-exit CMD` (onexit.h). Placeholder: filled in by
 * the queue-controls work (issue 8).
 */
#include "onexit.h"

void tq_on_exit_run(struct worker *w, const struct tq_task *t, enum tq_state state,
		    int exit_code)
{
	(void)w;
	(void)t;
	(void)state;
	(void)exit_code;
}
