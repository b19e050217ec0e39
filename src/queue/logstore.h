/*
 * logstore.h - a task's output: one append-only log per task, with a sparse
 * line index, written by the worker as output arrives and read by anyone
 * (log, poll, follow, wait) without a supervisor, even after every writer is
 * gone.
 *
 * Records, the same on every backend: the SQLite backend keeps them in a
 * file per task (logs/ID.log, and the index below), the PostgreSQL backend
 * in rows of the database (queue/pg/log.c: chunks of whole records, each
 * knowing its first line number, so that any node reads any task's output).
 *
 * Format (the SQLite backend's logs/ID.log): a sequence of records, one per
 * line of output:
 *     TAG BYTES... '\n'
 * TAG 'o' or 'e': a line of stdout or stderr that ended with a newline;
 * 'O' or 'E': a piece of a line with no newline after it in the output (the
 * last bytes before the stream ended, a line longer than TQ_LOG_LINE_MAX cut
 * into pieces, or a partial line flushed after TQ_LOG_PARTIAL_MS so a crash
 * cannot lose it). BYTES never contain '\n' and are otherwise exact (NUL,
 * invalid UTF-8, '\r' kept). The output is recovered exactly by
 * concatenating each record's BYTES plus '\n' for lowercase tags. A record
 * never spans two write(2)s (the records of one tq_log_write go out together,
 * up to 256 KiB per write), so a line of one stream is never split by bytes
 * of the other.
 *
 * Lines are numbered from 1 in the order records were written; --stream
 * numbering counts only that stream's records. The index (logs/ID.idx) has
 * one 64-byte entry per TQ_LOG_INDEX_EVERY records: the byte offset of record
 * k*EVERY+1 and the stdout lines and the stdout and stderr output bytes
 * before it, with a check word (layout in logstore.c). So finding line N of
 * any numbering, the totals and the output size cost the same on a 1 KB and
 * a 10 GB log. A missing, short or damaged index (a crash) is rebuilt in
 * memory by readers and on disk by the next writer; nothing is lost.
 *
 * Only bytes up to the log's last '\n' are read: after it is a record being
 * written, or one torn by a crash (the next tq_log_open keeps its bytes as a
 * piece). A line that is not a valid record (a byte other than o/e/O/E at
 * its start, or longer than a record can be) is skipped by every reader and
 * not numbered: damage costs that line, never the log.
 */
#ifndef TQ_LOGSTORE_H
#define TQ_LOGSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

#define TQ_LOG_LINE_MAX (64 * 1024)     /* longest record before a cut */
#define TQ_LOG_PARTIAL_MS 1000          /* flush a waiting partial line */
#define TQ_LOG_INDEX_EVERY 4096         /* records between index entries */

enum tq_stream {
	TQ_STREAM_ALL = 0, /* readers: both streams */
	TQ_STREAM_STDOUT = 1,
	TQ_STREAM_STDERR = 2,
};

/* ------------------------------------------------------------------ */
/* Writing (the worker)                                               */

struct tq_log; /* opaque writer */

/*
 * Open task id's log for appending (created 0600 if missing; a retried
 * task's attempts append to the same log). max_output caps the bytes of
 * output this writer accepts (0: unlimited); counting starts at the log's
 * current output size, so a cap covers every attempt. Finding the end, the
 * line counts and the output size reads the index and at most EVERY records
 * (a whole scan only if the index is gone, which then rebuilds it). A torn
 * last record is kept as a piece. One writer per log (flock on the log,
 * released by close or by the process dying): TQ_EBUSY "log logs/42.log is
 * being written by another process" if another holds it. On success *lp
 * owns the writer; on failure *lp is NULL. TQ_ENOSPC, TQ_EPERM, TQ_EIO,
 * TQ_ENOMEM with err naming the file: "open logs/42.log: Permission denied".
 * Allocates: not for use between fork and exec.
 */
int tq_log_open(struct tq_queue *q, int64_t id, int64_t max_output,
		struct tq_log **lp, struct tq_err *err);

/*
 * Take n bytes of output from stream (STDOUT or STDERR) at monotonic time
 * now_ms. Complete lines are written before it returns (unless held back:
 * tq_log_hold); a partial line is
 * buffered (at most TQ_LOG_LINE_MAX per stream; a longer line is cut into
 * pieces of TQ_LOG_LINE_MAX). Returns 0; TQ_ECAP with err "output cap of 50M
 * reached" when the cap is passed (the log then holds output up to exactly
 * the cap, the last bytes as pieces, both streams' partial lines included,
 * and later writes are refused with the same code: the caller kills the task
 * as output_overflow); TQ_ENOSPC with err "log write logs/42.log: No space
 * left on device" (or ": File too large" for RLIMIT_FSIZE) when the write
 * fails: the whole records that reached the file stay, the rest of this
 * call's output is lost, the file is cut back to its last whole record, and
 * the writer stays usable. TQ_EIO if even that cut failed (later calls are
 * refused). TQ_EINVAL for a bad stream.
 */
int tq_log_write(struct tq_log *l, enum tq_stream stream, const void *buf, size_t n,
		 int64_t now_ms, struct tq_err *err);

/*
 * Let tq_log_write keep up to bytes of complete records in memory, for at
 * most ms after the first of them was taken, instead of writing each call's
 * records before it returns (bytes 0, the default: write them at once; at
 * most the 256 KiB a write(2) takes). A task that floods its output is then
 * stored in a few large writes rather than one per read of its pipes.
 * Records still go out in the order they were taken. tq_log_tick writes
 * them when their time is up and counts it in *next_ms, so a caller that
 * ticks as it is told has every record in the file ms after it was read; a
 * held record is lost if the process dies first, as the bytes in the task's
 * pipe would be.
 */
void tq_log_hold(struct tq_log *l, size_t bytes, int64_t ms);

/* Bytes of records held back, waiting for tq_log_flush. */
size_t tq_log_held(const struct tq_log *l);

/*
 * A store that is away (TQ_EOFFLINE: a database server restarting, the
 * connection it ended): the writer keeps the records it could not store, in
 * order, in memory, and takes output as before (tq_log_write, flush, tick
 * and end_stream return 0 for them); tq_log_tick tries again when its
 * *next_ms says, and once the store is back they are stored, each once, in
 * their order, before anything newer. The bytes of records so kept (0: none;
 * a store that is never away, SQLite, keeps none). A caller that may read
 * more output stops at TQ_LOG_AWAY_MAX (the task then waits on its full
 * pipe, losing nothing) and closes the log only once none are kept:
 * tq_log_close drops what is kept, saying how much (TQ_EOFFLINE).
 */
size_t tq_log_away(const struct tq_log *l);
#define TQ_LOG_AWAY_MAX (8 * 1024 * 1024)

/* Write the held records now. Returns 0 or an error as tq_log_write. */
int tq_log_flush(struct tq_log *l, struct tq_err *err);

/* Write partial lines that have waited TQ_LOG_PARTIAL_MS since their first
 * byte arrived (call on a timer) as pieces, and records held back for their
 * time (tq_log_hold); the ms from now_ms until the next one is due go to
 * *next_ms (-1: none waiting). Errors as tq_log_write. */
int tq_log_tick(struct tq_log *l, int64_t now_ms, int64_t *next_ms, struct tq_err *err);

/* A stream ended: write its partial line, if any, as a piece. */
int tq_log_end_stream(struct tq_log *l, enum tq_stream stream, struct tq_err *err);

/* Where the next record will go: byte offset and 1-based line number (for
 * the attempts table's log_offset and log_line). */
void tq_log_position(const struct tq_log *l, int64_t *offset, int64_t *line);

/* Bytes of output in the file so far, every attempt included; not counting
 * tags, newlines added by taskq, or partial lines still buffered. */
int64_t tq_log_output_bytes(const struct tq_log *l);

/* 1 if task id's log is there, or the task has started and never had one;
 * 0 if not (a task that never ran; one whose log was made and is gone,
 * deleted after the task ended); a negative error code if that cannot be
 * told. A log is made by the task's first output: a task that has printed
 * nothing has none (SQLite: logs/ID.log is missing, and no attempt that
 * ended stored output, attempts.output_bytes). */
int tq_log_exists(struct tq_queue *q, int64_t id);

/* How many times the log was started again at its path because its file had
 * been deleted under the writer (the new log's first line says so). */
int tq_log_relinked(const struct tq_log *l);

/* Write partials of both streams as pieces, close and free (always, even
 * on error). No fsync: the log needs none to survive a crash of any process
 * (see above), and capture must not wait for the disk. NULL is a no-op.
 * Returns 0 or the first write error. */
int tq_log_close(struct tq_log *l, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Reading (anyone)                                                   */

struct tq_log_line {
	int64_t n;                  /* 1-based number in the requested numbering */
	enum tq_stream stream;      /* STDOUT or STDERR */
	int newline;                /* 1: the line ended with '\n' in the output */
	const char *text;           /* the bytes, not NUL-terminated inside */
	size_t len;
};

/* Called for each line read; return nonzero to stop early. The line's
 * memory is valid only during the call. */
typedef int (*tq_log_line_cb)(const struct tq_log_line *line, void *arg);

struct tq_log_range {
	enum tq_stream stream;      /* ALL, STDOUT or STDERR */
	int64_t offset;             /* first line to return, 1-based; 0: see tail */
	int64_t limit;              /* at most this many; -1: to the end */
	int64_t tail;               /* with offset 0: the last `tail` lines (0:
				     * none, just *total); limit is ignored */
};

/*
 * Read lines of task id's log in range r, calling cb for each in order.
 * *total (may be NULL) receives the number of lines in that numbering at
 * the time of reading. An offset past the end returns no lines. A log that
 * does not exist yet is empty (total 0), not an error. Safe while a writer
 * appends (reads only whole records) and needs no write access: a missing
 * or short index is extended in memory. The cost does not depend on the
 * log's size (about EVERY records of scanning plus the lines returned).
 * Returns 0 (also when cb stopped early), TQ_EINVAL for a bad range, or an
 * I/O error naming the file ("read logs/42.log: Input/output error").
 */
int tq_log_read(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
		tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err);

/* Which file a reader read at a log's path (zeros: none yet; dev 0 with an
 * inode: the inode alone, as a poll cursor keeps it). PostgreSQL: dev 0 and
 * ino the log's generation (a new one each time the log is made again). */
struct tq_log_file {
	uint64_t dev, ino;
};

/*
 * As tq_log_read, for a reader that follows one log across reads (log
 * --follow): *file names the file it has been reading (zeros: none yet)
 * and receives the one at the path now. A log deleted while its task ran
 * is started again in a new file (see tq_log_write), numbered from 1, its
 * first line saying the lines before it were lost: when *file was set and
 * names another file than the one at the path, nothing is read and
 * TQ_ESTALE is returned (err untouched), so the reader starts again from
 * line 1 of the new file instead of at its old place in it. A log that
 * does not exist leaves *file as it was.
 */
int tq_log_read_file(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
		     tq_log_line_cb cb, void *arg, int64_t *total, struct tq_log_file *file,
		     struct tq_err *err);

/* Number of lines and bytes of output in the log, both for stream (ALL:
 * both streams). A missing log has 0 and 0. Either pointer may be NULL. */
int tq_log_stat(struct tq_queue *q, int64_t id, enum tq_stream stream,
		int64_t *lines, int64_t *output_bytes, struct tq_err *err);

/* Remove task id's log and its index (missing files are fine). */
int tq_log_remove(struct tq_queue *q, int64_t id, struct tq_err *err);

/*
 * A file another program can read task id's output from, in the format
 * above: an --on-exit hook's TASKQ_LOG. Its path goes to buf (n bytes).
 * The SQLite backend gives the log itself (logs/ID.log beside the
 * database; it may not exist yet, as for a task that never started) and
 * makes nothing. A backend that keeps the output itself (PostgreSQL) writes
 * it to a file of its own in this format (under $TMPDIR, 0600) and removes
 * that file at the next tq_log_export or at tq_queue_close. Returns 0, or
 * TQ_EINVAL when buf is too small, or an error writing the file.
 */
int tq_log_export(struct tq_queue *q, int64_t id, char *buf, size_t n, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Waiting for more output (log --follow, submit --wait)              */

struct tq_log_watch; /* opaque */

/*
 * Watch task id's output for growth. A reader that has read all there is
 * polls tq_log_watch_fd for POLLIN beside its own descriptors (a signalfd:
 * that is why this is a descriptor and not a blocking wait) and its own
 * deadline; when it is readable, tq_log_watch_hit takes what is waiting
 * and returns 1 when it may concern this task's output (read it again with
 * tq_log_read_file), 0 when not. A hint that may come early or spuriously,
 * never a promise: the reader still looks at the task's state on its own
 * pace. The SQLite backend: an inotify watch of logs/ for ID.log (created,
 * written, closed). A backend that keeps the output itself uses its own
 * notification (PostgreSQL: LISTEN on a channel the writer NOTIFYs with the
 * task id; the connection's socket is the descriptor).
 *
 * tq_log_watch_fd is -1 while the watch has no descriptor: a PostgreSQL
 * watch whose connection was lost (the server restarted) is made again,
 * with its LISTEN, by a later call, at most once per backoff (100 ms
 * doubling to 2 s); its first hit after that is 1, as lines may have come
 * meanwhile. Poll at the reader's own pace meanwhile.
 *
 * 0 with *wp set, or an error with *wp NULL (no inotify instance or watch
 * left: TQ_ENOSPC; the reader then paces itself by its timeout alone). The
 * descriptor is O_CLOEXEC and non-blocking, owned by the watch.
 */
int tq_log_watch_open(struct tq_queue *q, int64_t id, struct tq_log_watch **wp,
		      struct tq_err *err);
int tq_log_watch_fd(struct tq_log_watch *w);
int tq_log_watch_hit(struct tq_log_watch *w);
/* Close the watch and free it; NULL is a no-op. */
void tq_log_watch_close(struct tq_log_watch *w);

#endif
