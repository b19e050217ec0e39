/*
 * sys.c - EINTR-safe, short-I/O-safe wrappers around the raw system calls.
 * Nothing here allocates; everything is usable between fork and exec.
 */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

ssize_t tq_read(int fd, void *buf, size_t n)
{
	ssize_t r;

	do
		r = read(fd, buf, n);
	while (r < 0 && errno == EINTR);
	return r;
}

ssize_t tq_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = tq_read(fd, (char *)buf + got, n - got);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EAGAIN && got > 0)
				break;
			return -1;
		}
		got += (size_t)r;
	}
	return (ssize_t)got;
}

ssize_t tq_write(int fd, const void *buf, size_t n)
{
	ssize_t r;

	do
		r = write(fd, buf, n);
	while (r < 0 && errno == EINTR);
	return r;
}

int tq_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t r = tq_write(fd, p, n);
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int tq_pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pwrite(fd, (const char *)buf + done, n - done, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

ssize_t tq_pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r;

	do
		r = pread(fd, buf, n, off);
	while (r < 0 && errno == EINTR);
	return r;
}

ssize_t tq_pread_full(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

pid_t tq_waitpid(pid_t pid, int *status, int flags)
{
	pid_t r;

	do
		r = waitpid(pid, status, flags);
	while (r < 0 && errno == EINTR);
	return r;
}

int tq_open(const char *path, int flags, mode_t mode)
{
	int fd;

	do
		fd = open(path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	return fd;
}

int tq_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;

	do
		fd = openat(dirfd, path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	return fd;
}

void tq_close(int fd)
{
	int saved = errno;

	if (fd >= 0)
		close(fd);
	errno = saved;
}

int tq_sanitize_stdfds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* Not O_CLOEXEC: these are the standard streams children inherit. */
		int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n < 0)
			return -1;
		if (n != fd) {
			/* Lower fds are open, so open() returned fd itself; defensive. */
			if (dup2(n, fd) < 0)
				return -1;
			close(n);
		}
	}
	return 0;
}

int tq_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

/* Room for a whole /proc/PID/stat line (52 fields, comm at most 16). */
#define PID_STAT_MAX 1024
/* Fields after the state (field 3) up to the start time (field 22). */
#define PID_STAT_TO_START (22 - 3)

int tq_pid_start_time(pid_t pid, int64_t *ticks)
{
	char path[64], buf[PID_STAT_MAX], *p, *end;
	ssize_t n;
	int fd;

	if (pid <= 0) {
		errno = ENOENT;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return -1;
	n = tq_read_full(fd, buf, sizeof(buf) - 1);
	tq_close(fd);
	if (n < 0) {
		if (errno == ESRCH) /* gone between open and read */
			errno = ENOENT;
		return -1;
	}
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and ')': count from the last ')' */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0') {
		errno = EPROTO;
		return -1;
	}
	if (p[2] == 'Z' || p[2] == 'X') {
		errno = ENOENT;
		return -1;
	}
	p += 2;
	for (int i = 0; i < PID_STAT_TO_START && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL) {
		errno = EPROTO;
		return -1;
	}
	errno = 0;
	*ticks = strtoll(p + 1, &end, 10);
	if (errno != 0 || end == p + 1 || (*end != ' ' && *end != '\n' && *end != '\0')) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tq_now_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int64_t tq_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

void tq_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
