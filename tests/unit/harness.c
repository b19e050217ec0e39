/*
 * harness.c - temporary directories and deadline waits for unit tests.
 */
#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sys.h"

char *th_tempdir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	if (asprintf(&path, "%s/taskq-test-XXXXXX", tmp) < 0)
		return NULL;
	if (mkdtemp(path) == NULL) {
		free(path);
		return NULL;
	}
	return path;
}

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *f)
{
	(void)sb;
	(void)type;
	(void)f;
	return remove(p) < 0 ? 0 : 0;
}

void th_rmtree(char *path)
{
	if (path == NULL)
		return;
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(path);
}

int th_wait_for(int (*cond)(void *), void *arg, int64_t timeout_ms)
{
	int64_t deadline = tq_mono_ms() + timeout_ms;

	for (;;) {
		if (cond(arg))
			return 1;
		if (tq_mono_ms() > deadline)
			return 0;
		tq_sleep_ms(2);
	}
}
