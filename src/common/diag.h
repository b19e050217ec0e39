/*
 * diag.h - what the long-running processes (supervisor, workers) share:
 * timestamped diagnostic lines on stderr (their log), the log file
 * HOME/serve.log rotated by size, and repeats of one line folded into a
 * count. (Their signalfd is proc/loop.h's.)
 *
 * The log file. A background supervisor's stderr (and stdout) is
 * HOME/serve.log, and its workers inherit it. Every process writing it
 * checks, before each line, that serve.log is still the file its fd 2
 * writes to (if not, another process rotated it: it opens the new one on
 * its fds 1 and 2), and rotates it when the line would take it past the
 * size bound: serve.log -> serve.log.1 -> ... -> serve.log.N, the oldest
 * dropped, and a new serve.log. Rotations exclude each other through a
 * flock on the state directory that nobody waits for. The supervisor also
 * checks every second (tq_diag_tick), and creates serve.log when it is
 * missing; a worker never creates it (it writes on into the file it has),
 * but to finish a rotation left half done (serve.log missing and its fd 2
 * serve.log.1: the rotating process was killed between the two). Whatever
 * else is at the path (a directory, a FIFO, a symlink) is never opened nor
 * followed; a process then writes on into its file, which it empties at
 * the bound once no directory holds it (nobody could read or rotate it).
 * So every line of either lands in the current serve.log (a line racing a
 * rotation lands in serve.log.1: moved, not lost), and no process ever
 * waits for another: each writes the file itself, with one write(2) a line
 * (O_APPEND: lines never interleave). A file stays within the bound but
 * for what other processes write while one of them rotates it (a few
 * microseconds; more only if the rotating process is descheduled in
 * between, which waiting for it would have made everyone's problem).
 * Without a supervisor its workers go on, logging and rotating, on their
 * own.
 *
 * Folding. With folding on (the supervisor), a line whose message repeats
 * one printed less than TQ_DIAG_FOLD_MS ago is counted instead of printed,
 * and when that window ends one line says "MSG (repeated N times in the
 * last S s)" with the last repeat's text. A loud source (a client looping
 * connect, garbage, close) thus costs a line every TQ_DIAG_FOLD_MS, not a
 * line a connection. Lines of the same message with other numbers in it are
 * different lines (task 12's and task 13's), except through
 * tq_diag_loose, for messages whose numbers are noise from outside (a
 * client's byte counts, pids).
 */
#ifndef TQ_DIAG_H
#define TQ_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define TQ_DIAG_LOG "serve.log"                   /* in the state directory */
#define TQ_DIAG_LOG_SIZE ((int64_t)10 << 20)      /* default rotation size */
#define TQ_DIAG_LOG_SIZE_MIN ((int64_t)64 << 10)  /* --log-size bounds */
#define TQ_DIAG_LOG_SIZE_MAX ((int64_t)1 << 40)
#define TQ_DIAG_LOG_FILES 3                       /* default serve.log.1..3 */
#define TQ_DIAG_LOG_FILES_MAX 9                   /* --log-files bound */
#define TQ_DIAG_FOLD_MS 10000                     /* a fold's window */
#define TQ_DIAG_FOLD_SLOTS 16                     /* distinct lines folded at once */

/* Print "YYYY-MM-DD HH:MM:SS WHO: MSG\n" to stderr, in one write(2);
 * folded when folding is on, and through the log's rotation. */
void tq_diag(const char *who, const char *fmt, va_list ap);

/* As tq_diag, but repeats fold with the digits of the message aside:
 * "timed out (3 of 8 bytes)" and "(5 of 8 bytes)" are one line. */
void tq_diag_loose(const char *who, const char *fmt, va_list ap);

/* Fold repeats from now on (the supervisor). */
void tq_diag_fold_on(void);

/*
 * Every second or so: print the count of each fold whose window ended
 * (all of them, even a window not yet ended, when all is set: before the
 * process stops), and rotate the log when it has passed its bound by
 * lines of other processes.
 */
void tq_diag_tick(int all);

/*
 * The supervisor: open (create, 0600) home/TQ_DIAG_LOG, append-only, on
 * fds 1 and 2, and own it from then on: rotate it at size bytes, keeping
 * files serve.log.1..files. Returns 0, or a tq_err code with err set
 * (nothing changed).
 */
int tq_diag_log_open(const char *home, int64_t size, int files, struct tq_err *err);

/* Change the owner's bounds (the setting read from the store after the
 * log was opened). size in [TQ_DIAG_LOG_SIZE_MIN, TQ_DIAG_LOG_SIZE_MAX],
 * files in [1, TQ_DIAG_LOG_FILES_MAX]; others are ignored. */
void tq_diag_log_limits(int64_t size, int files);

/* Whether this process writes the log (it opened or follows it), and
 * then its bounds, which the workers it starts get (taskq worker
 * --log-size, --log-files). */
int tq_diag_log_active(int64_t *size, int *files);

/*
 * A worker (or a foreground supervisor): if its stderr is home/TQ_DIAG_LOG
 * (or one of its rotated files: a rotation just before it started), follow
 * that path from now on, rotating it at size bytes and files files as the
 * supervisor does (size, files out of range: the defaults), never creating
 * it. Otherwise (a terminal, a foreground supervisor's own log file)
 * nothing changes. Returns 1 when following, else 0.
 */
int tq_diag_log_follow(const char *home, int64_t size, int files);

#endif
