/*
 * follow.c - waiting for a task to end while its output is printed as it
 * arrives: `taskq log ID --follow` and `taskq submit --wait` (and so `ask
 * --wait`). See cli.h, "Following a task".
 *
 * One loop: read the task's state, then the lines of its log after the last
 * one printed (state BEFORE log, as everywhere in cmd_log.c: the worker
 * closes the log before it records the end, so a final state read first
 * means the log read after it is complete), print them, and if the task has
 * not ended wait in poll(2) on the store's watch of its output (a line
 * arrived: tq_log_watch_open, an inotify watch of logs/ with SQLite),
 * a signalfd (INT, TERM, HUP: the user gave up waiting, not on the task),
 * and a timeout: the next look at the state, with a growing pause (a quick
 * task ends within milliseconds; the database tells no one when it
 * changes), or the caller's deadline.
 *
 * The signals are blocked while the loop runs (they are events here, read
 * from the signalfd) and unblocked by cli_follow_release: one that arrives
 * after the loop gave up takes its default action then. Not the event loop
 * of proc/loop.h, on purpose: that one reads every signal waiting, and here
 * only the first is taken (it ends the wait); a second one stays pending
 * and acts at the release, as if nothing had caught it. No child to reap.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/sys.h"
#include "queue/logstore.h"

#define FOLLOW_PAUSE_MIN_MS 2    /* first pause between looks at the state */
#define FOLLOW_PAUSE_MAX_MS 100  /* longest pause between looks at the state */
#define FOLLOW_SIGNAL_EVERY 256  /* lines printed between looks for a signal */

void cli_follow_init(struct cli_follow *f, struct tq_queue *q, int64_t id)
{
	memset(f, 0, sizeof(*f));
	f->q = q;
	f->id = id;
	f->stream = TQ_STREAM_ALL;
	f->next = 1;
	f->sig_fd = -1;
	sigemptyset(&f->old_mask);
}

void cli_follow_release(struct cli_follow *f)
{
	tq_log_watch_close(f->watch);
	f->watch = NULL;
	if (f->sig_fd >= 0) {
		tq_close(f->sig_fd);
		f->sig_fd = -1;
		sigprocmask(SIG_SETMASK, &f->old_mask, NULL);
	}
	tq_task_release(&f->task);
}

/* Watch the store for more of our output; without a watch (no inotify
 * watches left) the state checks alone pace the loop. */
static void watch_start(struct cli_follow *f)
{
	if (tq_log_watch_open(f->q, f->id, &f->watch, NULL) < 0)
		f->watch = NULL;
}

/* INT, TERM and HUP as events on a signalfd. Without one, they keep their
 * default action (the process ends, as before). */
void cli_follow_catch(struct cli_follow *f)
{
	sigset_t set;

	if (f->sig_fd >= 0)
		return;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &f->old_mask) < 0)
		return;
	if ((f->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		sigprocmask(SIG_SETMASK, &f->old_mask, NULL);
}

/* The signal waiting on the signalfd, or 0. */
static int signal_got(struct cli_follow *f)
{
	struct signalfd_siginfo si;

	if (f->sig_fd >= 0 && tq_read(f->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		return (int)si.ssi_signo;
	return 0;
}

/* Block until our log changes, a signal comes, or `until` (monotonic ms)
 * is reached. */
static void wait_event(struct cli_follow *f, int64_t until)
{
	struct pollfd p[2] = { { .fd = f->watch ? tq_log_watch_fd(f->watch) : -1,
				 .events = POLLIN },
			       { .fd = f->sig_fd, .events = POLLIN } };
	int64_t left;

	while ((left = until - tq_mono_ms()) > 0) {
		/* fd -1 is ignored by poll */
		if (poll(p, 2, left > INT_MAX ? INT_MAX : (int)left) < 0 && errno != EINTR)
			return;
		if (p[1].revents & POLLIN)
			return;
		if ((p[0].revents & POLLIN) && tq_log_watch_hit(f->watch))
			return;
	}
}

int cli_follow_lines_cb(const struct tq_log_line *l, void *arg)
{
	struct cli_follow *f = arg;

	if (cli_lines_put(f->lines, l) < 0)
		return 1;
	/* printed: a read cut off after it (the store went away) goes on
	 * from the next */
	if (l->n + 1 > f->next)
		f->next = l->n + 1;
	/* a backlog of a million lines must not hold a Ctrl-C until it is out */
	if (++f->since_look >= FOLLOW_SIGNAL_EVERY) {
		f->since_look = 0;
		if ((f->signal = signal_got(f)) != 0)
			return 1;
	}
	return 0;
}

/* The lines after the last one printed. A log deleted while its task ran
 * is started again in a new file, numbered from 1, whose first line says
 * what was lost: that file is printed from its first line (before, lines
 * the new file held up to our old place in the old one were skipped,
 * and the note with them). */
static int print_new(struct cli_follow *f, struct tq_err *err)
{
	struct tq_log_range r = { .stream = f->stream, .offset = f->next, .limit = -1 };
	int64_t total = 0;
	int rc;

	if (f->lines == NULL)
		return 0;
	while ((rc = tq_log_read_file(f->q, f->id, &r, cli_follow_lines_cb, f, &total,
				      &f->file, err)) == TQ_ESTALE)
		r.offset = f->next = 1;
	if (rc < 0)
		return rc;
	if (f->lines->rc < 0)
		return tq_err_set(err, f->lines->rc, "out of memory");
	if (total + 1 > f->next)
		f->next = total + 1; /* every line up to total was printed */
	fflush(f->lines->out);
	if (f->lines->err != f->lines->out)
		fflush(f->lines->err);
	return 0;
}

static int follow_loop(struct cli_follow *f, struct tq_err *err)
{
	int64_t deadline = f->wait_ms > 0 ? tq_mono_ms() + f->wait_ms : INT64_MAX;
	int64_t pause = FOLLOW_PAUSE_MIN_MS, until;
	int rc;

	if (f->watch == NULL && f->lines != NULL)
		watch_start(f);
	cli_follow_catch(f);
	for (;;) {
		tq_task_release(&f->task);
		/* the store away (a database server restarting): looked at
		 * again at the next pause, until it is back or the deadline */
		if ((rc = tq_queue_get(f->q, f->id, 0, &f->task, err)) < 0 &&
		    rc != TQ_EOFFLINE)
			return rc;
		if (rc == 0 && (rc = print_new(f, err)) < 0 && rc != TQ_EOFFLINE)
			return rc;
		if (f->lines != NULL && ferror(f->lines->out))
			return CLI_FOLLOW_ENDED; /* stdout is gone: main says why */
		if (f->signal != 0) /* it stopped the printing */
			return CLI_FOLLOW_SIGNAL;
		if (rc == 0 && tq_state_final(f->task.state))
			return CLI_FOLLOW_ENDED;
		if ((f->signal = signal_got(f)) != 0)
			return CLI_FOLLOW_SIGNAL;
		if (tq_mono_ms() >= deadline)
			return CLI_FOLLOW_TIMEOUT;
		until = tq_mono_ms() + pause;
		wait_event(f, until < deadline ? until : deadline);
		pause = pause * 2 < FOLLOW_PAUSE_MAX_MS ? pause * 2 : FOLLOW_PAUSE_MAX_MS;
	}
}

int cli_follow_run(struct cli_follow *f, struct tq_err *err)
{
	return f->how = follow_loop(f, err);
}

/* How an end that the task's own output and exit status do not explain
 * reads, or NULL for one they do (succeeded, failed, died by a signal). */
static const char *end_phrase(enum tq_outcome o)
{
	switch (o) {
	case TQ_OUT_SPAWN_FAILED: return "could not start";
	case TQ_OUT_TIMED_OUT: return "timed out";
	case TQ_OUT_KILLED: return "was killed";
	case TQ_OUT_OUTPUT_OVERFLOW: return "reached its output cap";
	case TQ_OUT_LOST: return "was lost";
	case TQ_OUT_CANCELED: return "was canceled";
	case TQ_OUT_STALLED: return "stalled";
	/* output_lost: cli_note_output_missing says it, with the attempt */
	default: return NULL;
	}
}

void cli_follow_say_end(const struct cli_ctx *c, const struct tq_task *t)
{
	const char *how = end_phrase(t->outcome);

	if (!tq_state_final(t->state) || how == NULL)
		return;
	fflush(stdout); /* after the task's output, on a shared terminal */
	if (t->reason != NULL && *t->reason != '\0')
		cli_note(c, "task %lld %s: %s", (long long)t->id, how, t->reason);
	else
		cli_note(c, "task %lld %s", (long long)t->id, how);
}
