/*
 * fuzz_wire.c - libFuzzer harness for the submit socket's request decoder
 * (src/ipc/wire.h: tq_wire_decode), which reads whatever a local process
 * wrote to the supervisor's socket.
 *
 * Input: a request payload, without the 8-byte frame header, decoded as
 * the payload of a "TQS4" frame (this version's), of a "TQS3" one (version
 * 3's, without version 4's fields) and of a "TQS1" one (versions 1 and 2,
 * as deployed clients send them).
 * Checked beyond "no crash, no sanitizer report, no hang":
 *   - success: every string lies inside the payload and ends there with
 *     its NUL (read with strlen under ASan), argv and env are
 *     NULL-terminated after their counts, booleans are 0 or 1, stdin_mode
 *     and umask are in range; encoding the decoded spec gives a "TQS4"
 *     frame whose payload is the input byte for byte (the encoding is
 *     canonical) -- for an older request its version 4 form: a version 1
 *     request, which ends at the token, then the later fields' defaults; a
 *     version 2 one without its version field, then version 4's defaults;
 *     a version 3 one with version 4's defaults -- and decoding that again
 *     agrees with the first decoding field by field;
 *   - failure: TQ_EINVAL or TQ_ENOMEM with a one-line message starting
 *     "wire: ", and the struct left empty.
 * The same bytes also go through the piecewise frame reader the supervisor
 * serves its connections with (tq_wire_frame_space / _took), in chunks of
 * sizes taken from the input: framed as a request of each version (it must
 * complete with the input as its payload, having taken exactly the frame),
 * and raw, as a stream that may or may not start with a header, read as a
 * request and as an answer (its verdict must match a plain reading of the
 * header: incomplete, complete with the right bytes and version, or
 * TQ_EINVAL for a bad magic, a newer version or a length over the bound).
 * A failed check abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what)
{
	fprintf(stderr, "fuzz_wire: %s\n", what);
	abort();
}

/* s is NULL or a string inside [p, p + n), NUL included. */
static void check_str(const char *s, const uint8_t *p, size_t n)
{
	const uint8_t *u = (const uint8_t *)s;

	if (s == NULL)
		return;
	if (u < p || u >= p + n || strlen(s) >= (size_t)(p + n - u))
		die("a string outside the payload");
}

static void check_bool(int v)
{
	if (v != 0 && v != 1)
		die("a boolean other than 0 or 1");
}

static void check_spec(const struct tq_task_spec *s, const uint8_t *p, size_t n)
{
	if (s->argv == NULL || s->argv[s->argc] != NULL)
		die("argv not NULL-terminated after argc");
	if (s->env == NULL || s->env[s->envc] != NULL)
		die("env not NULL-terminated after envc");
	for (size_t i = 0; i < s->argc; i++) {
		if (s->argv[i] == NULL)
			die("a NULL argv element");
		check_str(s->argv[i], p, n);
	}
	for (size_t i = 0; i < s->envc; i++) {
		if (s->env[i] == NULL)
			die("a NULL env element");
		check_str(s->env[i], p, n);
	}
	if ((s->nlabels > 0) != (s->labels != NULL) || (s->nafter > 0) != (s->after != NULL))
		die("a count that does not match its array");
	for (size_t i = 0; i < s->nlabels; i++) {
		check_str(s->labels[i].key, p, n);
		check_str(s->labels[i].value, p, n);
	}
	check_str(s->name, p, n);
	check_str(s->cwd, p, n);
	check_str(s->batch, p, n);
	check_str(s->group, p, n);
	check_str(s->session, p, n);
	check_str(s->unique_key, p, n);
	check_str(s->on_exit, p, n);
	check_str(s->agent, p, n);
	check_str(s->model, p, n);
	check_str(s->prompt, p, n);
	check_str(s->sources_json, p, n);
	check_str(s->token, p, n);
	check_bool(s->shell);
	check_bool(s->retry_lost);
	check_bool(s->pty);
	check_bool(s->after_any);
	check_bool(s->isolate);
	check_bool(s->cwd_explicit);
	check_bool(s->warm);
	if (s->umask < -1 || s->umask > TQ_UMASK_MAX)
		die("a umask out of range");
	if (s->stdin_mode != TQ_STDIN_NULL && s->stdin_mode != TQ_STDIN_FILE &&
	    s->stdin_mode != TQ_STDIN_PIPE)
		die("a stdin_mode out of range");
	if ((s->stdin_len > 0) != (s->stdin_data != NULL))
		die("stdin_len does not match stdin_data");
	if (s->stdin_len > 0 && ((const uint8_t *)s->stdin_data < p ||
				 s->stdin_len > (size_t)(p + n - (const uint8_t *)s->stdin_data)))
		die("stdin_data outside the payload");
}

static int same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static void compare(const struct tq_task_spec *a, const struct tq_task_spec *b)
{
	if (!same_str(a->name, b->name) || !same_str(a->cwd, b->cwd) ||
	    !same_str(a->batch, b->batch) || !same_str(a->group, b->group) ||
	    !same_str(a->session, b->session) || !same_str(a->unique_key, b->unique_key) ||
	    !same_str(a->on_exit, b->on_exit) || !same_str(a->agent, b->agent) ||
	    !same_str(a->model, b->model) || !same_str(a->prompt, b->prompt) ||
	    !same_str(a->sources_json, b->sources_json) || !same_str(a->token, b->token))
		die("a string field differs after a round trip");
	if (a->argc != b->argc || a->envc != b->envc || a->nlabels != b->nlabels ||
	    a->nafter != b->nafter || a->stdin_len != b->stdin_len)
		die("a count differs after a round trip");
	for (size_t i = 0; i < a->argc; i++)
		if (!same_str(a->argv[i], b->argv[i]))
			die("argv differs after a round trip");
	for (size_t i = 0; i < a->envc; i++)
		if (!same_str(a->env[i], b->env[i]))
			die("env differs after a round trip");
	for (size_t i = 0; i < a->nlabels; i++)
		if (!same_str(a->labels[i].key, b->labels[i].key) ||
		    !same_str(a->labels[i].value, b->labels[i].value))
			die("labels differ after a round trip");
	for (size_t i = 0; i < a->nafter; i++)
		if (a->after[i] != b->after[i])
			die("after differs after a round trip");
	if (a->stdin_len > 0 && memcmp(a->stdin_data, b->stdin_data, a->stdin_len) != 0)
		die("stdin_data differs after a round trip");
	if (a->shell != b->shell || a->retry_lost != b->retry_lost || a->pty != b->pty ||
	    a->after_any != b->after_any || a->isolate != b->isolate ||
	    a->stdin_mode != b->stdin_mode || a->priority != b->priority ||
	    a->run_after != b->run_after || a->timeout_ms != b->timeout_ms ||
	    a->kill_grace_ms != b->kill_grace_ms || a->max_output != b->max_output ||
	    a->max_retries != b->max_retries || a->backoff_ms != b->backoff_ms ||
	    a->backoff_max_ms != b->backoff_max_ms || a->umask != b->umask ||
	    a->stall_timeout_ms != b->stall_timeout_ms || a->cwd_explicit != b->cwd_explicit ||
	    a->warm != b->warm || a->idle_timeout_ms != b->idle_timeout_ms)
		die("a number field differs after a round trip");
}

static void check_failure(int rc, const struct tq_err *err, const struct tq_wire_spec *w)
{
	static const struct tq_wire_spec empty;

	if (rc != TQ_EINVAL && rc != TQ_ENOMEM)
		die("an error other than TQ_EINVAL or TQ_ENOMEM");
	if (err->code != rc)
		die("err->code is not the code returned");
	if (strncmp(err->msg, "wire: ", 6) != 0 || err->msg[6] == '\0')
		die("an error message not starting with \"wire: \"");
	if (strchr(err->msg, '\n') != NULL)
		die("an error message of more than one line");
	if (memcmp(w, &empty, sizeof(*w)) != 0)
		die("something left in the struct after an error");
}

/* Feed n bytes of p to a new reader (bound max) in chunks whose sizes
 * come from p itself. Returns its verdict (1 complete, 0 wants more,
 * < 0 failed) and leaves the reader in f. */
static int feed(struct tq_wire_frame *f, enum tq_wire_kind kind, const uint8_t *p, size_t n,
		uint32_t max)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t off = 0, k = 0;
	int rc = 0;

	tq_wire_frame_start(f, kind, max);
	while (off < n && rc == 0) {
		size_t chunk = 1 + (size_t)(p[k++ % n] % 61), room;
		uint8_t *dst;

		if (tq_wire_frame_space(f, &dst, &room, &err) != 0)
			die("no space in an incomplete frame");
		if (room == 0)
			die("zero space in an incomplete frame");
		if (chunk > room)
			chunk = room;
		if (chunk > n - off)
			chunk = n - off;
		memcpy(dst, p + off, chunk);
		off += chunk;
		rc = tq_wire_frame_took(f, chunk, &err);
		if (f->got != off)
			die("the reader's count differs from the bytes fed");
	}
	if (rc < 0 && (rc != TQ_EINVAL || strncmp(err.msg, "wire: ", 6) != 0))
		die("a frame error other than a TQ_EINVAL \"wire: \" message");
	return rc;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The input framed as a request of version (magic "TQS" '0'+version):
 * read back whole, the payload the input, the version said, nothing over. */
static void check_framed(const uint8_t *data, size_t size, int version)
{
	struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
	uint8_t *framed;

	if ((framed = malloc(size + 8)) == NULL)
		return;
	memcpy(framed, "TQS", 3);
	framed[3] = (uint8_t)('0' + version);
	for (int i = 0; i < 4; i++)
		framed[4 + i] = (uint8_t)(size >> (8 * i));
	if (size > 0)
		memcpy(framed + 8, data, size);
	if (feed(&f, TQ_WIRE_REQUEST, framed, size + 8, TQ_WIRE_MAX) != 1 ||
	    f.got != size + 8 || f.len != size || f.version != version || f.payload == NULL ||
	    (size > 0 && memcmp(f.payload, data, size) != 0))
		die("a framed request did not read back whole");
	tq_wire_frame_release(&f);
	free(framed);
}

/* The input as a raw stream to a reader of kind: what its header says
 * (wire.h, "Frames"). */
static void check_raw(const uint8_t *data, size_t size, enum tq_wire_kind kind)
{
	struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
	uint32_t max = 4096, len;
	int rc = size > 0 ? feed(&f, kind, data, size, max) : 0, v = 0;

	if (size < 8) {
		if (rc != 0)
			die("a verdict before the header was whole");
	} else if (memcmp(data, "TQ", 2) != 0 || data[2] != (uint8_t)kind || data[3] < '1' ||
		   data[3] == '2') {
		if (rc != TQ_EINVAL || f.got != 8 || f.version != 0)
			die("a bad magic not refused when the header was whole");
	} else if ((v = data[3] - '0') > TQ_WIRE_VERSION) {
		if (rc != TQ_EINVAL || f.got != 8 || f.version != v)
			die("a newer version not refused when the header was whole");
	} else if ((len = le32(data + 4)) > max) {
		if (rc != TQ_EINVAL || f.got != 8)
			die("a length over the bound not refused when the header was whole");
	} else if (size >= 8 + (size_t)len) {
		if (rc != 1 || f.got != 8 + (size_t)len || f.len != len || f.version != v ||
		    (len > 0 && memcmp(f.payload, data + 8, len) != 0))
			die("a good frame not read back");
	} else if (rc != 0) {
		die("a verdict on a frame not yet whole");
	}
	tq_wire_frame_release(&f);
}

static void check_frames(const uint8_t *data, size_t size)
{
	check_framed(data, size, TQ_WIRE_FRAME_V1);
	check_framed(data, size, 3);
	check_framed(data, size, TQ_WIRE_VERSION);
	check_raw(data, size, TQ_WIRE_REQUEST);
	check_raw(data, size, TQ_WIRE_ANSWER);
}

/* The version 4 payload that an older request of version (1, 2 or 3) in
 * data comes back as: version 1 (it ends at the token) with the later
 * fields' defaults after it (umask -1, stall 0, cwd_explicit 0; warm 0,
 * idle_timeout_ms 0); version 2 without its version field, the 8 bytes
 * before its last three fields, then version 4's defaults; version 3 with
 * version 4's defaults after it. A new buffer of *n bytes, or NULL. */
static uint8_t *as_v4(const uint8_t *data, size_t size, int version, size_t *n)
{
	uint8_t *q = malloc(size + 40);

	if (q == NULL)
		return NULL;
	if (version == 1) {
		if (size > 0)
			memcpy(q, data, size);
		memset(q + size, 0, 40);
		memset(q + size, 0xff, 8);
		*n = size + 40;
	} else if (version == 2) {
		memcpy(q, data, size - 32);
		memcpy(q + size - 32, data + size - 24, 24);
		memset(q + size - 8, 0, 16);
		*n = size + 8;
	} else {
		memcpy(q, data, size);
		memset(q + size, 0, 16);
		*n = size + 16;
	}
	return q;
}

/* Decode data as the payload of a frame of version; on success, encode and
 * decode again and compare. */
static void check_decode(const uint8_t *data, size_t size, int version)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec a, b;
	uint8_t *frame = NULL, *want = NULL;
	size_t len = 0, wlen = size;
	int rc;

	memset(&a, 0x5a, sizeof(a));
	rc = tq_wire_decode(data, size, version, &a, &err);
	if (rc != 0) {
		check_failure(rc, &err, &a);
		tq_wire_free(&a);
		return;
	}
	check_spec(&a.spec, data, size);
	if (version == TQ_WIRE_FRAME_V1 ? a.version != 1 && a.version != 2 :
	    a.version != version)
		die("a request version its frame does not carry");
	if (a.version == 1 && (a.spec.umask != -1 || a.spec.stall_timeout_ms != 0 ||
			       a.spec.cwd_explicit != 0))
		die("a version 1 request without the later fields' defaults");
	if (a.version < 4 && (a.spec.warm != 0 || a.spec.idle_timeout_ms != 0))
		die("an older request without version 4's defaults");
	if (tq_wire_encode(&a.spec, &frame, &len, &err) != 0)
		die("a decoded spec does not encode");
	if (a.version < TQ_WIRE_VERSION &&
	    (want = as_v4(data, size, a.version, &wlen)) == NULL)
		goto out; /* out of memory: nothing to compare with */
	if (memcmp(frame, "TQS4", 4) != 0 || len != wlen + 8 ||
	    memcmp(frame + 8, want ? want : data, wlen) != 0)
		die("re-encoding does not give back the input");
	if (tq_wire_decode(frame + 8, len - 8, TQ_WIRE_VERSION, &b, &err) != 0)
		die("a re-encoded spec does not decode");
	check_spec(&b.spec, frame + 8, len - 8);
	compare(&a.spec, &b.spec);
	tq_wire_free(&b);
out:
	tq_wire_free(&a);
	free(want);
	free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_frames(data, size);
	check_decode(data, size, TQ_WIRE_VERSION);
	check_decode(data, size, 3);
	check_decode(data, size, TQ_WIRE_FRAME_V1);
	return 0;
}
