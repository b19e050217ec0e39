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
 * Frames, both ways, in every version: an 8-byte header, then the payload.
 *
 *   bytes 0-2  "TQS" a request, "TQR" an answer
 *   byte  3    the version the frame is written in, as '0' + VERSION: '4'
 *              for this taskq ("TQS4", "TQR4"); '1' in the frames of
 *              versions 1 and 2 ("TQS1", "TQR1": version 2 says its version
 *              in the request's payload, see "Versions"). No frame says '2'.
 *   bytes 4-7  u32 LE payload length, at most TQ_WIRE_MAX
 *
 * e.g. 54 51 53 34 f4 00 00 00: "TQS4", 244 bytes of request follow;
 *      54 51 52 34 07 00 00 00 "OK 42 0": "TQR4", task 42 stored.
 *
 * Request payload: the spec's fields in a fixed order (wire.c), each
 *   string:  u32 LE n, then n bytes; n == 0 means NULL, else the last of
 *            the n bytes is a NUL and the string is the n-1 before it
 *            (which may contain no other NUL);
 *   blob:    u32 LE n, then n bytes (stdin data);
 *   i64:     8 bytes LE; int fields travel as i64 too;
 *   vector:  u32 LE count, then count strings (argv, env), count pairs of
 *            strings (labels) or count i64 (after).
 * Answer payload (text, the same in every version): "OK ID EXISTED"
 * (EXISTED 0 or 1), or "ERR CODE MESSAGE" (CODE a tq_err code, negative;
 * MESSAGE one line).
 *
 * Versions. Each version's request keeps the one before as its prefix and
 * appends the fields it adds. Version 1 ("TQS1") ends with the token.
 * Version 2 (still "TQS1") appends i64 2, its version, then umask,
 * stall_timeout_ms, cwd_explicit. Version 3 moves the version into the
 * header: a "TQS3" request is version 1's fields and the token, then
 * version 2's three fields, and no version field. A later version N sends
 * "TQS" '0'+N, version N-1's fields and then its own: version 4 ("TQS4")
 * appends warm and idle_timeout_ms (issue 19); a "TQS3" request reads them
 * as 0 (not warm).
 *
 * A supervisor reads every request up to its own version: "TQS1" as the
 * deployed version 1 and 2 clients send it (the fields a version 1 client
 * does not know take their defaults: umask -1, unknown; 0; 0), "TQS3" and
 * "TQS4" up to its own as they are; it answers in the request's frame version
 * ("TQR1" to "TQS1"), the one its client reads. A newer request (its
 * header names a version above ours) is refused from the header alone,
 * answered in our own version, which a newer client still reads: "ERR -1
 * wire: request version 5 is newer than this taskq's (4)". An older
 * supervisor refuses what it cannot read the same way, before it stores
 * anything (version 3 answers "TQS4" with "wire: request version 4 is
 * newer than this taskq's (3)"; versions 1 and 2 answer "TQS3" and later
 * with "wire: bad magic (not a TQS1 frame)"), and every decoding error starts "wire: ": the client
 * takes such an answer as TQ_WIRE_UNREAD and stores the task itself (after
 * a taskq upgrade, the supervisor still running is the old binary). An
 * answer the client cannot read (a newer frame version, a bad magic, a
 * malformed text) is TQ_WIRE_GARBLED: the supervisor may have stored the
 * task, so the client stores it itself with the same token, which makes
 * the two exactly-once.
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
/* The protocol version this taskq speaks: the frames it sends, the newest
 * it reads. */
#define TQ_WIRE_VERSION 4
/* The frame version of protocol versions 1 and 2 ("TQS1", "TQR1"), which
 * this taskq still reads and answers. */
#define TQ_WIRE_FRAME_V1 1
#define TQ_WIRE_MAX (16u << 20)      /* largest payload either way */
/* A spec whose encoding is larger goes straight to the database (a big
 * --stdin-file): the socket would only add a copy. */
#define TQ_WIRE_SPEC_MAX (4u << 20)

/* A frame's kind: its header's third byte. */
enum tq_wire_kind {
	TQ_WIRE_REQUEST = 'S',
	TQ_WIRE_ANSWER = 'R',
};

/*
 * Encode spec (its token included) into a new buffer holding the whole
 * request frame of version TQ_WIRE_VERSION (header, payload). Returns 0,
 * TQ_ENOMEM, or TQ_EINVAL when the payload would pass TQ_WIRE_MAX.
 */
int tq_wire_encode(const struct tq_task_spec *spec, uint8_t **frame, size_t *len,
		   struct tq_err *err);

/* A decoded request: spec points into the payload it was decoded from
 * (strings) and into the arrays below (owned). */
struct tq_wire_spec {
	struct tq_task_spec spec;
	int version;               /* the request's: 1 and 2 came in a "TQS1"
				    * frame (1: it said none), 3 on in the
				    * header */
	char **argv;
	char **env;
	struct tq_label *labels;
	int64_t *after;
};

/*
 * Decode a request payload (without the frame header) of len bytes into w,
 * as its frame's version says ("Versions"): TQ_WIRE_FRAME_V1 (the payload
 * says 1 or 2), or 3 to TQ_WIRE_VERSION. The payload must outlive w.
 * Strict: a frame version it does not read, every length within bounds,
 * every string NUL-terminated with no NUL inside, counts that fit the
 * remaining bytes, enums in range, nothing left over. Returns 0, or
 * TQ_EINVAL with a message naming the field, or TQ_ENOMEM; on failure w
 * holds nothing to free (tq_wire_free is still safe).
 */
int tq_wire_decode(const uint8_t *payload, size_t len, int version,
		   struct tq_wire_spec *w, struct tq_err *err);
void tq_wire_free(struct tq_wire_spec *w);

/*
 * A connection carries one frame each way: a reader may take bytes that
 * follow the frame along with it (TQ_WIRE_READ_AHEAD), and drops them.
 *
 * Read one frame of kind from fd (blocking or not: it polls) until
 * deadline_ms (tq_mono_ms clock). *payload is a new buffer of *len bytes,
 * *version the frame's. Returns 0; TQ_EINVAL for a bad header (as
 * tq_wire_frame_took) or a length over TQ_WIRE_MAX; TQ_EIO at the deadline
 * ("timed out"), on EOF or a read error. EINTR is retried.
 */
int tq_wire_read_frame(int fd, enum tq_wire_kind kind, int64_t deadline_ms,
		       uint8_t **payload, size_t *len, int *version, struct tq_err *err);

/*
 * A frame read a piece at a time, as its bytes arrive: what a server that
 * serves many connections from one poll loop keeps per connection (and what
 * tq_wire_read_frame uses inside). The payload buffer grows with the bytes
 * that arrived (to at most twice them, or TQ_WIRE_FRAME_CHUNK), so a client
 * that announces a large frame and sends it slowly (or not at all) holds
 * little memory.
 *
 *     struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
 *     tq_wire_frame_start(&f, TQ_WIRE_REQUEST, TQ_WIRE_SPEC_MAX);
 *     ... poll says readable: rc = tq_wire_frame_read(&f, fd, &err);
 *     rc 1: f.payload holds f.len bytes; 0: more to come; < 0: failed
 *     tq_wire_frame_release(&f);
 */
#define TQ_WIRE_HEADER 8             /* magic, version, length */
#define TQ_WIRE_FRAME_CHUNK (64u << 10)
/* What a read of a frame's header also asks for of what follows it (on the
 * stack), so that a whole request (a spec with its environment: about 2
 * KiB) or an answer takes one read(2); a larger frame's rest is read into
 * its payload buffer. */
#define TQ_WIRE_READ_AHEAD 4096u

struct tq_wire_frame {
	char kind;                   /* enum tq_wire_kind */
	uint32_t max;                /* the largest payload accepted */
	int version;                 /* the header's, once in; 0: not a
				      * taskq frame (or not in yet) */
	uint8_t head[TQ_WIRE_HEADER];
	size_t got;                  /* bytes taken, header included */
	uint32_t len;                /* payload length, once the header is in */
	uint8_t *payload;            /* owned; f.len bytes once complete */
	size_t cap;
};

#define TQ_WIRE_FRAME_INIT { .got = 0 }

/* Expect a frame of kind, of a version this taskq reads, with a payload of
 * at most max bytes (at most TQ_WIRE_MAX). f must be TQ_WIRE_FRAME_INIT or
 * released. */
void tq_wire_frame_start(struct tq_wire_frame *f, enum tq_wire_kind kind, uint32_t max);

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
 * header just completed is wrong: not "TQ" and the kind, then a version
 * ("wire: bad magic (not a TQS frame)"); a version above TQ_WIRE_VERSION
 * ("wire: request version 4 is newer than this taskq's (3)"; f->version
 * says which); or a length over max.
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

/*
 * The answers, "OK ID EXISTED" or "ERR CODE MESSAGE", in a frame of
 * version: the request's (tq_wire_frame.version), so that its client reads
 * it -- "TQR1" to a "TQS1" request. A version this taskq does not write (a
 * newer request's, or 0: not a taskq frame) is answered in TQ_WIRE_VERSION.
 */
int tq_wire_answer_ok(int fd, int version, int64_t id, int existed, int64_t deadline_ms);
int tq_wire_answer_err(int fd, int version, const struct tq_err *e, int64_t deadline_ms);

enum tq_wire_result {
	TQ_WIRE_STORED = 0,   /* *id (and *existed) set: the supervisor stored it */
	TQ_WIRE_NOT_SENT = 1, /* no supervisor listens (or the spec is too big):
			       * nothing was sent; store it directly */
	TQ_WIRE_LOST = 2,     /* sent, but no answer (the supervisor died or
			       * timed out): the task may or may not be
			       * stored; store it directly WITH THE SAME TOKEN */
	TQ_WIRE_UNREAD = 3,   /* the supervisor could not decode the request
			       * (ERR "wire: ...": another version of taskq, see
			       * "Versions"): nothing was stored; store it
			       * directly (err has its message) */
	TQ_WIRE_GARBLED = 4,  /* an answer came that this taskq cannot read (a
			       * newer frame version, a bad magic, a malformed
			       * text: another version of taskq, or not taskq):
			       * the task may or may not be stored; store it
			       * directly WITH THE SAME TOKEN (err says why) */
};

/*
 * Submit spec (spec->token must be set) through the supervisor of home:
 * connect to home/TQ_WIRE_SOCKET, send a request of TQ_WIRE_VERSION, wait
 * up to timeout_ms for the answer (read even when the send failed: a
 * supervisor that refuses the request from its header answers before it
 * has read the rest) in any version this taskq reads. Returns an enum tq_wire_result (err says why for NOT_SENT, LOST,
 * UNREAD and GARBLED), or a negative tq_err code when the supervisor
 * refused the task (err holds its message, as tq_queue_submit would have
 * failed: the same error the direct path gives).
 */
int tq_wire_submit(const char *home, const struct tq_task_spec *spec, int64_t timeout_ms,
		   int64_t *id, int *existed, struct tq_err *err);

#endif
