/*
 * diag.c - diagnostic lines and the signalfd of long-running processes.
 */
#include "diag.h"

#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <time.h>

#include "err.h"

void tq_diag(const char *who, const char *fmt, va_list ap)
{
	char msg[TQ_ERR_MAX + 256], when[32];
	time_t now = time(NULL);
	struct tm tm;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (localtime_r(&now, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "-");
	fprintf(stderr, "%s %s: %s\n", when, who, msg);
}

int tq_signalfd_open(const int *sigs, size_t n)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	for (size_t i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}
