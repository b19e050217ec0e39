/*
 * stamp.c - benchmark helper: record when a task started.
 *
 *   stamp FILE
 *
 * Appends CLOCK_REALTIME in nanoseconds and a newline to FILE (O_APPEND, one
 * write). Run as a task by the submit-to-start latency benchmark; a C program
 * so that the figure is not a shell's startup.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char buf[64];
	int fd, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (argc != 2)
		return 2;
	n = snprintf(buf, sizeof buf, "%lld\n",
		     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n) {
		perror("stamp");
		return 1;
	}
	return close(fd) ? 1 : 0;
}
