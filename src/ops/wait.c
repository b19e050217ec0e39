/*
 * ops/wait.c - waiting on the store with an absolute monotonic deadline
 * (wait.h): the primitive, whose caller's look reads the store, and the
 * looks of a wait for tasks or a batch to end.
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

int tq_ops_tasks_ended(struct tq_queue *q, struct tq_ops_tasks *w, struct tq_err *err)
{
	for (size_t i = 0; i < w->n; i++) {
		struct tq_task t;
		int r;
		if (w->gone[i] || tq_state_final(w->tasks[i].state))
			continue;
		r = tq_queue_get(q, w->ids[i], 0, &t, err);
		if (r == TQ_ENOTFOUND) {
			w->gone[i] = 1;
			continue;
		}
		if (r < 0)
			return r;
		tq_task_release(&w->tasks[i]);
		w->tasks[i] = t;
		if (!tq_state_final(t.state))
			return 0;
	}
	return 1;
}

int tq_ops_batch_ended(struct tq_queue *q, const char *batch, struct tq_batch *b,
		       struct tq_err *err)
{
	struct tq_batch nb;
	int64_t open = 0;
	int r;

	if ((r = tq_queue_batch_open(q, batch, &open, err)) < 0)
		return r;
	if (open > 0)
		return 0;
	r = tq_queue_batch_get(q, batch, &nb, err);
	if (r == TQ_ENOTFOUND) {
		/* every task of it was removed while we waited */
		tq_batch_release(b);
		return 1;
	}
	if (r < 0)
		return r;
	tq_batch_release(b);
	*b = nb;
	return tq_batch_done(&nb);
}

struct ended_look {
	struct tq_queue *q;
	struct tq_ops_tasks *w;
	const char *batch;
	struct tq_batch *b;
	struct tq_err *err;
};

static int look_ended(void *arg)
{
	struct ended_look *l = arg;
	int r = l->batch ? tq_ops_batch_ended(l->q, l->batch, l->b, l->err)
			 : tq_ops_tasks_ended(l->q, l->w, l->err);

	/* the store away (a database server restarting): not ended yet;
	 * the next look, after a pause, finds it back */
	return r == TQ_EOFFLINE ? 0 : r;
}

int tq_ops_wait_ended(struct tq_queue *q, struct tq_ops_tasks *w, const char *batch,
		      struct tq_batch *b, int64_t deadline_ms, struct tq_err *err)
{
	static const struct tq_ops_pace pace = {
		TQ_OPS_ENDED_POLL_MIN_MS, TQ_OPS_ENDED_POLL_MAX_MS,
		TQ_OPS_ENDED_SLOW_AFTER_MS, TQ_OPS_ENDED_POLL_SLOW_MS,
	};
	struct ended_look l = { q, w, batch, b, err };

	return tq_ops_wait(deadline_ms, &pace, look_ended, &l);
}
