/*
 * ops/wait.c - waiting on the store with an absolute monotonic deadline
 * (wait.h). Nothing here reads the store: the caller's look does.
 *
 * Invariant: no pause ends past the deadline, and the last look is taken
 * at or after it, so "not yet" at the deadline is what the store said then.
 */
#include "ops/wait.h"

#include "common/sys.h"

int tq_ops_pause(int64_t deadline_ms, int64_t ms)
{
	int64_t now = tq_mono_ms();

	if (deadline_ms != TQ_OPS_NO_DEADLINE && deadline_ms - now < ms)
		ms = deadline_ms - now;
	tq_sleep_ms(ms); /* an absolute monotonic sleep, resumed after signals */
	return deadline_ms != TQ_OPS_NO_DEADLINE && tq_mono_ms() >= deadline_ms;
}

/* The pause after prev (the first: after pace->first_ms), at waited ms. */
static int64_t next_pause(const struct tq_ops_pace *pace, int64_t prev, int64_t waited)
{
	int64_t cap = pace->slow_after_ms > 0 && waited >= pace->slow_after_ms
		      ? pace->slow_max_ms : pace->max_ms;

	if (pace->first_ms >= pace->max_ms && cap == pace->max_ms)
		return pace->max_ms; /* fixed */
	return prev * 2 > cap ? cap : prev * 2;
}

int tq_ops_wait(int64_t deadline_ms, const struct tq_ops_pace *pace, tq_ops_look_fn look,
		void *arg)
{
	int64_t start = tq_mono_ms(), pause = pace->first_ms;

	for (;;) {
		int r = look(arg);
		int64_t now;

		if (r != 0)
			return r;
		now = tq_mono_ms();
		if (deadline_ms != TQ_OPS_NO_DEADLINE && now >= deadline_ms)
			return 0;
		pause = next_pause(pace, pause, now - start);
		tq_ops_pause(deadline_ms, pause);
	}
}
