/*
 * fsync.c - benchmark baseline: the machine's fsync floor.
 *
 *   fsync FILE N [GAP_MS]
 *
 * Writes one 4 KiB page and fdatasyncs FILE, N times (the page overwritten
 * in a ring of 16, as a WAL's frames are), and prints the elapsed wall time
 * in seconds on stdout. With GAP_MS, it sleeps that long before each write
 * and prints the time of the writes and fdatasyncs alone: a commit that
 * comes after a pause, as a submit's does, is what a file system that
 * writes the file's new mtime with its data (ext4 without a journal,
 * without lazytime) makes dearer than one straight after the last. FILE is made (0600) if missing and removed at the
 * end. A durable submit pays at least one of these (synchronous=FULL: the
 * WAL's fsync at commit), so bench/run shows it beside the submit figures:
 * it tells a reader which machine they came from (issue 21), as the exec
 * floor (floor.c) and the spawn floor (spawn2.c) do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#define PAGE 4096
#define RING 16 /* pages overwritten in turn */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char page[PAGE];
	const char *e = NULL;
	long n, gap = 0;
	double t0, spent = 0;
	int fd;

	if (argc != 3 && argc != 4)
		goto usage;
	n = (long)strtonum(argv[2], 1, 10000000, &e);
	if (e)
		goto usage;
	if (argc == 4 && (gap = (long)strtonum(argv[3], 0, 1000, &e), e))
		goto usage;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		fprintf(stderr, "fsync: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(page, 'x', sizeof(page));
	/* the file's blocks allocated first, untimed: a WAL is reused too */
	for (int i = 0; i < RING; i++)
		if (pwrite(fd, page, PAGE, (off_t)i * PAGE) != PAGE)
			goto fail;
	if (fsync(fd) < 0)
		goto fail;
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		if (gap > 0) {
			struct timespec ts = { gap / 1000, (gap % 1000) * 1000000L };

			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
			t0 = now_s();
		}
		page[0] = (char)i;
		if (pwrite(fd, page, PAGE, (off_t)(i % RING) * PAGE) != PAGE || fdatasync(fd) < 0)
			goto fail;
		if (gap > 0)
			spent += now_s() - t0;
	}
	printf("%.6f\n", gap > 0 ? spent : now_s() - t0);
	close(fd);
	unlink(argv[1]);
	return 0;
fail:
	fprintf(stderr, "fsync: %s: %s\n", argv[1], strerror(errno));
	close(fd);
	unlink(argv[1]);
	return 1;
usage:
	fprintf(stderr, "usage: fsync FILE N [GAP_MS]\n");
	return 2;
}
