/*
 * lock.c - the writers' queue: taskq's own write transactions wait for each
 * other on a kernel lock, which wakes the next one the moment the holder
 * lets go, instead of SQLite's busy handler, which polls (a 200 us sleep and
 * a try, over and over: with two workers meeting at the write lock, ~2
 * sleeps a task, each longer than the transaction it waited for).
 *
 * The lock is an open file description lock (F_OFD_SETLKW) on one byte of
 * the database file that SQLite never locks (past its pending, reserved and
 * shared bytes), taken before BEGIN IMMEDIATE and let go after COMMIT or
 * ROLLBACK (db.c). The kernel lets go of it when its holder dies, whatever
 * the death: a crashed writer never holds up the others.
 *
 * It is a queue, not the lock: SQLite's own locks still decide who writes
 * (a write outside a transaction, another program's, an older taskq take
 * SQLite's lock alone, and whoever meets them waits on the busy handler as
 * before). So nothing here can lose or corrupt anything: when the lock
 * cannot be had (a file system without OFD locks, the file replaced under
 * us: then it is another file's byte) the transaction goes on without it.
 *
 * The wait keeps the connection's busy timeout: a timer signal
 * (TQ_LOCK_SIGNAL, caught by a handler that does nothing, without
 * SA_RESTART) interrupts the blocked fcntl every LOCK_TICK_MS to look at the
 * clock, also when it came just before the fcntl. Only a wait sets the
 * timer, and the handler only for the wait: a signal caught for good would
 * be one more to reset in every child the process spawns. A free lock costs
 * two fcntl calls a transaction.
 *
 * Invariants: the lock's descriptor is opened at the first transaction and
 * closed only after the connection (tq_db_lock_close after sqlite3_close):
 * closing any descriptor of the database file drops every POSIX lock this
 * process holds on it, SQLite's included.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sys.h"

/* SQLite's lock bytes on Unix start at its PENDING_BYTE, 0x40000000, and end
 * with its 510 shared bytes; this is past them. */
#define LOCK_BYTE (0x40000000 + 1024)
#define LOCK_TICK_MS 50
#define TQ_LOCK_SIGNAL SIGRTMAX

static void on_tick(int sig)
{
	(void)sig;
}

static int set_tick(struct tq_sqlite *q, int64_t first_ms)
{
	struct itimerspec its = {
		.it_value = { first_ms / 1000, (first_ms % 1000) * 1000000 },
		.it_interval = { 0, LOCK_TICK_MS * 1000000L },
	};

	if (!q->lock_timer_made) {
		struct sigevent sev;

		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_SIGNAL;
		sev.sigev_signo = TQ_LOCK_SIGNAL;
		if (timer_create(CLOCK_MONOTONIC, &sev, &q->lock_timer) < 0)
			return -1;
		q->lock_timer_made = 1;
	}
	return timer_settime(q->lock_timer, 0, &its, NULL);
}

static void stop_tick(struct tq_sqlite *q)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };

	if (q->lock_timer_made)
		timer_settime(q->lock_timer, 0, &off, NULL);
}

/* Wait for the lock until the busy timeout: 0 (held), 1 (the wait could not
 * be timed: go on without the lock), or TQ_EBUSY (err filled). */
static int wait_lock(struct tq_sqlite *q, struct flock *fl, struct tq_err *err)
{
	int64_t start = tq_mono_ms(), deadline = start + q->busy_timeout, now;
	struct sigaction sa, old, ign;
	sigset_t tick, was;
	int rc = 1, saved;

	if (q->busy_timeout <= 0)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: the fcntl returns EINTR */
	if (sigaction(TQ_LOCK_SIGNAL, &sa, &old) < 0)
		return 1;
	if (set_tick(q, q->busy_timeout < LOCK_TICK_MS ? q->busy_timeout : LOCK_TICK_MS) < 0) {
		sigaction(TQ_LOCK_SIGNAL, &old, NULL);
		return 1;
	}
	sigemptyset(&tick);
	sigaddset(&tick, TQ_LOCK_SIGNAL);
	sigprocmask(SIG_UNBLOCK, &tick, &was);
	for (;;) {
		if (fcntl(q->lock_fd, F_OFD_SETLKW, fl) == 0) {
			rc = 0;
			break;
		}
		if (errno != EINTR) { /* EDEADLK and the like: go on without */
			rc = 1;
			break;
		}
		if ((now = tq_mono_ms()) >= deadline) {
			rc = TQ_EBUSY;
			break;
		}
	}
	saved = errno;
	stop_tick(q);
	/* a tick generated before the timer stopped is gone with SIG_IGN,
	 * not left to the old disposition (by default, the end of us) */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(TQ_LOCK_SIGNAL, &ign, NULL);
	sigaction(TQ_LOCK_SIGNAL, &old, NULL);
	sigprocmask(SIG_SETMASK, &was, NULL);
	errno = saved;
	q->busy_spent = tq_mono_ms() - start;
	if (rc == TQ_EBUSY) {
		q->busy_start = start;
		q->busy_gave_up = tq_mono_ms();
		return tq_err_set(err, TQ_EBUSY, "%s: database %s is locked (waited %lld ms)",
				  tq_stmt_sql(ST_BEGIN), q->path,
				  (long long)(q->busy_gave_up - start));
	}
	return rc;
}

int tq_db_lock(struct tq_sqlite *q, struct tq_err *err)
{
	struct flock fl;
	int rc;

	q->busy_spent = 0;
	if (q->locked || q->lock_broken)
		return 0;
	if (q->lock_fd < 0 &&
	    (q->lock_fd = tq_open(q->path, O_RDWR | O_NOFOLLOW, 0)) < 0)
		return 0; /* not there yet (create_db's temporary name): none */
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = LOCK_BYTE;
	fl.l_len = 1;
	if (fcntl(q->lock_fd, F_OFD_SETLK, &fl) == 0) {
		q->locked = 1;
		return 0;
	}
	if (errno != EAGAIN && errno != EACCES) {
		/* no OFD locks here: never again, and the descriptor stays
		 * open (see the top of this file) */
		q->lock_broken = 1;
		return 0;
	}
	if ((rc = wait_lock(q, &fl, err)) < 0)
		return rc;
	q->locked = rc == 0;
	return 0;
}

void tq_db_unlock(struct tq_sqlite *q)
{
	struct flock fl;
	int saved = errno;

	if (!q->locked)
		return;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_UNLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = LOCK_BYTE;
	fl.l_len = 1;
	fcntl(q->lock_fd, F_OFD_SETLK, &fl);
	q->locked = 0;
	errno = saved;
}

void tq_db_lock_close(struct tq_sqlite *q)
{
	q->locked = 0;
	if (q->lock_timer_made)
		timer_delete(q->lock_timer);
	q->lock_timer_made = 0;
	tq_close(q->lock_fd);
	q->lock_fd = -1;
}
