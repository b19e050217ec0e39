/*
 * stall.h - whether a running task still makes progress: the clock behind
 * --stall-timeout.
 *
 * An agent that waits for ever (Claude against an API that accepted the
 * request and never answers prints nothing; Codex against an unreachable
 * API prints "Reconnecting... waiting for network" again and again) is
 * stopped by this clock instead of by the task's --timeout, and retried.
 *
 * What counts as progress, on either stream (one clock for both):
 *   - a line that ends ('\n' or '\r': a progress bar redraws with '\r') and
 *     is not empty and is not one of the last TQ_STALL_RECENT lines that
 *     ended on the same stream. A line said again (Codex's reconnect line,
 *     a spinner's frames, a heartbeat) is output but not progress;
 *   - bytes of a line that has not ended yet (dots printed one a minute,
 *     binary output without a newline, a line longer than any buffer): the
 *     clock runs from the last such bytes, provisionally. A writer may
 *     split one line over several writes, and the pieces of a repeated
 *     line must not look new: when the line ends and is a repeat, what its
 *     pieces gave is taken back (the deadline is that of the last progress
 *     again). So output that keeps coming is never a stall, whatever its
 *     shape, and a repeated line is never progress, however it is written.
 *
 * Pure bookkeeping: no clock of its own (the caller passes monotonic ms),
 * no I/O, no allocation. The caller stops the task when tq_stall_due says
 * so, through its TERM -> grace -> KILL machinery.
 */
#ifndef TQ_STALL_H
#define TQ_STALL_H

#include <stddef.h>
#include <stdint.h>

#define TQ_STALL_RECENT 16          /* lines remembered per stream */
#define TQ_STALL_SHOWN 160          /* bytes of the last line kept for the reason */
#define TQ_STALL_NEVER INT64_MAX

struct tq_stall_stream {
	uint64_t recent[TQ_STALL_RECENT]; /* hashes of the lines that ended last */
	size_t nrecent, next;             /* how many are set; where the next goes */
	uint64_t hash;                    /* FNV-1a of the unended line so far */
	size_t len;                       /* its length */
	char cur[TQ_STALL_SHOWN];         /* its first bytes */
	int64_t grew_at;                  /* monotonic ms its last bytes came; 0:
					   * it has none (it ended, or is empty) */
};

struct tq_stall {
	int64_t timeout_ms;               /* 0: off */
	int64_t deadline;                 /* monotonic ms, or TQ_STALL_NEVER: the
					   * later of progress and the provisional
					   * clock of an unended line */
	int64_t progress_deadline;        /* the last progress's alone */
	int64_t bytes;                    /* output seen (0: none at all) */
	int tail_unended;                 /* the last output seen is an unended
					   * line (of stream tail_stream) */
	int tail_stream;
	int64_t lines;                    /* lines that ended (progress or not) */
	int64_t repeats;                  /* repeated lines since the last progress */
	struct tq_stall_stream s[2];      /* 0: stdout, 1: stderr */
	char last[TQ_STALL_SHOWN];        /* the last non-empty line that ended */
	size_t last_len;
};

/* Start the clock at monotonic time now; timeout_ms 0 leaves it off. */
void tq_stall_init(struct tq_stall *st, int64_t timeout_ms, int64_t now);

/* Output read from stream (0: stdout, 1: stderr) at monotonic time now. */
void tq_stall_feed(struct tq_stall *st, int stream, const char *buf, size_t n,
		   int64_t now);

/* The clock stood still for ms: its caller read none of the task's output
 * meanwhile (the store was away and held all it may: runner.c), so the
 * task could not be seen to progress. Every deadline moves ms later. */
void tq_stall_pause(struct tq_stall *st, int64_t ms);

/* 1 when the clock is on and now has reached its deadline. */
int tq_stall_due(const struct tq_stall *st, int64_t now);

/*
 * The reason for people, into buf (n >= 1; truncated): "no output for 5m",
 * "no new output for 5m (42 repeated lines); the last: Reconnecting...",
 * "no new output for 5m; the last line, unended: Downloading....".
 * Control bytes of the line are shown as '?'. Returns buf.
 */
char *tq_stall_describe(const struct tq_stall *st, char *buf, size_t n);

#endif
