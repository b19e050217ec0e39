/*
 * sys.h - the only place raw read/write/waitpid/open are called.
 *
 * Every wrapper retries EINTR and finishes short transfers, so the rest of the
 * code never loops on them. Every descriptor is created O_CLOEXEC. All are
 * async-signal-safe except tq_mkdir_p (it formats no strings but walks paths;
 * still safe after fork), tq_pid_start_time (snprintf) and the clock helpers
 * (safe).
 */
#ifndef TQ_SYS_H
#define TQ_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Read until n bytes or end of file. Returns the bytes read (< n only at EOF)
 * or -1 with errno set. EAGAIN on a non-blocking fd returns what was read so
 * far if any, else -1/EAGAIN.
 */
ssize_t tq_read_full(int fd, void *buf, size_t n);

/* One read(2), EINTR retried. Returns as read(2). */
ssize_t tq_read(int fd, void *buf, size_t n);

/* Write all n bytes. Returns 0 or -1 with errno set (e.g. EPIPE, ENOSPC). */
int tq_write_all(int fd, const void *buf, size_t n);

/* One write(2), EINTR retried. Returns as write(2). */
ssize_t tq_write(int fd, const void *buf, size_t n);

/* One pread(2), EINTR retried. Returns as pread(2). */
ssize_t tq_pread(int fd, void *buf, size_t n, off_t off);

/* pread(2) of up to n bytes at off, EINTR retried, short reads finished. */
ssize_t tq_pread_full(int fd, void *buf, size_t n, off_t off);

/* pwrite(2) of all n bytes at off, EINTR retried, short writes finished.
 * Returns 0 or -1 with errno set. */
int tq_pwrite_all(int fd, const void *buf, size_t n, off_t off);

/* waitpid(2) with EINTR retried. Returns as waitpid(2). */
pid_t tq_waitpid(pid_t pid, int *status, int flags);

/* open(2) with O_CLOEXEC added and EINTR retried. */
int tq_open(const char *path, int flags, mode_t mode);

/* openat(2) likewise. */
int tq_openat(int dirfd, const char *path, int flags, mode_t mode);

/* close(2) that keeps errno and ignores fd < 0. Never retried (Linux closes
 * the fd even when close returns EINTR). */
void tq_close(int fd);

/* Make sure fds 0, 1 and 2 are open (on /dev/null if not), so no database or
 * log can ever become fd 1. Call first thing in main. Returns 0 or -1. */
int tq_sanitize_stdfds(void);

/* mkdir -p with mode for every created component. 0 or -1 with errno. */
int tq_mkdir_p(const char *path, mode_t mode);

/*
 * The start time of a running process (field 22 of /proc/PID/stat: clock
 * ticks after boot), which with its pid names it for the life of the
 * system. For code below src/worker (whose proc.h has the full reader): the
 * store names its temporary files after their creator. 0; -1 with errno
 * ENOENT when no process has pid or it has ended (a zombie), another errno
 * when /proc could not be read or parsed (EPROTO).
 */
int tq_pid_start_time(pid_t pid, int64_t *ticks);

/* Milliseconds: wall clock (for stored times) and monotonic (for deadlines). */
int64_t tq_now_ms(void);
int64_t tq_mono_ms(void);

/* Sleep for ms milliseconds on the monotonic clock, resuming after signals.
 * For pacing in benchmarks and backoff loops only; never to wait for events. */
void tq_sleep_ms(int64_t ms);

#endif
