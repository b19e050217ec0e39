/*
 * ops/change.c - the store's change, then the doorbell (change.h). The
 * ring comes after the commit, never before: a worker woken earlier would
 * find nothing and sleep until its timer.
 */
#include "ops/change.h"

#include "ipc/doorbell.h"

int tq_ops_retry(struct tq_queue *q, const char *home, int64_t id, struct tq_err *err)
{
	int rc = tq_queue_retry(q, id, err);

	if (rc == 0)
		tq_doorbell_ring(home);
	return rc;
}

int tq_ops_retry_failed(struct tq_queue *q, const char *home, const char *batch,
			int64_t *n, struct tq_err *err)
{
	int rc = tq_queue_retry_failed(q, batch, n, err);

	if (rc == 0 && *n > 0)
		tq_doorbell_ring(home);
	return rc;
}

int tq_ops_group_pause(struct tq_queue *q, const char *home, const char *name,
		       struct tq_err *err)
{
	(void)home; /* a pause makes nothing runnable */
	return tq_queue_group_pause(q, name, err);
}

int tq_ops_group_resume(struct tq_queue *q, const char *home, const char *name,
			struct tq_err *err)
{
	int rc = tq_queue_group_resume(q, name, err);

	if (rc == 0)
		tq_doorbell_ring(home);
	return rc;
}

int tq_ops_group_set_parallel(struct tq_queue *q, const char *home, const char *name,
			      int64_t parallel, struct tq_err *err)
{
	int rc = tq_queue_group_set_parallel(q, name, parallel, err);

	if (rc == 0)
		tq_doorbell_ring(home);
	return rc;
}
