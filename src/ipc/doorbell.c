/*
 * doorbell.c - the submit-to-worker wake-up FIFO (see doorbell.h).
 */
#include "doorbell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/sys.h"

#define DOORBELL_NAME "doorbell"

static int bell_path(const char *home, char *buf, size_t n)
{
	int r = snprintf(buf, n, "%s/" DOORBELL_NAME, home);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

int tq_doorbell_open(const char *home, struct tq_err *err)
{
	char path[PATH_MAX];
	struct stat sb;
	int fd;

	if (bell_path(home, path, sizeof(path)) < 0)
		return tq_err_set(err, TQ_EINVAL, "doorbell path is too long");
	if (mkfifo(path, 0600) < 0 && errno != EEXIST)
		return tq_err_sys(err, "mkfifo %s", path);
	fd = tq_open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0)
		return tq_err_sys(err, "open %s", path);
	if (fstat(fd, &sb) < 0 || !S_ISFIFO(sb.st_mode)) {
		tq_close(fd);
		return tq_err_set(err, TQ_EINVAL, "%s is not a FIFO", path);
	}
	return fd;
}

int tq_doorbell_drain(int fd)
{
	char buf[512];
	int total = 0;
	ssize_t r;

	while ((r = tq_read(fd, buf, sizeof(buf))) > 0)
		total += (int)r;
	return total;
}

int tq_doorbell_ring(const char *home)
{
	char path[PATH_MAX];
	int fd;

	if (bell_path(home, path, sizeof(path)) < 0)
		return -1;
	/* O_NONBLOCK write-open fails with ENXIO when nobody reads: no worker
	 * is idle-listening, which is fine. */
	fd = tq_open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;
	(void)tq_write(fd, "", 1);
	tq_close(fd);
	return 0;
}

void tq_doorbell_ring_fd(int fd)
{
	(void)tq_write(fd, "", 1);
}
