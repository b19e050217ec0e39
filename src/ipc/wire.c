/*
 * wire.c - the submit socket's protocol (wire.h): a task spec encoded and
 * decoded, frames read and written by a deadline, and the client side.
 *
 * The request is the spec's fields in one fixed order: put_spec and
 * get_spec below, kept side by side so that they stay in step. The
 * encoding is canonical (booleans 0 or 1, NULL only as length 0, no
 * padding), so decoding a request of this version then encoding it gives
 * back the same bytes. Every frame's header says its version (wire.h,
 * "Frames"): the decoder reads a "TQS1" frame as the version 1 and 2
 * clients wrote it, and the answer goes back in the request's version.
 *
 * The decoder trusts nothing it reads: every length is checked against the
 * bytes left before it is used, every count against the least room its
 * elements need before anything is allocated, enums and booleans are
 * range-checked, and nothing may be left over. Decoded strings point into
 * the payload; only the arrays are allocated. It does not check the spec
 * as a task (an empty command, a relative cwd): tq_queue_submit does that
 * on both paths, so a refused spec gets the same error either way.
 *
 * Readers and writers never block past their deadline: reads poll first,
 * sends are MSG_DONTWAIT | MSG_NOSIGNAL and poll on EAGAIN.
 */
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/sys.h"

#define HEADER_LEN TQ_WIRE_HEADER
/* The request version that says its version in a "TQS1" frame's payload,
 * after the token: the last one to. */
#define PAYLOAD_VERSION 2
/* The first version whose frame header says it. */
#define HEADER_VERSION 3
/* The longest answer: "ERR -NN " and a message of at most TQ_ERR_MAX. */
#define ANSWER_MAX (TQ_ERR_MAX + 32)
/* The lowest tq_err code (err.h): an answer's CODE is in [ECODE_MIN, -1]. */
#define ECODE_MIN TQ_EOFFLINE

/* ------------------------------------------------------------------ */
/* Field names for messages                                           */

#define NO_INDEX SIZE_MAX

/* "cwd", "argv[3]", "labels[2].key": formatted only when there is an
 * error to report. */
struct field {
	const char *name;
	size_t i;           /* NO_INDEX: not a vector element */
	const char *member; /* NULL, or the member of labels[i] */
};

#define FIELD(n) ((struct field){ (n), NO_INDEX, NULL })

static int field_err(struct tq_err *err, int code, struct field f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int field_err(struct tq_err *err, int code, struct field f, const char *fmt, ...)
{
	char name[128], msg[256];
	va_list ap;

	if (f.i == NO_INDEX)
		snprintf(name, sizeof(name), "%s", f.name);
	else if (f.member == NULL)
		snprintf(name, sizeof(name), "%s[%zu]", f.name, f.i);
	else
		snprintf(name, sizeof(name), "%s[%zu].%s", f.name, f.i, f.member);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tq_err_set(err, code, "wire: %s: %s", name, msg);
}

static void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* A frame version this taskq reads and writes: "TQS1"/"TQR1", or one of
 * 3 to ours. */
static int known_version(int v)
{
	return v == TQ_WIRE_FRAME_V1 || (v >= HEADER_VERSION && v <= TQ_WIRE_VERSION);
}

/* "TQ", the kind, '0' + version, the payload's length. */
static void put_header(uint8_t *h, enum tq_wire_kind kind, int version, uint32_t len)
{
	h[0] = 'T';
	h[1] = 'Q';
	h[2] = (uint8_t)kind;
	h[3] = (uint8_t)('0' + version);
	le32_put(h + 4, len);
}

/* ------------------------------------------------------------------ */
/* Encoding                                                           */

/* Run once with p NULL to measure, then again to write. rc is sticky: the
 * first error stops everything after it. len never passes TQ_WIRE_MAX. */
struct wbuf {
	uint8_t *p;
	size_t len;
	int rc;
	struct tq_err *err;
};

static int room(struct wbuf *b, struct field f, size_t n)
{
	if (b->rc < 0)
		return 0;
	if (n > TQ_WIRE_MAX - b->len) {
		b->rc = field_err(b->err, TQ_EINVAL, f,
				  "the request would be larger than %u bytes", TQ_WIRE_MAX);
		return 0;
	}
	return 1;
}

static void put_bytes(struct wbuf *b, struct field f, const void *src, size_t n)
{
	if (!room(b, f, n))
		return;
	if (b->p != NULL && n > 0)
		memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_u32(struct wbuf *b, struct field f, size_t v)
{
	uint8_t x[4];

	/* TQ_WIRE_MAX < UINT32_MAX: a larger v would not fit the request */
	if (v > TQ_WIRE_MAX) {
		if (b->rc == 0)
			b->rc = field_err(b->err, TQ_EINVAL, f, "%zu is larger than %u",
					  v, TQ_WIRE_MAX);
		return;
	}
	le32_put(x, (uint32_t)v);
	put_bytes(b, f, x, sizeof(x));
}

static void put_i64(struct wbuf *b, struct field f, int64_t v)
{
	uint64_t u = (uint64_t)v;
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(u >> (8 * i));
	put_bytes(b, f, x, sizeof(x));
}

static void put_bool(struct wbuf *b, struct field f, int v)
{
	put_i64(b, f, v != 0);
}

/* NULL is length 0; else the bytes and their NUL. */
static void put_str(struct wbuf *b, struct field f, const char *s)
{
	size_t n;

	if (s == NULL) {
		put_u32(b, f, 0);
		return;
	}
	n = strlen(s) + 1;
	put_u32(b, f, n);
	put_bytes(b, f, s, n);
}

/* argv and env: counted, and no element may be NULL (consumers strlen them). */
static void put_strv(struct wbuf *b, const char *name, char *const *v, size_t n)
{
	put_u32(b, FIELD(name), n);
	if (n > 0 && v == NULL && b->rc == 0)
		b->rc = field_err(b->err, TQ_EINVAL, FIELD(name), "NULL with %zu elements", n);
	for (size_t i = 0; i < n && b->rc == 0; i++) {
		struct field f = { name, i, NULL };

		if (v[i] == NULL)
			b->rc = field_err(b->err, TQ_EINVAL, f, "NULL");
		else
			put_str(b, f, v[i]);
	}
}

/* A label's key or value may be NULL: tq_queue_submit refuses it with its
 * own message, the same as on the direct path. */
static void put_labels(struct wbuf *b, const struct tq_label *l, size_t n)
{
	put_u32(b, FIELD("labels"), n);
	if (n > 0 && l == NULL && b->rc == 0)
		b->rc = field_err(b->err, TQ_EINVAL, FIELD("labels"), "NULL with %zu elements", n);
	for (size_t i = 0; i < n && b->rc == 0; i++) {
		put_str(b, (struct field){ "labels", i, "key" }, l[i].key);
		put_str(b, (struct field){ "labels", i, "value" }, l[i].value);
	}
}

static void put_after(struct wbuf *b, const int64_t *after, size_t n)
{
	put_u32(b, FIELD("after"), n);
	if (n > 0 && after == NULL && b->rc == 0)
		b->rc = field_err(b->err, TQ_EINVAL, FIELD("after"), "NULL with %zu elements", n);
	for (size_t i = 0; i < n && b->rc == 0; i++)
		put_i64(b, (struct field){ "after", i, NULL }, after[i]);
}

static void put_blob(struct wbuf *b, struct field f, const void *data, size_t n)
{
	put_u32(b, f, n);
	if (n > 0 && data == NULL && b->rc == 0)
		b->rc = field_err(b->err, TQ_EINVAL, f, "NULL with %zu bytes", n);
	put_bytes(b, f, data, n);
}

static void put_stdin_mode(struct wbuf *b, enum tq_stdin_mode m)
{
	if ((unsigned)m > TQ_STDIN_PIPE) {
		if (b->rc == 0)
			b->rc = field_err(b->err, TQ_EINVAL, FIELD("stdin_mode"),
					  "%d is not a stdin mode", (int)m);
		return;
	}
	put_i64(b, FIELD("stdin_mode"), m);
}

/* The wire order. get_spec reads the same fields in the same order. */
static void put_spec(struct wbuf *b, const struct tq_task_spec *s)
{
	put_str(b, FIELD("name"), s->name);
	put_strv(b, "argv", s->argv, s->argc);
	put_bool(b, FIELD("shell"), s->shell);
	put_str(b, FIELD("cwd"), s->cwd);
	put_strv(b, "env", s->env, s->envc);
	put_str(b, FIELD("batch"), s->batch);
	put_str(b, FIELD("group"), s->group);
	put_str(b, FIELD("session"), s->session);
	put_str(b, FIELD("unique_key"), s->unique_key);
	put_labels(b, s->labels, s->nlabels);
	put_i64(b, FIELD("priority"), s->priority);
	put_i64(b, FIELD("run_after"), s->run_after);
	put_i64(b, FIELD("timeout_ms"), s->timeout_ms);
	put_i64(b, FIELD("kill_grace_ms"), s->kill_grace_ms);
	put_i64(b, FIELD("max_output"), s->max_output);
	put_i64(b, FIELD("max_retries"), s->max_retries);
	put_bool(b, FIELD("retry_lost"), s->retry_lost);
	put_i64(b, FIELD("backoff_ms"), s->backoff_ms);
	put_i64(b, FIELD("backoff_max_ms"), s->backoff_max_ms);
	put_stdin_mode(b, s->stdin_mode);
	put_blob(b, FIELD("stdin_data"), s->stdin_data, s->stdin_len);
	put_bool(b, FIELD("pty"), s->pty);
	put_str(b, FIELD("on_exit"), s->on_exit);
	put_after(b, s->after, s->nafter);
	put_bool(b, FIELD("after_any"), s->after_any);
	put_str(b, FIELD("agent"), s->agent);
	put_str(b, FIELD("model"), s->model);
	put_str(b, FIELD("prompt"), s->prompt);
	put_bool(b, FIELD("isolate"), s->isolate);
	put_str(b, FIELD("sources_json"), s->sources_json);
	put_str(b, FIELD("token"), s->token);
	/* version 2's fields; version 3 says its version in the header, not
	 * here (wire.h, "Versions") */
	put_i64(b, FIELD("umask"), s->umask);
	put_i64(b, FIELD("stall_timeout_ms"), s->stall_timeout_ms);
	put_bool(b, FIELD("cwd_explicit"), s->cwd_explicit);
	/* version 4's */
	put_bool(b, FIELD("warm"), s->warm);
	put_i64(b, FIELD("idle_timeout_ms"), s->idle_timeout_ms);
}

/* The payload's length, without writing it. */
static int measure(const struct tq_task_spec *spec, size_t *len, struct tq_err *err)
{
	struct wbuf b = { NULL, 0, 0, err };

	put_spec(&b, spec);
	*len = b.len;
	return b.rc;
}

int tq_wire_encode(const struct tq_task_spec *spec, uint8_t **frame, size_t *len,
		   struct tq_err *err)
{
	struct wbuf b = { NULL, 0, 0, err };
	uint8_t *buf;
	size_t n;
	int rc;

	*frame = NULL;
	*len = 0;
	if ((rc = measure(spec, &n, err)) < 0)
		return rc;
	if ((buf = malloc(HEADER_LEN + n)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "wire: out of memory (%zu bytes)",
				  HEADER_LEN + n);
	put_header(buf, TQ_WIRE_REQUEST, TQ_WIRE_VERSION, (uint32_t)n);
	b.p = buf + HEADER_LEN;
	put_spec(&b, spec);
	if (b.rc < 0 || b.len != n) {
		/* only if the spec changed under us */
		free(buf);
		return b.rc < 0 ? b.rc : tq_err_set(err, TQ_EINVAL, "wire: the spec changed while encoded");
	}
	*frame = buf;
	*len = HEADER_LEN + n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                           */

/* A cursor over the payload; rc is sticky as in struct wbuf: after the
 * first error every get_ returns 0 or NULL and reads nothing. */
struct rbuf {
	const uint8_t *p;
	size_t left;
	int rc;
	struct tq_err *err;
};

static void get_fail(struct rbuf *c, struct field f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void get_fail(struct rbuf *c, struct field f, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (c->rc < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->rc = field_err(c->err, TQ_EINVAL, f, "%s", msg);
}

/* The next n bytes (n > 0), or NULL when fewer are left. */
static const uint8_t *take(struct rbuf *c, struct field f, size_t n)
{
	const uint8_t *x;

	if (c->rc < 0)
		return NULL;
	if (n > c->left) {
		get_fail(c, f, "truncated: %zu bytes needed, %zu left", n, c->left);
		return NULL;
	}
	x = c->p;
	c->p += n;
	c->left -= n;
	return x;
}

static uint32_t get_u32(struct rbuf *c, struct field f)
{
	const uint8_t *x = take(c, f, 4);

	return x ? le32_get(x) : 0;
}

static int64_t get_i64(struct rbuf *c, struct field f)
{
	const uint8_t *x = take(c, f, 8);
	uint64_t u = 0;
	int64_t v;

	if (x == NULL)
		return 0;
	for (int i = 7; i >= 0; i--)
		u = u << 8 | x[i];
	memcpy(&v, &u, sizeof(v)); /* two's complement, without an
				    * implementation-defined conversion */
	return v;
}

static int get_bool(struct rbuf *c, struct field f)
{
	int64_t v = get_i64(c, f);

	if (v != 0 && v != 1) {
		get_fail(c, f, "%lld is not 0 or 1", (long long)v);
		return 0;
	}
	return (int)v;
}

/* NULL for length 0 (or after an error). */
static const char *get_str(struct rbuf *c, struct field f)
{
	uint32_t n = get_u32(c, f);
	const uint8_t *x, *nul;

	if (n == 0 || (x = take(c, f, n)) == NULL)
		return NULL;
	if (x[n - 1] != '\0') {
		get_fail(c, f, "string not terminated");
		return NULL;
	}
	if ((nul = memchr(x, '\0', n - 1)) != NULL) {
		get_fail(c, f, "NUL inside the string (byte %zu of %u)", (size_t)(nul - x), n);
		return NULL;
	}
	return (const char *)x;
}

/* A vector's count, when count elements of at least each bytes fit in what
 * is left: checked before anything is allocated for them. */
static size_t get_count(struct rbuf *c, struct field f, size_t each)
{
	uint32_t n = get_u32(c, f);

	if (c->rc < 0)
		return 0;
	if (n > c->left / each) {
		get_fail(c, f, "count %u does not fit in the %zu bytes left", n, c->left);
		return 0;
	}
	return n;
}

/* argv, env: NULL-terminated as well as counted, no NULL element. The
 * strings point into the payload, which is never written through them. */
static size_t get_strv(struct rbuf *c, const char *name, char ***out)
{
	size_t n = get_count(c, FIELD(name), 4);
	char **v;

	if (c->rc < 0)
		return 0;
	if ((v = calloc(n + 1, sizeof(*v))) == NULL) {
		c->rc = field_err(c->err, TQ_ENOMEM, FIELD(name), "out of memory");
		return 0;
	}
	*out = v;
	for (size_t i = 0; i < n && c->rc == 0; i++) {
		struct field f = { name, i, NULL };

		v[i] = (char *)get_str(c, f);
		if (v[i] == NULL)
			get_fail(c, f, "NULL (length 0) where a string is required");
	}
	return n;
}

static size_t get_labels(struct rbuf *c, struct tq_label **out)
{
	size_t n = get_count(c, FIELD("labels"), 8);
	struct tq_label *l;

	if (c->rc < 0 || n == 0)
		return 0;
	if ((l = calloc(n, sizeof(*l))) == NULL) {
		c->rc = field_err(c->err, TQ_ENOMEM, FIELD("labels"), "out of memory");
		return 0;
	}
	*out = l;
	for (size_t i = 0; i < n && c->rc == 0; i++) {
		l[i].key = get_str(c, (struct field){ "labels", i, "key" });
		l[i].value = get_str(c, (struct field){ "labels", i, "value" });
	}
	return n;
}

static size_t get_after(struct rbuf *c, int64_t **out)
{
	size_t n = get_count(c, FIELD("after"), 8);
	int64_t *a;

	if (c->rc < 0 || n == 0)
		return 0;
	if ((a = calloc(n, sizeof(*a))) == NULL) {
		c->rc = field_err(c->err, TQ_ENOMEM, FIELD("after"), "out of memory");
		return 0;
	}
	*out = a;
	for (size_t i = 0; i < n && c->rc == 0; i++)
		a[i] = get_i64(c, (struct field){ "after", i, NULL });
	return n;
}

/* NULL for length 0. */
static const void *get_blob(struct rbuf *c, struct field f, size_t *len)
{
	uint32_t n = get_u32(c, f);
	const uint8_t *x;

	*len = 0;
	if (n == 0 || (x = take(c, f, n)) == NULL)
		return NULL;
	*len = n;
	return x;
}

static enum tq_stdin_mode get_stdin_mode(struct rbuf *c)
{
	int64_t v = get_i64(c, FIELD("stdin_mode"));

	if (v < TQ_STDIN_NULL || v > TQ_STDIN_PIPE) {
		get_fail(c, FIELD("stdin_mode"), "%lld is not a stdin mode", (long long)v);
		return TQ_STDIN_NULL;
	}
	return (enum tq_stdin_mode)v;
}

/* Version 2's fields: umask, stall_timeout_ms, cwd_explicit. */
static void get_v2(struct rbuf *c, struct tq_task_spec *s)
{
	int64_t v = get_i64(c, FIELD("umask"));

	/* range-checked as an enum is: it narrows to an int */
	if (c->rc == 0 && (v < -1 || v > TQ_UMASK_MAX))
		get_fail(c, FIELD("umask"), "%lld is not -1 (unknown) or 0 to 0%o",
			 (long long)v, TQ_UMASK_MAX);
	s->umask = c->rc == 0 ? (int)v : -1;
	s->stall_timeout_ms = get_i64(c, FIELD("stall_timeout_ms"));
	s->cwd_explicit = get_bool(c, FIELD("cwd_explicit"));
}

/* Version 4's fields: warm, idle_timeout_ms. */
static void get_v4(struct rbuf *c, struct tq_task_spec *s)
{
	s->warm = get_bool(c, FIELD("warm"));
	s->idle_timeout_ms = get_i64(c, FIELD("idle_timeout_ms"));
}

/*
 * What follows the token (wire.h, "Versions"). In a "TQS1" frame: nothing
 * from a version 1 client, which gets the defaults of the fields it does
 * not know, or version 2's i64 2 and its fields; any other number there is
 * refused (version 1 sends none, version 3 on say theirs in the header).
 * In a frame of version 3 on: version 2's fields, there always; from
 * version 4 on, version 4's after them (a version 3 request: not warm).
 */
static void get_later(struct rbuf *c, struct tq_wire_spec *w, int frame)
{
	struct tq_task_spec *s = &w->spec;
	int64_t v;

	s->umask = -1;
	s->stall_timeout_ms = 0;
	s->cwd_explicit = 0;
	s->warm = 0;
	s->idle_timeout_ms = 0;
	w->version = 1;
	if (c->rc < 0 || (frame == TQ_WIRE_FRAME_V1 && c->left == 0))
		return;
	if (frame == TQ_WIRE_FRAME_V1) {
		v = get_i64(c, FIELD("version"));
		if (c->rc == 0 && v > PAYLOAD_VERSION)
			get_fail(c, FIELD("version"), "request version %lld in a TQS1 frame "
				 "(version %d on say theirs in the frame header)", (long long)v,
				 HEADER_VERSION);
		else if (c->rc == 0 && v < PAYLOAD_VERSION)
			get_fail(c, FIELD("version"), "%lld is not a version that sends one",
				 (long long)v);
	} else {
		v = frame;
	}
	if (c->rc < 0)
		return;
	w->version = (int)v;
	get_v2(c, s);
	if (w->version >= 4)
		get_v4(c, s);
}

/* The wire order: as put_spec. frame: the frame's version. */
static void get_spec(struct rbuf *c, struct tq_wire_spec *w, int frame)
{
	struct tq_task_spec *s = &w->spec;

	s->name = get_str(c, FIELD("name"));
	s->argc = get_strv(c, "argv", &w->argv);
	s->argv = w->argv;
	s->shell = get_bool(c, FIELD("shell"));
	s->cwd = get_str(c, FIELD("cwd"));
	s->envc = get_strv(c, "env", &w->env);
	s->env = w->env;
	s->batch = get_str(c, FIELD("batch"));
	s->group = get_str(c, FIELD("group"));
	s->session = get_str(c, FIELD("session"));
	s->unique_key = get_str(c, FIELD("unique_key"));
	s->nlabels = get_labels(c, &w->labels);
	s->labels = w->labels;
	s->priority = get_i64(c, FIELD("priority"));
	s->run_after = get_i64(c, FIELD("run_after"));
	s->timeout_ms = get_i64(c, FIELD("timeout_ms"));
	s->kill_grace_ms = get_i64(c, FIELD("kill_grace_ms"));
	s->max_output = get_i64(c, FIELD("max_output"));
	s->max_retries = get_i64(c, FIELD("max_retries"));
	s->retry_lost = get_bool(c, FIELD("retry_lost"));
	s->backoff_ms = get_i64(c, FIELD("backoff_ms"));
	s->backoff_max_ms = get_i64(c, FIELD("backoff_max_ms"));
	s->stdin_mode = get_stdin_mode(c);
	s->stdin_data = get_blob(c, FIELD("stdin_data"), &s->stdin_len);
	s->pty = get_bool(c, FIELD("pty"));
	s->on_exit = get_str(c, FIELD("on_exit"));
	s->nafter = get_after(c, &w->after);
	s->after = w->after;
	s->after_any = get_bool(c, FIELD("after_any"));
	s->agent = get_str(c, FIELD("agent"));
	s->model = get_str(c, FIELD("model"));
	s->prompt = get_str(c, FIELD("prompt"));
	s->isolate = get_bool(c, FIELD("isolate"));
	s->sources_json = get_str(c, FIELD("sources_json"));
	s->token = get_str(c, FIELD("token"));
	get_later(c, w, frame);
}

int tq_wire_decode(const uint8_t *payload, size_t len, int version,
		   struct tq_wire_spec *w, struct tq_err *err)
{
	struct rbuf c = { payload, len, 0, err };

	memset(w, 0, sizeof(*w));
	if (version > TQ_WIRE_VERSION)
		return tq_err_set(err, TQ_EINVAL, "wire: request version %d is newer than "
				  "this taskq's (%d)", version, TQ_WIRE_VERSION);
	if (!known_version(version))
		return tq_err_set(err, TQ_EINVAL, "wire: no request frame has version %d",
				  version);
	get_spec(&c, w, version);
	if (c.rc == 0 && c.left > 0)
		c.rc = tq_err_set(err, TQ_EINVAL,
				  "wire: %zu bytes left over after the last field (%s)", c.left,
				  w->version == 1 ? "token" : "cwd_explicit");
	if (c.rc < 0) {
		tq_wire_free(w);
		return c.rc;
	}
	return 0;
}

void tq_wire_free(struct tq_wire_spec *w)
{
	if (w == NULL)
		return;
	free(w->argv);
	free(w->env);
	free(w->labels);
	free(w->after);
	memset(w, 0, sizeof(*w));
}

/* ------------------------------------------------------------------ */
/* Frames                                                             */

/* Wait for events on fd until deadline_ms: 1 ready, 0 timed out, -1 with
 * errno. EINTR is retried with the time then left. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t now = tq_mono_ms(), left;
		int r;

		if (deadline_ms <= now)
			return 0;
		left = deadline_ms - now;
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0 && (p.revents & POLLNVAL)) {
			errno = EBADF;
			return -1;
		}
		if (r > 0)
			return 1; /* readable, writable, or HUP/ERR: the I/O says which */
	}
}

/* The part of the frame its next byte belongs to, and where in it. */
static const char *frame_part(const struct tq_wire_frame *f, size_t *at, size_t *of)
{
	if (f->got < HEADER_LEN) {
		*at = f->got;
		*of = HEADER_LEN;
		return "frame header";
	}
	*at = f->got - HEADER_LEN;
	*of = f->len;
	return "frame payload";
}

void tq_wire_frame_start(struct tq_wire_frame *f, enum tq_wire_kind kind, uint32_t max)
{
	*f = (struct tq_wire_frame)TQ_WIRE_FRAME_INIT;
	f->kind = (char)kind;
	f->max = max < TQ_WIRE_MAX ? max : TQ_WIRE_MAX;
}

/* Complete: the header is in and so is the whole payload. */
static int frame_done(const struct tq_wire_frame *f)
{
	return f->got >= HEADER_LEN && f->got - HEADER_LEN == f->len;
}

int tq_wire_frame_space(struct tq_wire_frame *f, uint8_t **p, size_t *n,
			struct tq_err *err)
{
	size_t at;

	if (f->got < HEADER_LEN) {
		*p = f->head + f->got;
		*n = HEADER_LEN - f->got;
		return 0;
	}
	if (frame_done(f))
		return tq_err_set(err, TQ_EINVAL, "wire: the frame is complete");
	at = f->got - HEADER_LEN;
	/* Grow only when full, by doubling from one chunk: a frame that
	 * says 16 MiB and sends 3 bytes holds 64 KiB, and a large one is
	 * copied O(log n) times. */
	if (at == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : TQ_WIRE_FRAME_CHUNK;
		uint8_t *np;

		if (ncap > f->len)
			ncap = f->len;
		if ((np = realloc(f->payload, ncap)) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "wire: out of memory (%zu bytes)", ncap);
		f->payload = np;
		f->cap = ncap;
	}
	*p = f->payload + at;
	*n = f->cap - at; /* cap <= len: never past the frame */
	return 0;
}

/*
 * The header is in: "TQ", our kind, a version. A newer version is named
 * (its client then knows to store the task itself), and refused before its
 * length, which is its business; f->version keeps it, so that the answer
 * goes in a version that client reads. A byte 3 that names no version
 * (below '1', or '2': no frame was ever version 2) is a bad magic.
 */
static int header_check(struct tq_wire_frame *f, struct tq_err *err)
{
	const uint8_t *h = f->head;

	f->version = 0;
	if (h[0] != 'T' || h[1] != 'Q' || h[2] != (uint8_t)f->kind || h[3] < '1' ||
	    h[3] == '0' + PAYLOAD_VERSION)
		return tq_err_set(err, TQ_EINVAL, "wire: bad magic (not a TQ%c frame)", f->kind);
	f->version = h[3] - '0';
	if (f->version > TQ_WIRE_VERSION)
		return tq_err_set(err, TQ_EINVAL, "wire: %s version %d is newer than this "
				  "taskq's (%d)", f->kind == TQ_WIRE_REQUEST ? "request" : "answer",
				  f->version, TQ_WIRE_VERSION);
	f->len = le32_get(h + 4);
	if (f->len > f->max)
		return tq_err_set(err, TQ_EINVAL, "wire: frame length %u is over %u bytes",
				  f->len, f->max);
	return 0;
}

int tq_wire_frame_took(struct tq_wire_frame *f, size_t n, struct tq_err *err)
{
	int was_head = f->got < HEADER_LEN, rc;

	f->got += n;
	if (was_head && f->got >= HEADER_LEN) {
		if ((rc = header_check(f, err)) < 0)
			return rc;
		/* An empty payload is a buffer all the same: a complete frame
		 * always has one. */
		if (f->len == 0 && (f->payload = malloc(1)) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "wire: out of memory");
	}
	return frame_done(f) ? 1 : 0;
}

/* n bytes read into the frame, through tq_wire_frame_space and took as a
 * reader would: 1 complete (bytes after the frame are dropped: a
 * connection carries one frame each way), 0 more wanted, < 0 failed. */
static int frame_feed(struct tq_wire_frame *f, const uint8_t *p, size_t n,
		      struct tq_err *err)
{
	while (n > 0) {
		uint8_t *dst;
		size_t room;
		int rc;

		if ((rc = tq_wire_frame_space(f, &dst, &room, err)) < 0)
			return rc;
		if (room > n)
			room = n;
		memcpy(dst, p, room);
		if ((rc = tq_wire_frame_took(f, room, err)) != 0)
			return rc;
		p += room;
		n -= room;
	}
	return 0;
}

/* One read(2) into the frame: 1 complete, 0 more wanted (or EAGAIN), < 0
 * failed. Before the header is whole, the read asks for what may follow
 * it too (TQ_WIRE_READ_AHEAD bytes), so that a request or an answer that
 * arrived whole, as they do, takes one read, not one for the header and
 * one for the payload. */
static int frame_read_once(struct tq_wire_frame *f, int fd, struct tq_err *err)
{
	uint8_t ahead[TQ_WIRE_HEADER + TQ_WIRE_READ_AHEAD];
	size_t n, at, of;
	const char *what;
	uint8_t *p;
	ssize_t r;
	int rc;

	if (f->got < HEADER_LEN) {
		r = tq_read(fd, ahead, HEADER_LEN - f->got + TQ_WIRE_READ_AHEAD);
		if (r > 0)
			return frame_feed(f, ahead, (size_t)r, err);
	} else {
		if ((rc = tq_wire_frame_space(f, &p, &n, err)) < 0)
			return rc;
		r = tq_read(fd, p, n);
		if (r > 0)
			return tq_wire_frame_took(f, (size_t)r, err);
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r < 0)
		return tq_err_set(err, TQ_EIO, "wire: read: %s", strerror(errno));
	what = frame_part(f, &at, &of);
	return tq_err_set(err, TQ_EIO, "wire: connection closed in the %s (%zu of %zu bytes)",
			  what, at, of);
}

int tq_wire_frame_read(struct tq_wire_frame *f, int fd, struct tq_err *err)
{
	size_t before;
	int rc;

	do {
		before = f->got;
		rc = frame_read_once(f, fd, err);
	} while (rc == 0 && f->got > before);
	return rc;
}

int tq_wire_frame_timeout(const struct tq_wire_frame *f, struct tq_err *err)
{
	size_t at, of;
	const char *what = frame_part(f, &at, &of);

	return tq_err_set(err, TQ_EIO, "wire: timed out reading the %s (%zu of %zu bytes)",
			  what, at, of);
}

void tq_wire_frame_release(struct tq_wire_frame *f)
{
	free(f->payload);
	f->payload = NULL;
	f->cap = 0;
	f->got = 0;
	f->len = 0;
}

int tq_wire_read_frame(int fd, enum tq_wire_kind kind, int64_t deadline_ms,
		       uint8_t **payload, size_t *len, int *version, struct tq_err *err)
{
	struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
	int rc, w;

	*payload = NULL;
	*len = 0;
	*version = 0;
	tq_wire_frame_start(&f, kind, TQ_WIRE_MAX);
	/* Poll before each read: fd may be blocking. */
	do {
		if ((w = wait_fd(fd, POLLIN, deadline_ms)) == 0) {
			rc = tq_wire_frame_timeout(&f, err);
			break;
		}
		if (w < 0) {
			rc = tq_err_set(err, TQ_EIO, "wire: poll: %s", strerror(errno));
			break;
		}
	} while ((rc = frame_read_once(&f, fd, err)) == 0);
	if (rc < 0) {
		tq_wire_frame_release(&f);
		return rc;
	}
	*payload = f.payload;
	*len = f.len;
	*version = f.version;
	return 0;
}

int tq_wire_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms,
		      struct tq_err *err)
{
	const uint8_t *p = buf;

	while (len > 0) {
		/* send(2), not tq_write: MSG_NOSIGNAL makes a closed peer EPIPE
		 * instead of SIGPIPE, MSG_DONTWAIT keeps a blocking fd from
		 * waiting past the deadline. */
		ssize_t r = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		int w;

		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return tq_err_set(err, TQ_EIO, "wire: send wrote nothing");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return tq_err_set(err, TQ_EIO, "wire: send: %s", strerror(errno));
		if ((w = wait_fd(fd, POLLOUT, deadline_ms)) == 0)
			return tq_err_set(err, TQ_EIO, "wire: timed out writing"
					  " (%zu bytes left)", len);
		if (w < 0)
			return tq_err_set(err, TQ_EIO, "wire: poll: %s", strerror(errno));
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Answers                                                            */

/* In the request's frame version when we write it, else in ours (a newer
 * client reads ours). */
static int answer(int fd, int version, const char *text, size_t n, int64_t deadline_ms)
{
	uint8_t buf[HEADER_LEN + ANSWER_MAX];

	if (n > ANSWER_MAX)
		n = ANSWER_MAX;
	put_header(buf, TQ_WIRE_ANSWER, known_version(version) ? version : TQ_WIRE_VERSION,
		   (uint32_t)n);
	memcpy(buf + HEADER_LEN, text, n);
	return tq_wire_write_all(fd, buf, HEADER_LEN + n, deadline_ms, NULL);
}

int tq_wire_answer_ok(int fd, int version, int64_t id, int existed, int64_t deadline_ms)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "OK %lld %d", (long long)id, existed != 0);

	return answer(fd, version, text, (size_t)n, deadline_ms);
}

/* The message goes on one line: control characters become spaces. A code
 * that is not an error (>= 0) is sent as TQ_EIO. */
int tq_wire_answer_err(int fd, int version, const struct tq_err *e, int64_t deadline_ms)
{
	char text[ANSWER_MAX];
	int code = e != NULL && e->code < 0 ? e->code : TQ_EIO;
	const char *msg = e != NULL ? e->msg : "";
	size_t n = (size_t)snprintf(text, sizeof(text), "ERR %d ", code);

	for (size_t i = 0; i < TQ_ERR_MAX && msg[i] != '\0' && n < sizeof(text); i++) {
		unsigned char ch = (unsigned char)msg[i];

		text[n++] = ch < ' ' || ch == 0x7f ? ' ' : (char)ch;
	}
	return answer(fd, version, text, n, deadline_ms);
}

/* Decimal digits (at least one) up to max: the end, or NULL. */
static const char *number(const char *s, int64_t max, int64_t *v)
{
	int64_t x = 0;
	const char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		int d = *p - '0';

		if (x > (max - d) / 10)
			return NULL;
		x = x * 10 + d;
	}
	if (p == s)
		return NULL;
	*v = x;
	return p;
}

/* "OK ID EXISTED" -> STORED; "ERR CODE MESSAGE" -> CODE; anything else,
 * even slightly off, is GARBLED (safe: the direct path follows with the
 * same token). */
static int parse_answer(const uint8_t *p, size_t n, int64_t *id, int *existed,
			struct tq_err *err)
{
	char text[ANSWER_MAX + 1];
	const char *s;
	int64_t v;

	if (n > ANSWER_MAX || memchr(p, '\0', n) != NULL)
		goto bad;
	memcpy(text, p, n);
	text[n] = '\0';
	if (strncmp(text, "OK ", 3) == 0) {
		s = number(text + 3, INT64_MAX, &v);
		if (s == NULL || v < 1 || s[0] != ' ' || (s[1] != '0' && s[1] != '1') ||
		    s[2] != '\0')
			goto bad;
		*id = v;
		if (existed)
			*existed = s[1] == '1';
		return TQ_WIRE_STORED;
	}
	if (strncmp(text, "ERR -", 5) == 0) {
		s = number(text + 5, -(int64_t)ECODE_MIN, &v);
		if (s == NULL || v < 1 || s[0] != ' ' || strpbrk(s + 1, "\r\n") != NULL)
			goto bad;
		return tq_err_set(err, (int)-v, "%s", s + 1);
	}
bad:
	tq_err_set(err, TQ_EIO, "wire: a malformed answer (%zu bytes)", n);
	return TQ_WIRE_GARBLED;
}

/* ------------------------------------------------------------------ */
/* The client                                                         */

/* Connect to home/TQ_WIRE_SOCKET served by our own user: the fd, or -1
 * (err says why; nothing was sent). Non-blocking, so a supervisor whose
 * backlog is full is EAGAIN at once, not a wait. */
static int dial(const char *home, struct tq_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct stat sb;
	int fd, r;

	r = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", home, TQ_WIRE_SOCKET);
	if (r < 0 || (size_t)r >= sizeof(sa.sun_path)) {
		tq_err_set(err, TQ_EINVAL, "wire: %s/%s: path longer than %zu bytes", home,
			   TQ_WIRE_SOCKET, sizeof(sa.sun_path) - 1);
		return -1;
	}
	/* connect(2) follows a symlink: one at submit.sock (the supervisor
	 * refuses to listen there, "exists and is not a socket") took the
	 * task to whatever socket it named -- another state directory's
	 * supervisor stored it in its own queue, under an id that meant
	 * nothing in ours. Only a socket file itself is ours to dial (home's
	 * own path has its links resolved: tq_home_resolve). Nothing there:
	 * connect says so. */
	if (lstat(sa.sun_path, &sb) == 0 && !S_ISSOCK(sb.st_mode)) {
		tq_err_set(err, TQ_EINVAL, "wire: %s is not a socket", sa.sun_path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		tq_err_sys(err, "wire: socket");
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0) {
		tq_err_sys(err, "wire: connect %s", sa.sun_path);
		tq_close(fd);
		return -1;
	}
	/* The request carries the task's environment: never hand it to a
	 * socket another user put in a state directory we can write. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		tq_err_sys(err, "wire: %s: SO_PEERCRED", sa.sun_path);
		tq_close(fd);
		return -1;
	}
	if (cred.uid != geteuid()) {
		tq_err_set(err, TQ_EPERM, "wire: %s is served by uid %lu, not ours",
			   sa.sun_path, (unsigned long)cred.uid);
		tq_close(fd);
		return -1;
	}
	return fd;
}

int tq_wire_submit(const char *home, const struct tq_task_spec *spec, int64_t timeout_ms,
		   int64_t *id, int *existed, struct tq_err *err)
{
	struct tq_err why = TQ_ERR_INIT;  /* the answer's refusal, or why none */
	struct tq_err rerr = TQ_ERR_INIT;
	uint8_t *frame = NULL, *ans = NULL;
	size_t flen = 0, alen = 0, need;
	int64_t now = tq_mono_ms(), deadline;
	int fd = -1, rc, sent, version;

	*id = 0;
	if (existed)
		*existed = 0;
	/* Without a token a lost answer could not be retried safely. */
	if (spec->token == NULL) {
		tq_err_set(err, TQ_EINVAL, "wire: the spec has no submit token");
		return TQ_WIRE_NOT_SENT;
	}
	if (timeout_ms <= 0) {
		tq_err_set(err, TQ_EINVAL, "wire: no time to wait for an answer");
		return TQ_WIRE_NOT_SENT;
	}
	deadline = timeout_ms > INT64_MAX - now ? INT64_MAX : now + timeout_ms;
	if (measure(spec, &need, err) < 0)
		return TQ_WIRE_NOT_SENT;
	if (need > TQ_WIRE_SPEC_MAX - HEADER_LEN) {
		tq_err_set(err, TQ_EINVAL, "wire: the request is %zu bytes, over %u",
			   HEADER_LEN + need, TQ_WIRE_SPEC_MAX);
		return TQ_WIRE_NOT_SENT;
	}
	/* Encode before connecting: a failure here leaves the supervisor
	 * no half-open connection to wait on. */
	if (tq_wire_encode(spec, &frame, &flen, err) < 0)
		return TQ_WIRE_NOT_SENT;
	if ((fd = dial(home, err)) < 0) {
		rc = TQ_WIRE_NOT_SENT;
		goto out;
	}
	/* From here on the supervisor may have the task: no answer is LOST,
	 * one we cannot read GARBLED. */
	sent = tq_wire_write_all(fd, frame, flen, deadline, &why);
	/* The answer is read even when the send failed: a supervisor that
	 * refuses a request from its header (another version: wire.h,
	 * "Versions") answers and closes before it has read the rest, and
	 * the send of a request larger than the socket's buffer then fails;
	 * its answer is there all the same. (After a send that timed out,
	 * the deadline has passed: the read does not wait.) */
	rc = tq_wire_read_frame(fd, TQ_WIRE_ANSWER, deadline, &ans, &alen, &version, &rerr);
	if (rc == TQ_EINVAL) {
		rc = TQ_WIRE_GARBLED; /* a header we do not read */
		why = rerr;
	} else if (rc < 0) {
		rc = TQ_WIRE_LOST;
		if (sent == 0)
			why = rerr;   /* else the send's error says it first */
	} else {
		if (sent < 0)
			why = (struct tq_err)TQ_ERR_INIT; /* an answer came */
		rc = parse_answer(ans, alen, id, existed, &why);
		/* A decoding error is the supervisor's, before any store
		 * (wire.h, "Versions"); any other refusal is the spec's, as
		 * the store gives. */
		if (rc < 0 && strncmp(why.msg, "wire: ", 6) == 0)
			rc = TQ_WIRE_UNREAD;
	}
	if (err != NULL)
		*err = why;
out:
	free(frame);
	free(ans);
	tq_close(fd);
	return rc;
}
