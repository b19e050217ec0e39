/*
 * test_wire.c - wire.c, the submit socket's protocol: a full and a minimal
 * spec survive encode + decode field by field (and re-encode to the same
 * bytes); the decoder refuses every prefix of a valid request, strings
 * without their NUL or with one inside, counts that cannot fit, bad enums
 * and booleans, trailing bytes, naming the field; versions: a request in
 * a "TQS1" frame as the deployed version 1 and 2 clients send it decodes
 * (version 1 with the defaults of later fields), a "TQS3" one as this
 * taskq sends it, a newer one is refused; the frame header both ways
 * (requests and answers say their version; a newer one is refused from
 * the header, answered in ours); frames over a real socketpair (good,
 * large, bad magic, oversize, EOF, a deadline that passes); tq_wire_submit
 * with no socket, a spec too big to send, and against a server forked per
 * test that answers OK, ERR, nothing, garbage, a newer version, or
 * refuses the request from its header before reading the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "common/sys.h"
#include "queue/queue.h"
#include "ipc/wire.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static char *full_argv[] = { "prog", "caf\xc3\xa9", "\x80\x81\xfe\xff", "", "MARKER1", NULL };
static char *full_env[] = { "PATH=/usr/bin:/bin", "EMPTY=", "BIN=\xff\x80", NULL };
static const struct tq_label full_labels[] = {
	{ "team", "infra" }, { "LBLKEY", "" }, { "nullvalue", NULL },
};
static const int64_t full_after[] = { 1, 42, INT64_MAX, -7 };
static const uint8_t full_stdin[] = { 'a', 0, 'b', 0, 0, 0xff, 0x80, 'c', 0 };
static char *small_argv[] = { "echo", "\xff", NULL };

/* Every field set, with NULL and empty strings and non-UTF-8 bytes. */
static struct tq_task_spec full_spec(void)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;

	s.name = NULL;
	s.argv = full_argv;
	s.argc = 5;
	s.shell = 1;
	s.cwd = "/tmp/work dir";
	s.env = full_env;
	s.envc = 3;
	s.batch = "";
	s.group = "grp";
	s.session = NULL;
	s.unique_key = "uniq";
	s.labels = full_labels;
	s.nlabels = 3;
	s.priority = -5;
	s.run_after = 1700000000123;
	s.timeout_ms = INT64_MAX;
	s.kill_grace_ms = 0;
	s.max_output = INT64_MIN;
	s.max_retries = 7;
	s.retry_lost = 1;
	s.backoff_ms = 1;
	s.backoff_max_ms = 2;
	s.stdin_mode = TQ_STDIN_FILE;
	s.stdin_data = full_stdin;
	s.stdin_len = sizeof(full_stdin);
	s.pty = 1;
	s.on_exit = "notify-send done";
	s.after = full_after;
	s.nafter = 4;
	s.after_any = 1;
	s.agent = "claude";
	s.model = "";
	s.prompt = "fix\nthe\tbug \xe2\x9c\x93";
	s.isolate = 1;
	s.sources_json = "{\"repo\":\"/src\"}";
	s.token = TOKEN;
	s.umask = 0027;
	s.stall_timeout_ms = 300000;
	s.cwd_explicit = 1;
	s.warm = 1;
	s.idle_timeout_ms = 600000;
	return s;
}

static struct tq_task_spec small_spec(void)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;

	s.argv = small_argv;
	s.argc = 2;
	s.cwd = "/";
	s.token = TOKEN;
	return s;
}

static void str_same(const char *what, const char *a, const char *b)
{
	if (a == NULL || b == NULL) {
		if (a != b)
			fail_msg("%s: %s vs %s", what, a ? a : "NULL", b ? b : "NULL");
		return;
	}
	if (strcmp(a, b) != 0)
		fail_msg("%s: \"%s\" vs \"%s\"", what, a, b);
}

static void spec_same(const struct tq_task_spec *a, const struct tq_task_spec *b)
{
	char what[64];

	str_same("name", a->name, b->name);
	assert_int_equal(a->argc, b->argc);
	for (size_t i = 0; i < a->argc; i++) {
		snprintf(what, sizeof(what), "argv[%zu]", i);
		str_same(what, a->argv[i], b->argv[i]);
	}
	assert_int_equal(a->shell != 0, b->shell != 0);
	str_same("cwd", a->cwd, b->cwd);
	assert_int_equal(a->envc, b->envc);
	for (size_t i = 0; i < a->envc; i++) {
		snprintf(what, sizeof(what), "env[%zu]", i);
		str_same(what, a->env[i], b->env[i]);
	}
	str_same("batch", a->batch, b->batch);
	str_same("group", a->group, b->group);
	str_same("session", a->session, b->session);
	str_same("unique_key", a->unique_key, b->unique_key);
	assert_int_equal(a->nlabels, b->nlabels);
	for (size_t i = 0; i < a->nlabels; i++) {
		str_same("label key", a->labels[i].key, b->labels[i].key);
		str_same("label value", a->labels[i].value, b->labels[i].value);
	}
	assert_int_equal(a->priority, b->priority);
	assert_int_equal(a->run_after, b->run_after);
	assert_int_equal(a->timeout_ms, b->timeout_ms);
	assert_int_equal(a->kill_grace_ms, b->kill_grace_ms);
	assert_int_equal(a->max_output, b->max_output);
	assert_int_equal(a->max_retries, b->max_retries);
	assert_int_equal(a->retry_lost != 0, b->retry_lost != 0);
	assert_int_equal(a->backoff_ms, b->backoff_ms);
	assert_int_equal(a->backoff_max_ms, b->backoff_max_ms);
	assert_int_equal(a->stdin_mode, b->stdin_mode);
	assert_int_equal(a->stdin_len, b->stdin_len);
	if (a->stdin_len > 0)
		assert_memory_equal(a->stdin_data, b->stdin_data, a->stdin_len);
	assert_int_equal(a->pty != 0, b->pty != 0);
	str_same("on_exit", a->on_exit, b->on_exit);
	assert_int_equal(a->nafter, b->nafter);
	for (size_t i = 0; i < a->nafter; i++)
		assert_int_equal(a->after[i], b->after[i]);
	assert_int_equal(a->after_any != 0, b->after_any != 0);
	str_same("agent", a->agent, b->agent);
	str_same("model", a->model, b->model);
	str_same("prompt", a->prompt, b->prompt);
	assert_int_equal(a->isolate != 0, b->isolate != 0);
	str_same("sources_json", a->sources_json, b->sources_json);
	str_same("token", a->token, b->token);
	assert_int_equal(a->umask, b->umask);
	assert_int_equal(a->stall_timeout_ms, b->stall_timeout_ms);
	assert_int_equal(a->cwd_explicit != 0, b->cwd_explicit != 0);
	assert_int_equal(a->warm != 0, b->warm != 0);
	assert_int_equal(a->idle_timeout_ms, b->idle_timeout_ms);
}

/* The payload of spec's encoding (a copy of exactly its size, so that ASan
 * sees any read past it). */
static uint8_t *encode_payload(const struct tq_task_spec *s, size_t *n)
{
	struct tq_err err = TQ_ERR_INIT;
	uint8_t *frame = NULL, *p;
	size_t len = 0;

	if (tq_wire_encode(s, &frame, &len, &err) != 0)
		fail_msg("encode: %s", err.msg);
	assert_true(len >= 8);
	assert_memory_equal(frame, "TQS4", 4);
	*n = len - 8;
	assert_int_equal(frame[4] | frame[5] << 8 | frame[6] << 16 | (uint32_t)frame[7] << 24, *n);
	p = malloc(*n > 0 ? *n : 1);
	assert_non_null(p);
	memcpy(p, frame + 8, *n);
	free(frame);
	return p;
}

static int inside(const void *ptr, const uint8_t *p, size_t n)
{
	const uint8_t *q = ptr;

	return q >= p && q < p + n;
}

static void round_trip(const struct tq_task_spec *s)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	uint8_t *p, *again;
	size_t n, n2;

	p = encode_payload(s, &n);
	if (tq_wire_decode(p, n, TQ_WIRE_VERSION, &w, &err) != 0)
		fail_msg("decode: %s", err.msg);
	spec_same(s, &w.spec);
	/* counted and NULL-terminated; strings point into the payload */
	assert_non_null(w.spec.argv);
	assert_null(w.spec.argv[w.spec.argc]);
	assert_non_null(w.spec.env);
	assert_null(w.spec.env[w.spec.envc]);
	for (size_t i = 0; i < w.spec.argc; i++)
		assert_true(inside(w.spec.argv[i], p, n));
	if (w.spec.token)
		assert_true(inside(w.spec.token, p, n));
	if (w.spec.stdin_len)
		assert_true(inside(w.spec.stdin_data, p, n));
	/* the encoding is canonical */
	again = encode_payload(&w.spec, &n2);
	assert_int_equal(n, n2);
	assert_memory_equal(p, again, n);
	free(again);
	tq_wire_free(&w);
	tq_wire_free(&w); /* twice is fine */
	free(p);
}

static void test_round_trip_full(void **state)
{
	struct tq_task_spec s = full_spec();

	(void)state;
	round_trip(&s);
}

static void test_round_trip_minimal(void **state)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	char *argv[] = { "true", NULL };
	uint8_t *p;
	size_t n;

	(void)state;
	s.argv = argv;
	s.argc = 1;
	round_trip(&s);
	p = encode_payload(&s, &n);
	assert_int_equal(tq_wire_decode(p, n, TQ_WIRE_VERSION, &w, &err), 0);
	assert_null(w.spec.name);
	assert_null(w.spec.cwd);
	assert_null(w.spec.token);
	assert_int_equal(w.spec.envc, 0);
	assert_null(w.spec.labels);
	assert_null(w.spec.after);
	assert_null(w.spec.stdin_data);
	assert_int_equal(w.spec.timeout_ms, TQ_DEFAULT_TIMEOUT_MS);
	tq_wire_free(&w);
	free(p);

	/* even no command at all: tq_queue_submit is the one to refuse it */
	s.argv = NULL;
	s.argc = 0;
	round_trip(&s);
}

static char last_msg[TQ_ERR_MAX];

/* Decoding n bytes of p, the payload of a frame of version, fails with
 * TQ_EINVAL, a "wire: " message holding needle (if any; the message is
 * kept in last_msg), and leaves nothing to free. */
static void expect_bad_as(const uint8_t *p, size_t n, int version, const char *needle)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	uint8_t *copy = malloc(n > 0 ? n : 1);

	assert_non_null(copy);
	memcpy(copy, p, n);
	memset(&w, 0xa5, sizeof(w));
	assert_int_equal(tq_wire_decode(copy, n, version, &w, &err), TQ_EINVAL);
	assert_int_equal(err.code, TQ_EINVAL);
	if (strncmp(err.msg, "wire: ", 6) != 0 || strchr(err.msg, '\n') != NULL)
		fail_msg("message: \"%s\"", err.msg);
	if (needle != NULL && strstr(err.msg, needle) == NULL)
		fail_msg("expected \"%s\" in \"%s\"", needle, err.msg);
	memcpy(last_msg, err.msg, sizeof(last_msg));
	assert_null(w.argv);
	assert_null(w.env);
	assert_null(w.labels);
	assert_null(w.after);
	assert_int_equal(w.spec.argc, 0);
	tq_wire_free(&w);
	free(copy);
}

/* As expect_bad_as, in a frame of this version. */
static void expect_bad(const uint8_t *p, size_t n, const char *needle)
{
	expect_bad_as(p, n, TQ_WIRE_VERSION, needle);
}

/* Where version 1's request ended: just past the token and its NUL. */
static size_t v1_length(const uint8_t *p, size_t n)
{
	const uint8_t *at = memmem(p, n, TOKEN, sizeof(TOKEN));

	assert_non_null(at);
	return (size_t)(at - p) + sizeof(TOKEN);
}

static void test_decode_truncated(void **state)
{
	struct tq_task_spec s = full_spec();
	size_t n;
	uint8_t *p = encode_payload(&s, &n);

	(void)state;
	/* (a "TQS3" request ending at the token, as version 1's did,
	 * included: test_decode_versions) */
	for (size_t len = 0; len < n; len++) {
		expect_bad(p, len, NULL);
		/* a length past the end, or a count that cannot fit */
		if (strstr(last_msg, "truncated") == NULL && strstr(last_msg, "does not fit") == NULL)
			fail_msg("prefix of %zu bytes: \"%s\"", len, last_msg);
	}
	free(p);
}

static size_t offset_of(const uint8_t *p, size_t n, const char *needle)
{
	const uint8_t *at = memmem(p, n, needle, strlen(needle));

	assert_non_null(at);
	return (size_t)(at - p);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void test_decode_bad_strings(void **state)
{
	struct tq_task_spec s = full_spec();
	size_t n, m;
	uint8_t *p = encode_payload(&s, &n);

	(void)state;
	m = offset_of(p, n, "MARKER1"); /* argv[4]; its length is at m - 4 */
	p[m + 7] = 'x';
	expect_bad(p, n, "argv[4]: string not terminated");
	p[m + 7] = '\0';
	p[m + 3] = '\0';
	expect_bad(p, n, "argv[4]: NUL inside the string");
	p[m + 3] = 'K';
	put32(p + m - 4, 0);
	expect_bad(p, n, "argv[4]: NULL");
	put32(p + m - 4, 0xfffffff0u);
	expect_bad(p, n, "argv[4]: truncated");
	put32(p + m - 4, 8);

	m = offset_of(p, n, "LBLKEY");
	p[m + 6] = '!';
	expect_bad(p, n, "labels[1].key: string not terminated");
	p[m + 6] = '\0';

	m = offset_of(p, n, TOKEN);
	p[m + 10] = '\0';
	expect_bad(p, n, "token: NUL inside");
	p[m + 10] = 'a';

	/* and the repaired payload decodes again */
	{
		struct tq_err err = TQ_ERR_INIT;
		struct tq_wire_spec w;

		if (tq_wire_decode(p, n, TQ_WIRE_VERSION, &w, &err) != 0)
			fail_msg("decode: %s", err.msg);
		spec_same(&s, &w.spec);
		tq_wire_free(&w);
	}
	free(p);
}

static void test_decode_counts(void **state)
{
	struct tq_task_spec s = full_spec();
	size_t n, m;
	uint8_t *p = encode_payload(&s, &n), saved[4];
	static const uint32_t huge[] = { 0xffffffffu, 0x7fffffffu, 0x10000000u, 1000 };

	(void)state;
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		/* argv's count: before argv[0]'s length */
		m = offset_of(p, n, "prog") - 8;
		memcpy(saved, p + m, 4);
		put32(p + m, huge[i]);
		expect_bad(p, n, "argv: count");
		memcpy(p + m, saved, 4);

		m = offset_of(p, n, "PATH=") - 8;
		memcpy(saved, p + m, 4);
		put32(p + m, huge[i]);
		expect_bad(p, n, "env: count");
		memcpy(p + m, saved, 4);

		m = offset_of(p, n, "team") - 8;
		memcpy(saved, p + m, 4);
		put32(p + m, huge[i]);
		expect_bad(p, n, "labels: count");
		memcpy(p + m, saved, 4);

		/* after's count follows on_exit */
		m = offset_of(p, n, "notify-send done") + strlen("notify-send done") + 1;
		memcpy(saved, p + m, 4);
		assert_int_equal(saved[0], 4);
		put32(p + m, huge[i]);
		expect_bad(p, n, "after: count");
		memcpy(p + m, saved, 4);
	}
	free(p);
}

/* The offset of the first byte where the encodings of a and b differ. */
static size_t first_difference(const struct tq_task_spec *a, const struct tq_task_spec *b)
{
	size_t na, nb, i;
	uint8_t *pa = encode_payload(a, &na), *pb = encode_payload(b, &nb);

	assert_int_equal(na, nb);
	for (i = 0; i < na && pa[i] == pb[i]; i++)
		;
	assert_true(i < na);
	free(pa);
	free(pb);
	return i;
}

static void test_decode_enums(void **state)
{
	static const struct {
		size_t off;
		const char *name;
	} bools[] = {
		{ offsetof(struct tq_task_spec, shell), "shell: 2 is not 0 or 1" },
		{ offsetof(struct tq_task_spec, retry_lost), "retry_lost: 2 is not" },
		{ offsetof(struct tq_task_spec, pty), "pty: 2 is not" },
		{ offsetof(struct tq_task_spec, after_any), "after_any: 2 is not" },
		{ offsetof(struct tq_task_spec, isolate), "isolate: 2 is not" },
	};
	struct tq_task_spec a = small_spec(), b = small_spec();
	size_t n, at;
	uint8_t *p = encode_payload(&a, &n);

	(void)state;
	b.stdin_mode = TQ_STDIN_PIPE;
	at = first_difference(&a, &b);
	p[at] = 3;
	expect_bad(p, n, "stdin_mode: 3 is not a stdin mode");
	memset(p + at, 0xff, 8);
	expect_bad(p, n, "stdin_mode: -1 is not a stdin mode");
	memset(p + at, 0, 8);

	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		b = small_spec();
		*(int *)((char *)&b + bools[i].off) = 1;
		at = first_difference(&a, &b);
		p[at] = 2;
		expect_bad(p, n, bools[i].name);
		p[at] = 0;
		p[at + 7] = 0x80; /* INT64_MIN */
		expect_bad(p, n, "is not 0 or 1");
		p[at + 7] = 0;
	}
	free(p);
}

static void test_decode_trailing(void **state)
{
	struct tq_task_spec s = full_spec();
	size_t n;
	uint8_t *p = encode_payload(&s, &n), *longer = calloc(1, n + 3);

	(void)state;
	assert_non_null(longer);
	memcpy(longer, p, n);
	expect_bad(longer, n + 1, "1 bytes left over");
	expect_bad(longer, n + 3, "3 bytes left over");
	free(longer);
	free(p);
}

/* The "TQS1" payload a deployed version 2 client sends for what p (n bytes,
 * version 3: the token ends at v1) holds: i64 2 inserted after the token.
 * A new buffer of *len bytes. */
static uint8_t *as_v2(const uint8_t *p, size_t n, size_t v1, size_t *len)
{
	uint8_t *q = malloc(n + 8);

	assert_non_null(q);
	memcpy(q, p, v1);
	memset(q + v1, 0, 8);
	q[v1] = 2;
	memcpy(q + v1 + 8, p + v1, n - v1);
	*len = n + 8;
	return q;
}

/*
 * Versions (wire.h): a request of this version ("TQS4") carries version
 * 2's fields after the token and no version field, then version 4's; a
 * "TQS3" one ends after version 2's and is not warm; in a "TQS1" frame, a
 * version 1 request (what a taskq before version 2 sends: the fields up to
 * the token, nothing after) decodes with the later fields' defaults, and a
 * version 2 one (i64 2, then those fields) decodes whole. Refused, naming
 * the field: a "TQS1" payload saying version 3 or more (they say theirs in
 * the header) or 1 or less; a "TQS3" request ending at the token; a frame
 * version newer than ours, or one no frame has; a umask out of range and a
 * non-boolean cwd_explicit.
 */
static void test_decode_versions(void **state)
{
	struct tq_task_spec s = full_spec(), want = full_spec();
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	size_t n, n2;
	uint8_t *p = encode_payload(&s, &n), *v2;
	size_t v1 = v1_length(p, n);

	(void)state;
	assert_int_equal(n - v1, 5 * 8); /* umask, stall, cwd_explicit; warm, idle */
	assert_int_equal(tq_wire_decode(p, n, TQ_WIRE_VERSION, &w, &err), 0);
	assert_int_equal(w.version, TQ_WIRE_VERSION);
	spec_same(&s, &w.spec);
	tq_wire_free(&w);

	/* version 1, as deployed: a TQS1 frame ending at the token */
	assert_int_equal(tq_wire_decode(p, v1, TQ_WIRE_FRAME_V1, &w, &err), 0);
	assert_int_equal(w.version, 1);
	want.umask = -1;
	want.stall_timeout_ms = 0;
	want.cwd_explicit = 0;
	want.warm = 0;
	want.idle_timeout_ms = 0;
	spec_same(&want, &w.spec);
	tq_wire_free(&w);
	/* version 3, as deployed: TQS3, version 2's fields after the token
	 * and nothing after them: not warm */
	assert_int_equal(tq_wire_decode(p, n - 2 * 8, 3, &w, &err), 0);
	assert_int_equal(w.version, 3);
	want = s;
	want.warm = 0;
	want.idle_timeout_ms = 0;
	spec_same(&want, &w.spec);
	tq_wire_free(&w);
	/* a TQS4 request must carry version 4's */
	expect_bad_as(p, n - 2 * 8, 4, "warm: truncated");
	/* version 2, as deployed: TQS1, the version after the token */
	v2 = as_v2(p, n - 2 * 8, v1, &n2);
	assert_int_equal(tq_wire_decode(v2, n2, TQ_WIRE_FRAME_V1, &w, &err), 0);
	assert_int_equal(w.version, 2);
	spec_same(&want, &w.spec);
	tq_wire_free(&w);
	v2[v1] = 3;
	expect_bad_as(v2, n2, TQ_WIRE_FRAME_V1, "version: request version 3 in a TQS1 frame "
		      "(version 3 on say theirs in the frame header)");
	v2[v1] = 1;
	expect_bad_as(v2, n2, TQ_WIRE_FRAME_V1, "version: 1 is not a version that sends one");
	memset(v2 + v1, 0xff, 8);
	expect_bad_as(v2, n2, TQ_WIRE_FRAME_V1, "version: -1 is not");
	free(v2);
	/* version 3's request read as a TQS1 frame: its umask is no version */
	expect_bad_as(p, n, TQ_WIRE_FRAME_V1, "version: ");

	/* a TQS3 request must carry version 2's fields */
	expect_bad_as(p, v1, TQ_WIRE_VERSION, "umask: truncated");
	expect_bad_as(p, n, TQ_WIRE_VERSION + 1, "request version 5 is newer than this "
		      "taskq's (4)");
	expect_bad_as(p, n, 2, "no request frame has version 2");
	expect_bad_as(p, n, 0, "no request frame has version 0");

	p[v1] = 0x00, p[v1 + 1] = 0x02; /* 01000 */
	expect_bad(p, n, "umask: 512 is not -1 (unknown) or 0 to 0777");
	memset(p + v1, 0xff, 8);  /* -2 */
	p[v1] = 0xfe;
	expect_bad(p, n, "umask: -2 is not");
	memset(p + v1, 0xff, 8);  /* -1: unknown, as from version 1 */
	assert_int_equal(tq_wire_decode(p, n, TQ_WIRE_VERSION, &w, &err), 0);
	assert_int_equal(w.spec.umask, -1);
	tq_wire_free(&w);
	p[v1 + 16] = 2;
	expect_bad(p, n, "cwd_explicit: 2 is not 0 or 1");
	free(p);
}

static void test_encode_errors(void **state)
{
	struct tq_task_spec s = small_spec();
	struct tq_err err = TQ_ERR_INIT;
	char *holey[] = { "a", NULL, "c", NULL };
	uint8_t *frame = (uint8_t *)&err;
	size_t len = 9;
	void *big;

	(void)state;
	s.argv = holey;
	s.argc = 3;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), TQ_EINVAL);
	assert_null(frame);
	assert_int_equal(len, 0);
	assert_string_equal(err.msg, "wire: argv[1]: NULL");

	s = small_spec();
	s.stdin_mode = (enum tq_stdin_mode)7;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "stdin_mode"));

	s = small_spec();
	big = calloc(1, TQ_WIRE_MAX);
	assert_non_null(big);
	s.stdin_mode = TQ_STDIN_FILE;
	s.stdin_data = big;
	s.stdin_len = TQ_WIRE_MAX;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "stdin_data: the request would be larger than"));
	assert_null(frame);
	/* just under the bound is fine */
	s.stdin_len = TQ_WIRE_MAX - 1024;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), 0);
	assert_true(len > TQ_WIRE_MAX - 1024);
	free(frame);
	free(big);
}

/* ------------------------------------------------------------------ */
/* Frames                                                             */

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void send_raw(int fd, const void *p, size_t n)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_wire_write_all(fd, p, n, tq_mono_ms() + 5000, &err) != 0)
		fail_msg("write: %s", err.msg);
}

static void expect_frame_err(int fd, int code, const char *needle, int64_t deadline)
{
	struct tq_err err = TQ_ERR_INIT;
	uint8_t *payload = (uint8_t *)&err;
	size_t len = 7;
	int version = 7;

	assert_int_equal(tq_wire_read_frame(fd, TQ_WIRE_REQUEST, deadline, &payload, &len,
					    &version, &err), code);
	assert_null(payload);
	assert_int_equal(len, 0);
	assert_int_equal(version, 0);
	if (strstr(err.msg, needle) == NULL)
		fail_msg("expected \"%s\" in \"%s\"", needle, err.msg);
}

static void test_frame_good(void **state)
{
	struct tq_task_spec s = full_spec();
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	uint8_t *frame, *payload;
	size_t len, plen;
	int sv[2], version;

	(void)state;
	pair(sv);
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), 0);
	send_raw(sv[0], frame, len);
	/* What follows a frame is not its: a connection carries one frame
	 * each way, and the read that takes the header may take more. */
	send_raw(sv[0], "TQS1\0\0\0\0", 8);
	assert_int_equal(tq_wire_read_frame(sv[1], TQ_WIRE_REQUEST, tq_mono_ms() + 5000,
					    &payload, &plen, &version, &err), 0);
	assert_int_equal(version, TQ_WIRE_VERSION);
	assert_int_equal(plen, len - 8);
	assert_memory_equal(payload, frame + 8, plen);
	assert_int_equal(tq_wire_decode(payload, plen, TQ_WIRE_VERSION, &w, &err), 0);
	spec_same(&s, &w.spec);
	tq_wire_free(&w);
	free(payload);
	close(sv[0]);
	close(sv[1]);
	/* an empty one, on a connection of its own */
	pair(sv);
	send_raw(sv[0], "TQS1\0\0\0\0", 8);
	assert_int_equal(tq_wire_read_frame(sv[1], TQ_WIRE_REQUEST, tq_mono_ms() + 5000,
					    &payload, &plen, &version, &err), 0);
	assert_int_equal(version, TQ_WIRE_FRAME_V1);
	assert_int_equal(plen, 0);
	assert_non_null(payload);
	free(payload);
	free(frame);
	close(sv[0]);
	close(sv[1]);
}

/* A frame larger than the socket buffer: a child writes it (polling on
 * EAGAIN), the parent reads it in pieces. Both ends non-blocking. */
static void test_frame_large(void **state)
{
	struct tq_task_spec s = small_spec();
	struct tq_err err = TQ_ERR_INIT;
	struct tq_wire_spec w;
	uint8_t *frame, *payload, *blob;
	size_t len, plen;
	int sv[2], st, version;
	pid_t pid;

	(void)state;
	blob = malloc(3 << 20);
	assert_non_null(blob);
	for (size_t i = 0; i < (3u << 20); i++)
		blob[i] = (uint8_t)(i * 7);
	s.stdin_mode = TQ_STDIN_FILE;
	s.stdin_data = blob;
	s.stdin_len = 3 << 20;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[1]);
		_exit(tq_wire_write_all(sv[0], frame, len, tq_mono_ms() + 20000, NULL) == 0 ? 0 : 1);
	}
	close(sv[0]);
	assert_int_equal(tq_wire_read_frame(sv[1], TQ_WIRE_REQUEST, tq_mono_ms() + 20000,
					    &payload, &plen, &version, &err), 0);
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(plen, len - 8);
	assert_int_equal(tq_wire_decode(payload, plen, TQ_WIRE_VERSION, &w, &err), 0);
	spec_same(&s, &w.spec);
	tq_wire_free(&w);
	free(payload);
	free(frame);
	free(blob);
	close(sv[1]);
}

static void test_frame_bad_magic(void **state)
{
	int sv[2];

	(void)state;
	pair(sv);
	send_raw(sv[0], "TQR1\3\0\0\0abc", 11);
	expect_frame_err(sv[1], TQ_EINVAL, "bad magic", tq_mono_ms() + 5000);
	close(sv[0]);
	close(sv[1]);
}

/* One header fed to a reader of kind, whole: its verdict, version and
 * message. */
static int header_fed(enum tq_wire_kind kind, const char *head4, uint32_t len, int *version,
		      struct tq_err *err)
{
	struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
	uint8_t *p;
	size_t n;
	int rc;

	tq_wire_frame_start(&f, kind, 100);
	assert_int_equal(tq_wire_frame_space(&f, &p, &n, err), 0);
	assert_int_equal(n, 8);
	memcpy(p, head4, 4);
	put32(p + 4, len);
	rc = tq_wire_frame_took(&f, 8, err);
	*version = f.version;
	tq_wire_frame_release(&f);
	return rc;
}

/*
 * The header says the frame's version, both ways (wire.h, "Frames"): a
 * request reader takes "TQS1" (the deployed version 1 and 2 clients) and
 * "TQS3", and says which; it refuses a newer "TQS4" by its version, from
 * the header alone (whatever length it says), keeping the version for the
 * answer; "TQS2" (no frame was ever version 2), "TQS0" and a kind of the
 * other way are a bad magic. An answer reader the same with "TQR".
 */
static void test_frame_versions(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	int version;

	(void)state;
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS1", 5, &version, &err), 0);
	assert_int_equal(version, TQ_WIRE_FRAME_V1);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS3", 5, &version, &err), 0);
	assert_int_equal(version, 3);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS3", 0, &version, &err), 1);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS4", 5, &version, &err), 0);
	assert_int_equal(version, 4);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS5", 0xffffffffu, &version, &err),
			 TQ_EINVAL);
	assert_string_equal(err.msg, "wire: request version 5 is newer than this taskq's (4)");
	assert_int_equal(version, 5);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS9", 5, &version, &err), TQ_EINVAL);
	assert_int_equal(version, 9);
	assert_int_equal(header_fed(TQ_WIRE_REQUEST, "TQS3", 101, &version, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "wire: frame length 101 is over 100 bytes");
	assert_int_equal(version, 3);
	for (const char *const *m = (const char *const[]){ "TQS2", "TQS0", "TQS/", "TQR3",
				   "TQR1", "TQX3", "tqs3", "XQS3", NULL }; *m; m++) {
		assert_int_equal(header_fed(TQ_WIRE_REQUEST, *m, 5, &version, &err), TQ_EINVAL);
		assert_string_equal(err.msg, "wire: bad magic (not a TQS frame)");
		assert_int_equal(version, 0);
	}

	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQR1", 5, &version, &err), 0);
	assert_int_equal(version, TQ_WIRE_FRAME_V1);
	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQR3", 5, &version, &err), 0);
	assert_int_equal(version, 3);
	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQR4", 5, &version, &err), 0);
	assert_int_equal(version, 4);
	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQR5", 5, &version, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "wire: answer version 5 is newer than this taskq's (4)");
	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQS3", 5, &version, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "wire: bad magic (not a TQR frame)");
	assert_int_equal(header_fed(TQ_WIRE_ANSWER, "TQR2", 5, &version, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "wire: bad magic (not a TQR frame)");
}

/* The request this taskq writes: "TQS3", its length, its payload. */
static void test_encode_header(void **state)
{
	struct tq_task_spec s = small_spec();
	struct tq_err err = TQ_ERR_INIT;
	uint8_t *frame;
	size_t len;

	(void)state;
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), 0);
	assert_true(len > 8);
	assert_memory_equal(frame, "TQS4", 4);
	assert_int_equal(frame[4] | frame[5] << 8 | frame[6] << 16 | (uint32_t)frame[7] << 24,
			 len - 8);
	free(frame);
}

static void test_frame_oversize(void **state)
{
	uint8_t head[8] = { 'T', 'Q', 'S', '1' };
	int sv[2];

	(void)state;
	pair(sv);
	put32(head + 4, TQ_WIRE_MAX + 1);
	send_raw(sv[0], head, sizeof(head));
	expect_frame_err(sv[1], TQ_EINVAL, "is over", tq_mono_ms() + 5000);
	put32(head + 4, 0xffffffffu);
	send_raw(sv[0], head, sizeof(head));
	expect_frame_err(sv[1], TQ_EINVAL, "is over", tq_mono_ms() + 5000);
	close(sv[0]);
	close(sv[1]);
}

static void test_frame_eof(void **state)
{
	int sv[2];

	(void)state;
	pair(sv);
	send_raw(sv[0], "TQS1\12\0\0\0abc", 11);
	close(sv[0]);
	expect_frame_err(sv[1], TQ_EIO, "closed in the frame payload (3 of 10 bytes)",
			 tq_mono_ms() + 5000);
	close(sv[1]);

	pair(sv);
	send_raw(sv[0], "TQS", 3);
	close(sv[0]);
	expect_frame_err(sv[1], TQ_EIO, "closed in the frame header (3 of 8 bytes)",
			 tq_mono_ms() + 5000);
	close(sv[1]);

	pair(sv);
	close(sv[0]);
	expect_frame_err(sv[1], TQ_EIO, "closed in the frame header (0 of 8 bytes)",
			 tq_mono_ms() + 5000);
	close(sv[1]);
}

static void test_frame_deadline(void **state)
{
	int64_t t0, took;
	int sv[2];

	(void)state;
	pair(sv);
	/* the peer writes nothing */
	t0 = tq_mono_ms();
	expect_frame_err(sv[1], TQ_EIO, "timed out", t0 + 100);
	took = tq_mono_ms() - t0;
	assert_true(took >= 100);
	assert_true(took < 3000);

	/* or stops in the middle of a payload */
	send_raw(sv[0], "TQS1\12\0\0\0ab", 10);
	t0 = tq_mono_ms();
	expect_frame_err(sv[1], TQ_EIO, "timed out reading the frame payload (2 of 10",
			 t0 + 100);
	took = tq_mono_ms() - t0;
	assert_true(took >= 100);
	assert_true(took < 3000);

	/* a deadline already past waits for nothing */
	t0 = tq_mono_ms();
	expect_frame_err(sv[1], TQ_EIO, "timed out", t0 - 1);
	assert_true(tq_mono_ms() - t0 < 1000);
	close(sv[0]);
	close(sv[1]);
}

/* A frame read a piece at a time from a non-blocking socket, as the
 * supervisor serves its connections: nothing until the header is whole,
 * the buffer grows only with what arrived, and the bytes after the frame
 * stay in the socket. */
static void test_frame_pieces(void **state)
{
	struct tq_task_spec s = small_spec();
	struct tq_wire_frame f = TQ_WIRE_FRAME_INIT;
	struct tq_err err = TQ_ERR_INIT;
	uint8_t *frame, head[8] = { 'T', 'Q', 'S', '1' }, rest[8];
	size_t len;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(tq_wire_encode(&s, &frame, &len, &err), 0);
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, TQ_WIRE_SPEC_MAX);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 0); /* nothing yet */
	for (size_t i = 0; i + 1 < len; i++) {
		send_raw(sv[0], frame + i, 1);
		assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 0);
	}
	send_raw(sv[0], frame + len - 1, 1);
	send_raw(sv[0], "TQS1", 4); /* the start of another: not taken */
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 1);
	assert_int_equal(f.len, len - 8);
	assert_memory_equal(f.payload, frame + 8, f.len);
	assert_int_equal(read(sv[1], rest, sizeof(rest)), 4);
	tq_wire_frame_release(&f);
	free(frame);

	/* a frame that announces the most and sends little holds one chunk */
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, TQ_WIRE_SPEC_MAX);
	put32(head + 4, TQ_WIRE_SPEC_MAX);
	send_raw(sv[0], head, sizeof(head));
	send_raw(sv[0], "abc", 3);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 0);
	assert_int_equal(f.got, 11);
	assert_true(f.cap <= TQ_WIRE_FRAME_CHUNK);
	assert_int_equal(tq_wire_frame_timeout(&f, &err), TQ_EIO);
	assert_string_equal(err.msg, "wire: timed out reading the frame payload (3 of 4194304 bytes)");
	tq_wire_frame_release(&f);

	/* over the reader's own bound, and a bad magic, once the header is in */
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, 100);
	put32(head + 4, 101);
	send_raw(sv[0], head, 5);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 0);
	assert_int_equal(tq_wire_frame_timeout(&f, &err), TQ_EIO);
	assert_string_equal(err.msg, "wire: timed out reading the frame header (5 of 8 bytes)");
	send_raw(sv[0], head + 5, 3);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), TQ_EINVAL);
	assert_string_equal(err.msg, "wire: frame length 101 is over 100 bytes");
	tq_wire_frame_release(&f);
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, 100);
	send_raw(sv[0], "TQR1\0\0\0\0", 8);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "bad magic"));
	tq_wire_frame_release(&f);

	/* an empty payload is complete at once, with a buffer */
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, 100);
	send_raw(sv[0], "TQS1\0\0\0\0", 8);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), 1);
	assert_int_equal(f.len, 0);
	assert_non_null(f.payload);
	tq_wire_frame_release(&f);

	/* the peer goes away halfway */
	tq_wire_frame_start(&f, TQ_WIRE_REQUEST, 100);
	send_raw(sv[0], "TQS1\12\0\0\0ab", 10);
	close(sv[0]);
	assert_int_equal(tq_wire_frame_read(&f, sv[1], &err), TQ_EIO);
	assert_string_equal(err.msg, "wire: connection closed in the frame payload (2 of 10 bytes)");
	tq_wire_frame_release(&f);
	close(sv[1]);
}

static void test_write_closed_peer(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	static const char buf[4096];
	int sv[2];

	(void)state;
	pair(sv);
	close(sv[1]);
	/* a SIGPIPE would end the test here */
	assert_int_equal(tq_wire_write_all(sv[0], buf, sizeof(buf), tq_mono_ms() + 5000, &err),
			 TQ_EIO);
	assert_non_null(strstr(err.msg, "wire: send: "));
	close(sv[0]);

	/* a peer that never reads: the deadline ends the write */
	pair(sv);
	{
		size_t big = 64u << 20;
		char *lots = calloc(1, big);
		int64_t t0 = tq_mono_ms();

		assert_non_null(lots);
		assert_int_equal(tq_wire_write_all(sv[0], lots, big, t0 + 100, &err), TQ_EIO);
		assert_non_null(strstr(err.msg, "timed out writing"));
		assert_true(tq_mono_ms() - t0 >= 100);
		free(lots);
	}
	close(sv[0]);
	close(sv[1]);
}

/* The next frame on fd, byte for byte: the header magic ("TQR3"), the
 * length, the text. */
static void expect_answer(int fd, const char *magic, const char *text)
{
	size_t n = strlen(text);
	uint8_t *buf = malloc(8 + n);

	assert_non_null(buf);
	assert_int_equal(tq_read_full(fd, buf, 8 + n), (ssize_t)(8 + n));
	assert_memory_equal(buf, magic, 4);
	assert_int_equal(buf[4] | buf[5] << 8 | buf[6] << 16 | (uint32_t)buf[7] << 24, n);
	assert_memory_equal(buf + 8, text, n);
	free(buf);
}

static void test_answers(void **state)
{
	struct tq_err e = { .code = TQ_ENOTFOUND };
	int sv[2];

	(void)state;
	pair(sv);
	assert_int_equal(tq_wire_answer_ok(sv[0], 3, 42, 0, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "OK 42 0");
	assert_int_equal(tq_wire_answer_ok(sv[0], 3, INT64_MAX, 5, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "OK 9223372036854775807 1");
	snprintf(e.msg, sizeof(e.msg), "no task 7\nsecond\tline");
	assert_int_equal(tq_wire_answer_err(sv[0], 3, &e, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "ERR -2 no task 7 second line");
	e.code = 0;
	assert_int_equal(tq_wire_answer_err(sv[0], 3, &e, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "ERR -5 no task 7 second line");
	assert_int_equal(tq_wire_answer_err(sv[0], 3, NULL, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "ERR -5 ");
	close(sv[1]);
	assert_int_equal(tq_wire_answer_ok(sv[0], 3, 1, 0, tq_mono_ms() + 5000), TQ_EIO);
	close(sv[0]);
}

/*
 * The answer's header says its version, the request's (wire.h,
 * "Versions"): "TQR1" to a "TQS1" request, which the deployed version 1
 * and 2 clients read; "TQR3" to a "TQS3" one, "TQR4" to a "TQS4"; and ours
 * to a version we do
 * not write (a newer request's, 2 which no frame had, 0: not a taskq
 * frame), which a newer client reads.
 */
static void test_answer_versions(void **state)
{
	struct tq_err e = { .code = TQ_EINVAL };
	int sv[2];

	(void)state;
	pair(sv);
	assert_int_equal(tq_wire_answer_ok(sv[0], TQ_WIRE_FRAME_V1, 42, 1, tq_mono_ms() + 5000),
			 0);
	expect_answer(sv[1], "TQR1", "OK 42 1");
	snprintf(e.msg, sizeof(e.msg), "no command given");
	assert_int_equal(tq_wire_answer_err(sv[0], TQ_WIRE_FRAME_V1, &e, tq_mono_ms() + 5000),
			 0);
	expect_answer(sv[1], "TQR1", "ERR -1 no command given");
	assert_int_equal(tq_wire_answer_ok(sv[0], TQ_WIRE_VERSION, 7, 0, tq_mono_ms() + 5000),
			 0);
	expect_answer(sv[1], "TQR4", "OK 7 0");
	assert_int_equal(tq_wire_answer_ok(sv[0], 3, 7, 0, tq_mono_ms() + 5000), 0);
	expect_answer(sv[1], "TQR3", "OK 7 0");
	for (int v = 0; v <= 200; v++) {
		if (v == TQ_WIRE_FRAME_V1 || v == 3 || v == TQ_WIRE_VERSION)
			continue;
		assert_int_equal(tq_wire_answer_ok(sv[0], v, 8, 0, tq_mono_ms() + 5000), 0);
		expect_answer(sv[1], "TQR4", "OK 8 0");
	}
	close(sv[0]);
	close(sv[1]);
}

/* ------------------------------------------------------------------ */
/* The client                                                         */

enum scenario {
	ANSWER_OK,      /* "OK 42 0" */
	ANSWER_ERR,     /* "ERR -1 no command given" */
	ANSWER_CLOSE,   /* read the request, close without a word */
	ANSWER_RAW,     /* write the given bytes */
	ANSWER_NOTHING, /* read the request, then wait for the client to go */
	ANSWER_EARLY,   /* read the header only, write the given bytes, close:
			 * what a supervisor of another version does */
};

/* The state of the tests that fork a server: teardown reaps a child an
 * assertion left behind and removes the directory. */
struct server {
	char *dir;
	pid_t pid; /* 0: none running */
};

static int server_setup(void **state)
{
	struct server *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->dir = th_tempdir();
	assert_non_null(s->dir);
	*state = s;
	return 0;
}

static int server_teardown(void **state)
{
	struct server *s = *state;

	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		tq_waitpid(s->pid, NULL, 0);
	}
	th_rmtree(s->dir);
	free(s);
	return 0;
}

/* Listen on dir/submit.sock (replacing the file); the fd. */
static int listen_in(const char *dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	assert_true((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir,
				     TQ_WIRE_SOCKET) < sizeof(sa.sun_path));
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

/* The child: serve one connection. Its exit status is 0 when the request
 * arrived whole and decoded to small_spec(); no cmocka here. */
static int serve(int lfd, enum scenario sc, const void *raw, size_t rawlen)
{
	int64_t deadline = tq_mono_ms() + 10000;
	struct tq_task_spec want = small_spec();
	struct tq_err err = TQ_ERR_INIT, e = { .code = TQ_EINVAL };
	struct tq_wire_spec w;
	uint8_t *p = NULL, *rest = NULL, head[8];
	size_t n = 0;
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd, rc = 0, version;

	/* a client that never comes must not leave this child behind */
	if (poll(&pfd, 1, 10000) != 1 || (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return 10;
	if (sc == ANSWER_EARLY) {
		/* the client's request is a "TQS4" frame */
		if (tq_read_full(fd, head, sizeof(head)) != (ssize_t)sizeof(head) ||
		    memcmp(head, "TQS4", 4) != 0)
			return 15;
		rc = tq_wire_write_all(fd, raw, rawlen, deadline, NULL);
		close(fd);
		return rc == 0 ? 0 : 14;
	}
	if (tq_wire_read_frame(fd, TQ_WIRE_REQUEST, deadline, &p, &n, &version, &err) != 0)
		return 11;
	if (version != TQ_WIRE_VERSION || tq_wire_decode(p, n, version, &w, &err) != 0)
		return 12;
	if (w.spec.argc != 2 || strcmp(w.spec.argv[0], want.argv[0]) != 0 ||
	    strcmp(w.spec.argv[1], want.argv[1]) != 0 || w.spec.token == NULL ||
	    strcmp(w.spec.token, TOKEN) != 0 || strcmp(w.spec.cwd, "/") != 0)
		return 13;
	switch (sc) {
	case ANSWER_OK:
		rc = tq_wire_answer_ok(fd, version, 42, 0, deadline);
		break;
	case ANSWER_ERR:
		snprintf(e.msg, sizeof(e.msg), "no command given");
		rc = tq_wire_answer_err(fd, version, &e, deadline);
		break;
	case ANSWER_CLOSE:
		break;
	case ANSWER_RAW:
		rc = tq_wire_write_all(fd, raw, rawlen, deadline, NULL);
		break;
	case ANSWER_EARLY:
		break; /* answered above */
	case ANSWER_NOTHING:
		/* the client gives up and closes: EOF, long before the deadline */
		rc = tq_wire_read_frame(fd, TQ_WIRE_REQUEST, deadline, &rest, &n, &version,
					&err) == TQ_EIO &&
		     strstr(err.msg, "closed") != NULL ? 0 : -1;
		break;
	}
	tq_wire_free(&w);
	free(p);
	close(fd);
	return rc == 0 ? 0 : 14;
}

static void server_start(struct server *s, enum scenario sc, const void *raw, size_t rawlen)
{
	int lfd;

	lfd = listen_in(s->dir); /* before the fork: the client finds it at once */
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0)
		_exit(serve(lfd, sc, raw, rawlen));
	close(lfd);
}

static void server_finish(struct server *s)
{
	int st = 0;

	assert_int_equal(tq_waitpid(s->pid, &st, 0), s->pid);
	s->pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("server: status %#x", st);
}

static int submit_to(const char *home, int64_t timeout_ms, int64_t *id, int *existed,
		     struct tq_err *err)
{
	struct tq_task_spec s = small_spec();

	*id = -99;
	*existed = -99;
	return tq_wire_submit(home, &s, timeout_ms, id, existed, err);
}

static void test_submit_no_socket(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	char *dir = th_tempdir(), path[1024], longhome[200];
	int64_t id;
	int existed, fd;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(submit_to(dir, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "connect"));
	assert_int_equal(id, 0);
	assert_int_equal(existed, 0);

	/* a socket file nobody listens on (a dead supervisor's) */
	fd = listen_in(dir);
	close(fd);
	assert_int_equal(submit_to(dir, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "Connection refused"));

	/* a home whose socket path does not fit sun_path */
	memset(longhome, 'a', sizeof(longhome) - 1);
	longhome[0] = '/';
	longhome[sizeof(longhome) - 1] = '\0';
	assert_int_equal(submit_to(longhome, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "path longer than"));

	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/nosuch", dir);
	assert_int_equal(submit_to(path, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	th_rmtree(dir);
}

/* A symlink at submit.sock is never dialled, even to a live socket (it
 * took the task to another state directory's supervisor): nothing is sent,
 * and the listener behind the link sees no connection. */
static void test_submit_never_through_a_symlink(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	char *dir = th_tempdir(), *other = th_tempdir(), target[1024], link[1024];
	int64_t id;
	int existed, lfd;

	(void)state;
	assert_non_null(dir);
	assert_non_null(other);
	lfd = listen_in(other);
	assert_int_equal(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	snprintf(target, sizeof(target), "%s/%s", other, TQ_WIRE_SOCKET);
	snprintf(link, sizeof(link), "%s/%s", dir, TQ_WIRE_SOCKET);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(submit_to(dir, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "is not a socket"));
	assert_int_equal(id, 0);
	assert_int_equal(accept(lfd, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	close(lfd);
	th_rmtree(dir);
	th_rmtree(other);
}

/* Nothing connects when the spec has no token or is too big to send. */
static void test_submit_not_sent(void **state)
{
	struct tq_task_spec s = small_spec();
	struct tq_err err = TQ_ERR_INIT;
	char *dir = th_tempdir();
	int64_t id;
	int existed, lfd;
	void *big = calloc(1, TQ_WIRE_SPEC_MAX);

	(void)state;
	assert_non_null(dir);
	assert_non_null(big);
	lfd = listen_in(dir);
	assert_int_equal(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);

	s.token = NULL;
	assert_int_equal(tq_wire_submit(dir, &s, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "token"));

	s = small_spec();
	s.stdin_mode = TQ_STDIN_FILE;
	s.stdin_data = big;
	s.stdin_len = TQ_WIRE_SPEC_MAX - 8;
	assert_int_equal(tq_wire_submit(dir, &s, 1000, &id, &existed, &err), TQ_WIRE_NOT_SENT);
	assert_non_null(strstr(err.msg, "over"));

	s = small_spec();
	assert_int_equal(tq_wire_submit(dir, &s, 0, &id, &existed, &err), TQ_WIRE_NOT_SENT);

	/* none of them connected */
	assert_int_equal(accept4(lfd, NULL, NULL, SOCK_CLOEXEC), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(lfd);
	free(big);
	th_rmtree(dir);
}

static void test_submit_stored(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	struct server *s = *state;
	int64_t id;
	int existed;

	server_start(s, ANSWER_OK, NULL, 0);
	if (submit_to(s->dir, 5000, &id, &existed, &err) != TQ_WIRE_STORED)
		fail_msg("submit: %s", err.msg);
	assert_int_equal(id, 42);
	assert_int_equal(existed, 0);
	server_finish(s);
}

static void test_submit_refused(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	struct server *s = *state;
	int64_t id;
	int existed;

	server_start(s, ANSWER_ERR, NULL, 0);
	assert_int_equal(submit_to(s->dir, 5000, &id, &existed, &err), TQ_EINVAL);
	assert_int_equal(err.code, TQ_EINVAL);
	assert_string_equal(err.msg, "no command given");
	assert_int_equal(id, 0);
	server_finish(s);
}

static void test_submit_closed(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	struct server *s = *state;
	int64_t id;
	int existed;

	server_start(s, ANSWER_CLOSE, NULL, 0);
	assert_int_equal(submit_to(s->dir, 5000, &id, &existed, &err), TQ_WIRE_LOST);
	assert_non_null(strstr(err.msg, "closed"));
	assert_int_equal(id, 0);
	server_finish(s);
}

static void test_submit_timeout(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	struct server *s = *state;
	int64_t id, t0;
	int existed;

	server_start(s, ANSWER_NOTHING, NULL, 0);
	t0 = tq_mono_ms();
	assert_int_equal(submit_to(s->dir, 200, &id, &existed, &err), TQ_WIRE_LOST);
	assert_true(tq_mono_ms() - t0 >= 200);
	assert_non_null(strstr(err.msg, "timed out"));
	server_finish(s);
}

static size_t frame_of(uint8_t *buf, const char *magic, const char *text, size_t n)
{
	memcpy(buf, magic, 4);
	put32(buf + 4, (uint32_t)n);
	memcpy(buf + 8, text, n);
	return 8 + n;
}

/* Answers the client must take as they are, and garbage that is LOST. */
static void test_submit_answers(void **state)
{
	static const struct {
		const char *magic;
		const char *text;
		size_t len; /* 0: strlen(text) */
		int rc;
		int64_t id;
		int existed;
	} cases[] = {
		{ "TQR3", "OK 42 1", 0, TQ_WIRE_STORED, 42, 1 },
		{ "TQR3", "OK 9223372036854775807 0", 0, TQ_WIRE_STORED, INT64_MAX, 0 },
		{ "TQR3", "ERR -15 cap", 0, TQ_ECAP, 0, 0 },
		{ "TQR3", "ERR -12 ", 0, TQ_EEXIST, 0, 0 },
		/* a version 1 or 2 supervisor's answer frame, read as well */
		{ "TQR1", "OK 42 1", 0, TQ_WIRE_STORED, 42, 1 },
		{ "TQR1", "ERR -15 cap", 0, TQ_ECAP, 0, 0 },
		/* a supervisor of another version that could not read us: what
		 * versions 1 and 2 answer a version 3 request, what a version 4
		 * would answer a version 5; any decoding error (they all start
		 * "wire: ") */
		{ "TQR1", "ERR -1 wire: bad magic (not a TQS1 frame)", 0, TQ_WIRE_UNREAD, 0, 0 },
		{ "TQR1", "ERR -1 wire: 32 bytes left over after the last field (token)", 0,
		  TQ_WIRE_UNREAD, 0, 0 },
		{ "TQR3", "ERR -1 wire: request version 5 is newer than this taskq's (4)", 0,
		  TQ_WIRE_UNREAD, 0, 0 },
		/* answers this taskq cannot read: told apart from no answer at
		 * all (LOST), as the client says why it stores the task itself */
		{ "TQR4", "OK 42 1", 0, TQ_WIRE_STORED, 42, 1 },
		{ "TQR5", "OK 42 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR9", "ERR -1 wire: anything", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR2", "OK 42 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR0", "OK 42 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQS3", "OK 42 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQS1", "OK 42 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "HELLO", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 42", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 42 2", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 42 0 ", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 0 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK -1 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 9223372036854775808 0", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "OK 42 0\0", 8, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "ERR 5 positive", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "ERR -0 zero", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "ERR -17 unknown", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "ERR -1", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR3", "ERR -1 two\nlines", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ "TQR1", "HELLO", 0, TQ_WIRE_GARBLED, 0, 0 },
		{ NULL, "garbage, and more", 0, TQ_WIRE_GARBLED, 0, 0 },
		/* fewer bytes than a header, then EOF: no answer */
		{ NULL, "garbage", 0, TQ_WIRE_LOST, 0, 0 },
		{ NULL, "TQR3", 0, TQ_WIRE_LOST, 0, 0 },
	};
	struct server *s = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tq_err err = TQ_ERR_INIT;
		uint8_t buf[256];
		size_t n = cases[i].len ? cases[i].len : strlen(cases[i].text), blen;
		int64_t id;
		int existed, rc;

		if (cases[i].magic)
			blen = frame_of(buf, cases[i].magic, cases[i].text, n);
		else
			memcpy(buf, cases[i].text, blen = n);
		server_start(s, ANSWER_RAW, buf, blen);
		rc = submit_to(s->dir, 5000, &id, &existed, &err);
		if (rc != cases[i].rc)
			fail_msg("answer \"%s\": %d, not %d (%s)", cases[i].text, rc, cases[i].rc,
				 err.msg);
		if (rc == TQ_WIRE_STORED) {
			assert_int_equal(id, cases[i].id);
			assert_int_equal(existed, cases[i].existed);
		} else {
			assert_int_equal(id, 0);
		}
		if (rc < 0 || rc == TQ_WIRE_UNREAD)
			assert_string_equal(err.msg, strchr(cases[i].text + 4, ' ') + 1);
		if (rc < 0)
			assert_int_equal(err.code, rc);
		if (rc == TQ_WIRE_GARBLED && strncmp(err.msg, "wire: ", 6) != 0)
			fail_msg("answer \"%s\": \"%s\"", cases[i].text, err.msg);
		if (rc == TQ_WIRE_GARBLED && cases[i].magic && cases[i].magic[3] == '5')
			assert_string_equal(err.msg,
					    "wire: answer version 5 is newer than this taskq's (4)");
		server_finish(s);
	}
}

/*
 * A supervisor of another version refuses a "TQS3" request from its header
 * and closes without reading the rest: with a request larger than the
 * socket's buffer the send then fails, and the client still reads the
 * answer that came before, UNREAD (it stores the task itself, saying why),
 * not LOST.
 */
static void test_submit_refused_from_the_header(void **state)
{
	static const char old[] = "ERR -1 wire: bad magic (not a TQS1 frame)";
	struct tq_task_spec spec = small_spec();
	struct tq_err err = TQ_ERR_INIT;
	struct server *s = *state;
	uint8_t buf[256];
	size_t blen = frame_of(buf, "TQR1", old, strlen(old));
	void *big = calloc(1, 2u << 20);
	int64_t id;
	int existed;

	assert_non_null(big);
	server_start(s, ANSWER_EARLY, buf, blen);
	spec.stdin_mode = TQ_STDIN_FILE;
	spec.stdin_data = big;
	spec.stdin_len = 2u << 20; /* over any socket buffer */
	assert_int_equal(tq_wire_submit(s->dir, &spec, 5000, &id, &existed, &err),
			 TQ_WIRE_UNREAD);
	assert_string_equal(err.msg, "wire: bad magic (not a TQS1 frame)");
	assert_int_equal(id, 0);
	server_finish(s);

	/* the same with a small request, which the send got out whole */
	server_start(s, ANSWER_EARLY, buf, blen);
	assert_int_equal(submit_to(s->dir, 5000, &id, &existed, &err), TQ_WIRE_UNREAD);
	assert_string_equal(err.msg, "wire: bad magic (not a TQS1 frame)");
	server_finish(s);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_full),
		cmocka_unit_test(test_round_trip_minimal),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_decode_bad_strings),
		cmocka_unit_test(test_decode_counts),
		cmocka_unit_test(test_decode_enums),
		cmocka_unit_test(test_decode_trailing),
		cmocka_unit_test(test_decode_versions),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_frame_good),
		cmocka_unit_test(test_frame_large),
		cmocka_unit_test(test_frame_bad_magic),
		cmocka_unit_test(test_frame_versions),
		cmocka_unit_test(test_encode_header),
		cmocka_unit_test(test_frame_oversize),
		cmocka_unit_test(test_frame_eof),
		cmocka_unit_test(test_frame_deadline),
		cmocka_unit_test(test_frame_pieces),
		cmocka_unit_test(test_write_closed_peer),
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_answer_versions),
		cmocka_unit_test(test_submit_no_socket),
		cmocka_unit_test(test_submit_never_through_a_symlink),
		cmocka_unit_test(test_submit_not_sent),
		cmocka_unit_test_setup_teardown(test_submit_stored, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_submit_refused, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_submit_closed, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_submit_timeout, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_submit_answers, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_submit_refused_from_the_header, server_setup,
						server_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
