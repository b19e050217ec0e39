/*
 * durable.c - benchmark baseline: the floor of a durable submit through a
 * server, on this machine.
 *
 *   durable -s SOCKET FILE   serve: for each connection, read a request,
 *                            write a commit's WAL frames to FILE over
 *                            bytes it already holds and fdatasync it, then
 *                            answer; until SIGTERM or SIGINT
 *   durable -c SOCKET        submit: connect, send a request the size of a
 *                            `taskq submit -- true` one, wait for the answer
 *
 * What a `taskq submit` through the supervisor cannot beat: a process
 * started (the client is linked like bench/floor, against taskq's
 * libraries), a round trip on a Unix socket, and the commit's I/O -- the
 * frames of a submit's commit (bench/run counts: 6.2 a submit; FRAMES here)
 * written as SQLite writes them (a 24-byte header, then the page) into a
 * file where they overwrite earlier ones, and one fdatasync -- with no
 * database, no parsing and nothing else. bench/run shows it beside the
 * submit figures (issue 21): a target below this floor cannot be met on
 * the machine at hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>

#define FRAMES 6          /* a submit's WAL frames */
#define PAGE 4096
#define FRAME_HDR 24
#define RING 256          /* frames in the file, overwritten in turn */
#define REQUEST 1900      /* bytes: a `taskq submit -- true` request */

static volatile sig_atomic_t stop;
static volatile int sink;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int addr_of(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlcpy(a->sun_path, path, sizeof(a->sun_path)) >= sizeof(a->sun_path)) {
		fprintf(stderr, "durable: socket path too long: %s\n", path);
		return -1;
	}
	return 0;
}

/* Read exactly n bytes (EINTR retried); 0 on success. */
static int read_all(int fd, char *buf, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Write exactly n bytes (EINTR retried), at off (pwrite) or, off < 0,
 * where the file or socket stands (write); 0 on success. */
static int put_all(int fd, const char *buf, size_t n, off_t off)
{
	while (n > 0) {
		ssize_t w = off < 0 ? write(fd, buf, n) : pwrite(fd, buf, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

static int serve(const char *sock, const char *file)
{
	static char page[PAGE], hdr[FRAME_HDR], req[REQUEST];
	struct sockaddr_un a;
	struct sigaction sa;
	long next = 0;
	int lfd, fd, rc = 0;

	if (addr_of(sock, &a) != 0)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: accept returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "durable: %s: %s\n", file, strerror(errno));
		return 1;
	}
	/* the file holds every frame before the first commit: a commit
	 * writes over bytes already there (as taskq's WAL, made room for) */
	memset(page, 'z', sizeof(page));
	for (long i = 0; i < RING; i++)
		if (put_all(fd, hdr, sizeof(hdr), i * (FRAME_HDR + PAGE)) != 0 ||
		    put_all(fd, page, sizeof(page), i * (FRAME_HDR + PAGE) + FRAME_HDR) != 0) {
			fprintf(stderr, "durable: %s: %s\n", file, strerror(errno));
			close(fd);
			return 1;
		}
	if (fdatasync(fd) != 0) {
		fprintf(stderr, "durable: fdatasync %s: %s\n", file, strerror(errno));
		close(fd);
		return 1;
	}
	unlink(sock);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 16) != 0) {
		fprintf(stderr, "durable: %s: %s\n", sock, strerror(errno));
		close(fd);
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	while (!stop) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "durable: accept: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		if (read_all(c, req, sizeof(req)) == 0) {
			for (int i = 0; i < FRAMES; i++, next = (next + 1) % RING) {
				off_t off = next * (FRAME_HDR + PAGE);

				hdr[0] = (char)i;
				page[0] = req[i];
				if (put_all(fd, hdr, sizeof(hdr), off) != 0 ||
				    put_all(fd, page, sizeof(page), off + FRAME_HDR) != 0)
					rc = 1;
			}
			while (fdatasync(fd) != 0 && errno == EINTR)
				;
			if (rc == 0 && put_all(c, "TQR4\6\0\0\0OK 1 0", 14, -1) != 0)
				rc = 0; /* a client gone is its own business */
		}
		close(c);
		if (rc != 0) {
			fprintf(stderr, "durable: write %s: %s\n", file, strerror(errno));
			break;
		}
	}
	close(lfd);
	close(fd);
	unlink(sock);
	unlink(file);
	return rc;
}

static int submit(const char *sock)
{
	static char req[REQUEST];
	struct sockaddr_un a;
	char ans[64];
	const char *e = NULL;
	int fd;

	/* keep the libraries taskq links (as bench/floor does) */
	sink = sqlite3_libversion_number() + cJSON_Version()[0] +
	       (int)strtonum("1", 0, 1, &e);
	if (addr_of(sock, &a) != 0)
		return 1;
	memset(req, 'r', sizeof(req));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    put_all(fd, req, sizeof(req), -1) != 0 || read_all(fd, ans, 14) != 0) {
		fprintf(stderr, "durable: %s: %s\n", sock, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "-s") == 0)
		return serve(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "-c") == 0)
		return submit(argv[2]);
	fprintf(stderr, "usage: durable -s SOCKET FILE | durable -c SOCKET\n");
	return 2;
}
