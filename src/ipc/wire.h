/*
 * wire.h - submitting through the supervisor: the submit socket's protocol.
 *
 * A `taskq submit` process that finds a supervisor listening on
 * HOME/submit.sock sends it the task spec instead of opening the database
 * itself; the supervisor stores it on a connection it keeps open (no open,
 * no schema read, no WAL recovery per submit) and answers with the id. The
 * commit is as durable as a direct one (synchronous=FULL) and is on disk
 * before the answer is sent. When no supervisor listens, or anything goes
 * wrong before an answer arrives, the client stores the task itself
 * (tq_queue_submit), with the same token: the token makes the two paths
 * exactly-once together (queue.h, tq_task_spec.token).
 *
 * Frames, both ways: 4 bytes of magic ("TQS1" request, "TQR1" answer), a
 * 32-bit little-endian payload length (at most TQ_WIRE_MAX), the payload.
 *
 * Request payload: the spec's fields in a fixed order (wire.c), each
 *   string:  u32 LE n, then n bytes; n == 0 means NULL, else the last of
 *            the n bytes is a NUL and the string is the n-1 before it
 *            (which may contain no other NUL);
 *   blob:    u32 LE n, then n bytes (stdin data);
 *   i64:     8 bytes LE; int fields travel as i64 too;
 *   vector:  u32 LE count, then count strings (argv, env), count pairs of
 *            strings (labels) or count i64 (after).
 * Answer payload (text): "OK ID EXISTED" (EXISTED 0 or 1), or
 * "ERR CODE MESSAGE" (CODE a tq_err code, negative; MESSAGE one line).
 *
 * Versions. Version 1's request ends with the token. Every later version
 * keeps it as a prefix and appends i64 VERSION, then the fields each
 * version up to VERSION added, in order (version 2: umask, stall_timeout_ms,
 * cwd_explicit). So a supervisor decodes any request of its version or
 * older, the fields an older client does not know taking their defaults
 * (umask -1: unknown; 0; 0). An older supervisor cannot read a newer
 * request (version 1: "N bytes left over after the last field (token)"; 2
 * and on: "request version N is newer"), and answers ERR with a message
 * that, like every decoding error, starts "wire: " -- before it stores
 * anything. The client takes such an answer as TQ_WIRE_UNREAD and stores
 * the task itself (after a taskq upgrade, the supervisor still running is
 * the old binary).
 *
 * The server reads a request with a deadline, so a stuck client cannot
 * hold the supervisor; it checks that the peer is its own user
 * (SO_PEERCRED) before reading.
 */
#ifndef TQ_WIRE_H
#define TQ_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "queue/queue.h"

#define TQ_WIRE_SOCKET "submit.sock" /* in the state directory */
#define TQ_WIRE_VERSION 2            /* the request version this taskq sends */
#define TQ_WIRE_MAX (16u << 20)      /* largest payload either way */
/* A spec whose encoding is larger goes straight to the database (a big
 * --stdin-file): the socket would only add a copy. */
#define TQ_WIRE_SPEC_MAX (4u << 20)

/*
 * Encode spec (its token included) into a new buffer holding the whole
 * request frame (magic, length, payload). Returns 0, TQ_ENOMEM, or TQ_EINVAL
 * when the payload would pass TQ_WIRE_MAX.
 */
int tq_wire_encode(const struct tq_task_spec *spec, uint8_t **frame, size_t *len,
		   struct tq_err *err);

/* A decoded request: spec points into the payload it was decoded from
 * (strings) and into the arrays below (owned). */
struct tq_wire_spec {
	struct tq_task_spec spec;
	int version;               /* the request's (1: it sent none) */
	char **argv;
	char **env;
	struct tq_label *labels;
	int64_t *after;
};

/*
 * Decode a request payload (without the frame header) of len bytes into w.
 * The payload must outlive w. Strict: every length within bounds, every
 * string NUL-terminated with no NUL inside, counts that fit the remaining
 * bytes, enums in range, nothing left over. Returns 0, or TQ_EINVAL with a
 * message naming the field, or TQ_ENOMEM; on failure w holds nothing to
 * free (tq_wire_free is still safe).
 */
int tq_wire_decode(const uint8_t *payload, size_t len, struct tq_wire_spec *w,
		   struct tq_err *err);
void tq_wire_free(struct tq_wire_spec *w);

/*
 * Read one frame with magic from fd (blocking or not: it polls) until
 * deadline_ms (tq_mono_ms clock). *payload is a new buffer of *len bytes.
 * Returns 0; TQ_EINVAL for a bad magic or a length over TQ_WIRE_MAX;
 * TQ_EIO at the deadline ("timed out"), on EOF or a read error. EINTR
 * is retried.
 */
int tq_wire_read_frame(int fd, const char magic[4], int64_t deadline_ms,
		       uint8_t **payload, size_t *len, struct tq_err *err);

/*
 * A frame read a piece at a time, as its bytes arrive: what a server that
 * serves many connections from one poll loop keeps per connection (and what
 * tq_wire_read_frame uses inside). The payload buffer grows with the bytes
 * that arrived (to at most twice them, or TQ_WIRE_FRAME_CHUNK), so a client
 * that announces a large frame and sends it slowly (or not at all) holds
 * little memory.
 *
 *     struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
 *     tq_wire_frame_start(&f, "TQS1", TQ_WIRE_SPEC_MAX);
 *     ... poll says readable: rc = tq_wire_frame_read(&f, fd, &err);
 *     rc 1: f.payload holds f.len bytes; 0: more to come; < 0: failed
 *     tq_wire_frame_release(&f);
 */
#define TQ_WIRE_HEADER 8             /* magic and length */
#define TQ_WIRE_FRAME_CHUNK (64u << 10)

struct tq_wire_frame {
	char magic[4];
	uint32_t max;                /* the largest payload accepted */
	uint8_t head[TQ_WIRE_HEADER];
	size_t got;                  /* bytes taken, header included */
	uint32_t len;                /* payload length, once the header is in */
	uint8_t *payload;            /* owned; f.len bytes once complete */
	size_t cap;
};

#define TQ_WIRE_FRAME_INIT { .got = 0 }

/* Expect a frame with magic (4 bytes) and a payload of at most max bytes
 * (at most TQ_WIRE_MAX). f must be TQ_WIRE_FRAME_INIT or released. */
void tq_wire_frame_start(struct tq_wire_frame *f, const char magic[4], uint32_t max);

/*
 * Where the frame's next bytes go: *p and *n (> 0, never past the frame's
 * end, so a reader never takes bytes of whatever follows it). Grows the
 * payload buffer as needed. Returns 0, TQ_ENOMEM, or TQ_EINVAL when the
 * frame is already complete.
 */
int tq_wire_frame_space(struct tq_wire_frame *f, uint8_t **p, size_t *n,
			struct tq_err *err);

/*
 * Account for n bytes written where tq_wire_frame_space said. Returns 1
 * when the frame is complete, 0 when more is wanted, TQ_EINVAL when the
 * header just completed is wrong: a bad magic, or a length over max.
 */
int tq_wire_frame_took(struct tq_wire_frame *f, size_t n, struct tq_err *err);

/*
 * Read from fd (non-blocking) until the frame is complete or the fd has
 * nothing more for now. Returns 1 complete, 0 more to come (EAGAIN), or
 * TQ_EINVAL (bad header), TQ_ENOMEM, TQ_EIO (EOF, with how many bytes had
 * arrived, or a read error). EINTR is retried.
 */
int tq_wire_frame_read(struct tq_wire_frame *f, int fd, struct tq_err *err);

/* Set err to "wire: timed out reading the frame header (3 of 8 bytes)"
 * (or payload) for a frame whose deadline passed; returns TQ_EIO. */
int tq_wire_frame_timeout(const struct tq_wire_frame *f, struct tq_err *err);

/* Free the payload (unless taken: set f->payload NULL first) and reset. */
void tq_wire_frame_release(struct tq_wire_frame *f);

/* Write all of buf to fd by the deadline (polls when fd is non-blocking;
 * MSG_NOSIGNAL: a closed peer is TQ_EIO, never SIGPIPE). */
int tq_wire_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms,
		      struct tq_err *err);

/* The answer frames ("TQR1"): "OK ID EXISTED" or "ERR CODE MESSAGE". */
int tq_wire_answer_ok(int fd, int64_t id, int existed, int64_t deadline_ms);
int tq_wire_answer_err(int fd, const struct tq_err *e, int64_t deadline_ms);

enum tq_wire_result {
	TQ_WIRE_STORED = 0,   /* *id (and *existed) set: the supervisor stored it */
	TQ_WIRE_NOT_SENT = 1, /* no supervisor listens (or the spec is too big):
			       * nothing was sent; store it directly */
	TQ_WIRE_LOST = 2,     /* sent, but no answer (the supervisor died, timed
			       * out, answered garbage): the task may or may not
			       * be stored; store it directly WITH THE SAME TOKEN */
	TQ_WIRE_UNREAD = 3,   /* the supervisor could not decode the request
			       * (ERR "wire: ...": another version of taskq, see
			       * "Versions"): nothing was stored; store it
			       * directly (err has its message) */
};

/*
 * Submit spec (spec->token must be set) through the supervisor of home:
 * connect to home/TQ_WIRE_SOCKET, send, wait up to timeout_ms for the
 * answer. Returns an enum tq_wire_result (err says why for NOT_SENT, LOST
 * and UNREAD), or a negative tq_err code when the supervisor
 * refused the task (err holds its message, as tq_queue_submit would have
 * failed: the same error the direct path gives).
 */
int tq_wire_submit(const char *home, const struct tq_task_spec *spec, int64_t timeout_ms,
		   int64_t *id, int *existed, struct tq_err *err);

#endif
