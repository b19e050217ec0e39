/*
 * cmd_log.c - reading a task's output: `taskq log ID` (pages of lines,
 * --follow) and `taskq poll ID` (what arrived since this reader's last
 * poll), and the line printer that submit --wait shares.
 *
 * Reading needs no supervisor and writes nothing but poll's cursor: the log
 * (queue/logstore.h) is read while its worker appends to it, and only whole
 * records are ever seen. Ordering hazard, everywhere here: read the task's
 * state BEFORE its log. The worker closes the log before it records the
 * end, so a final state read first means the log read after it is
 * complete; the other order could report "succeeded" and miss the last
 * lines.
 *
 * Output: exact bytes when stdout is not a terminal or with --raw (so
 * `taskq log 5 --offset 0 > out` is the task's output byte for byte);
 * escaped when it is a terminal (control characters, invalid UTF-8 and
 * "\r" progress bars cannot act on it); JSON lines with --json.
 */
#include "cli.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ops/poll.h"
#include "queue/logstore.h"

#define CLI_LOG_TAIL 200                  /* lines `taskq log ID` shows */

/* ------------------------------------------------------------------ */
/* Printing lines (shared with submit --wait; see cli.h)              */

void cli_lines_init(struct cli_lines *p, FILE *out, FILE *err, int raw)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->err = err;
	p->esc_out = !raw && isatty(fileno(out));
	p->esc_err = !raw && isatty(fileno(err));
	if (p->esc_out || p->esc_err)
		cli_output_init(); /* UTF-8 text passes through cli_esc */
}

void cli_lines_release(struct cli_lines *p)
{
	free(p->tmp);
	p->tmp = NULL;
	p->tmp_cap = 0;
}

/* p->tmp holding n bytes of s and a NUL. */
static char *scratch(struct cli_lines *p, const char *s, size_t n)
{
	if (n + 1 > p->tmp_cap) {
		size_t cap = n + 1 > 4096 ? n + 1 : 4096;
		char *t = realloc(p->tmp, cap);
		if (t == NULL)
			return NULL;
		p->tmp = t;
		p->tmp_cap = cap;
	}
	memcpy(p->tmp, s, n);
	p->tmp[n] = '\0';
	return p->tmp;
}

/* The n bytes at s escaped to f. cli_esc stops at a NUL, so the text goes
 * in NUL-free pieces and each NUL is written as "\000" between them. */
static int put_escaped(struct cli_lines *p, FILE *f, const char *s, size_t n)
{
	while (n > 0) {
		const char *z = memchr(s, '\0', n);
		size_t k = z != NULL ? (size_t)(z - s) : n;
		char *e;

		if (k > 0) {
			if (scratch(p, s, k) == NULL || (e = cli_esc(p->tmp, 0, NULL)) == NULL)
				return TQ_ENOMEM;
			fputs(e, f);
			free(e);
		}
		if (z != NULL) {
			fputs("\\000", f);
			k++;
		}
		s += k;
		n -= k;
	}
	return 0;
}

static int put_json(struct cli_lines *p, const struct tq_log_line *l)
{
	int oom = 0;
	cJSON *o = cli_log_line_json(l, &oom);

	if (!oom)
		oom = cli_json_print(o, p->out) < 0;
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

int cli_lines_put(struct cli_lines *p, const struct tq_log_line *l)
{
	int is_err = l->stream == TQ_STREAM_STDERR;
	FILE *f = is_err ? p->err : p->out;
	FILE *other = is_err ? p->out : p->err;
	int rc = 0;

	if (p->rc < 0)
		return p->rc;
	if (p->json) {
		rc = put_json(p, l);
	} else {
		/* two destinations (submit --wait): keep them in order */
		if (f != other)
			fflush(other);
		if (is_err ? p->esc_err : p->esc_out) {
			rc = put_escaped(p, f, l->text, l->len);
			fputs(l->newline ? "\n" : "\\c\n", f);
		} else {
			fwrite(l->text, 1, l->len, f);
			if (l->newline)
				fputc('\n', f);
			p->open = !l->newline;
		}
	}
	if (rc < 0)
		return p->rc = rc;
	p->count++;
	p->last = l->n;
	return 0;
}

int cli_lines_cb(const struct tq_log_line *l, void *arg)
{
	return cli_lines_put(arg, l) < 0;
}

/* ------------------------------------------------------------------ */
/* JSON                                                               */

static char *base64_n(const unsigned char *s, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < len ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* "text" through cli_json_bytes (U+FFFD and text_base64 for invalid
 * UTF-8). A NUL would end its C string early, so NULs are handed over as
 * 0xff (never valid UTF-8: it becomes U+FFFD), and text_base64 is then
 * replaced by the exact bytes. */
static void text_json(cJSON *o, const struct tq_log_line *l, int *oom)
{
	char *copy = malloc(l->len + 1), *b64;
	cJSON *item;
	int nul = memchr(l->text, '\0', l->len) != NULL;

	if (copy == NULL) {
		*oom = 1;
		return;
	}
	memcpy(copy, l->text, l->len);
	copy[l->len] = '\0';
	for (size_t i = 0; nul && i < l->len; i++)
		if (copy[i] == '\0')
			copy[i] = (char)0xff;
	cli_json_bytes(o, "text", copy, oom);
	free(copy);
	if (!nul || *oom)
		return;
	b64 = base64_n((const unsigned char *)l->text, l->len);
	item = b64 != NULL ? cJSON_CreateString(b64) : NULL;
	if (item == NULL || !cJSON_ReplaceItemInObject(o, "text_base64", item)) {
		cJSON_Delete(item);
		*oom = 1;
	}
	free(b64);
}

cJSON *cli_log_line_json(const struct tq_log_line *l, int *oom)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	cli_json_int(o, "n", l->n, 1, oom);
	cli_json_name(o, "stream", l->stream == TQ_STREAM_STDERR ? "stderr" : "stdout", oom);
	text_json(o, l, oom);
	if (!l->newline)
		cli_json_bool(o, "newline", 0, oom);
	return o;
}

void cli_json_task_end(cJSON *o, const struct tq_task *t, int *oom)
{
	int status = cli_task_status(t);

	cli_json_name(o, "state", tq_state_name(t->state), oom);
	cli_json_name(o, "outcome", t->outcome != TQ_OUT_NONE ? tq_outcome_name(t->outcome)
							       : NULL, oom);
	cli_json_int(o, "exit_code", t->exit_code, t->exit_code >= 0, oom);
	cli_json_int(o, "signal", t->signal, t->signal > 0, oom);
	cli_json_int(o, "exit_status", status, status >= 0, oom);
	cli_json_bytes(o, "reason", t->reason, oom);
}

cJSON *cli_task_summary_json(const struct tq_task *t, int *oom)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	cli_json_int(o, "id", t->id, 1, oom);
	cli_json_bytes(o, "name", t->name, oom);
	cli_json_task_end(o, t, oom);
	cli_json_name(o, "category", t->category != TQ_CAT_NONE ?
		      tq_category_name(t->category) : NULL, oom);
	cli_json_int(o, "attempt", t->attempt, 1, oom);
	return o;
}

/* ------------------------------------------------------------------ */
/* Shared by log and poll                                             */

/* Open the queue and read task id. On failure the error is printed and
 * its exit code returned; *q is then NULL. A store that cannot be reached
 * is tried again for retry_ms (a --follow waits for a task anyway). */
static int open_task(const struct cli_ctx *c, int64_t id, unsigned flags, int64_t retry_ms,
		     struct tq_queue **q, struct tq_task *t)
{
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	memset(t, 0, sizeof(*t));
	if ((rc = cli_open_retry(c, flags | TQ_OPEN_NOCREATE, retry_ms, q)) != CLI_OK)
		return rc;
	if (tq_queue_get(*q, id, 0, t, &err) < 0) {
		tq_queue_close(*q);
		*q = NULL;
		return cli_fail(c, &err);
	}
	return CLI_OK;
}

/* A task that has started but has no log file: its log was deleted (by
 * hand, or with logs/) after it ended. Its output is gone; say so rather
 * than print nothing as for a task that printed nothing. */
static int log_missing(struct tq_queue *q, const struct tq_task *t, int64_t total)
{
	return total == 0 && t->attempt > 0 && tq_log_exists(q, t->id) == 0;
}

/*
 * Whether some of task t's output is missing because its log could not be
 * written (a full disk, a file size limit: the runner's outcome
 * output_lost, or a reason that says so after a timeout or a kill). *which
 * gets the last such attempt and note its reason. 0 when none is known.
 */
static int output_missing(struct tq_queue *q, const struct tq_task *t, int *which,
			  char *note, size_t n)
{
	struct tq_attempt *a = NULL;
	size_t na = 0;
	int found = 0;

	if (t->attempt <= 1) {
		if (t->outcome != TQ_OUT_OUTPUT_LOST &&
		    (t->reason == NULL || strstr(t->reason, TQ_OUTPUT_LOST_REASON) == NULL))
			return 0;
		*which = t->attempt;
		snprintf(note, n, "%s", t->reason ? t->reason : TQ_OUTPUT_LOST_REASON);
		return 1;
	}
	/* a retried task's log holds every attempt: any of them may miss some */
	if (tq_queue_attempts(q, t->id, &a, &na, NULL) < 0)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (a[i].outcome == TQ_OUT_OUTPUT_LOST ||
		    (a[i].reason != NULL && strstr(a[i].reason, TQ_OUTPUT_LOST_REASON))) {
			found = 1;
			*which = a[i].attempt;
			snprintf(note, n, "%s", a[i].reason ? a[i].reason : TQ_OUTPUT_LOST_REASON);
		}
	tq_attempt_list_free(a, na);
	return found;
}

/* "failed (output_overflow), exit status 1", "running". */
static void describe_state(const struct tq_task *t, char *buf, size_t n)
{
	const char *state = tq_state_name(t->state);
	const char *outcome = tq_outcome_name(t->outcome);
	int status = cli_task_status(t);

	if (status < 0)
		snprintf(buf, n, "%s", state);
	else if (t->outcome != TQ_OUT_NONE && strcmp(state, outcome) != 0)
		snprintf(buf, n, "%s (%s), exit status %d", state, outcome, status);
	else
		snprintf(buf, n, "%s, exit status %d", state, status);
}

/* ------------------------------------------------------------------ */
/* log                                                                */

static const char log_help[] =
	"Lines of the task's output, stdout and stderr in the order taskq read them.\n"
	"Lines are numbered from 1 (in --json and in the hints); with --stream, in\n"
	"that stream's own numbering.\n"
	"Lines of one stream keep their order. Across the two (two pipes of 8 KiB,\n"
	"read in turn), when line X of one stream was written before line Y of the\n"
	"other, X comes first unless fewer than 8 KiB went to X's stream between\n"
	"them (64 KiB for Y among the first 8 KiB of a stream that began after the\n"
	"other had written alone: a stream alone gets a wide pipe). For the exact\n"
	"order, submit `sh -c 'CMD 2>&1'` (one stream).\n"
	"An agent CLI's pipes (ask; claude, gemini, codex, opencode) hold 1 MiB\n"
	"and so does its bound: those CLIs lose what a pipe has not taken at exit.\n"
	"\n"
	"Options:\n"
	"  --offset N      skip the first N lines (as SQL's OFFSET: --offset 0 starts\n"
	"                  at the first line, --offset 3 --limit 1 is the fourth);\n"
	"                  without --limit, read to the end (--offset 0: the whole\n"
	"                  output)\n"
	"  --limit M       at most M lines; alone, the last M lines\n"
	"  --stream S      only stdout or only stderr\n"
	"  -f, --follow    then print new lines as they arrive until the task ends,\n"
	"                  and exit with the task's exit status (below); with\n"
	"                  --offset or --limit, not both. An end the output does\n"
	"                  not explain gets one line on stderr (\"task N could not\n"
	"                  start: ...\", timed out, was killed, ...). Ctrl-C (or\n"
	"                  SIGTERM, SIGHUP) stops following, not the task: exit\n"
	"                  128+N (130)\n"
	"  --raw           the exact bytes, also on a terminal\n"
	"  --json          one JSON object per line: {\"n\":N,\"stream\":\"stdout\",\n"
	"                  \"text\":\"...\"}, plus \"newline\":false for a line that had\n"
	"                  no newline, and \"text_base64\" (the exact bytes) when the\n"
	"                  line is not valid UTF-8 or holds a NUL (\"text\" then has\n"
	"                  U+FFFD for those bytes)\n"
	"\n"
	"With neither --offset nor --limit: the last 200 lines, and when there are\n"
	"more, a hint on stderr (\"lines 1801-2000 of 2000; --offset/--limit to\n"
	"page\"). An offset past the end prints nothing. A task with no output yet\n"
	"prints nothing; that is not an error.\n"
	"\n"
	"When stdout is not a terminal, or with --raw, each line is written as its\n"
	"exact bytes with its newline, and a line that had none (the last bytes of\n"
	"a stream, a partial line flushed after a second, a piece of a line longer\n"
	"than 64K) without one: `taskq log ID --offset 0 > out` reproduces the\n"
	"output byte for byte. On a terminal, control characters, backslashes\n"
	"and bytes that are not UTF-8 are escaped C-style (\\r, \\033, \\000,\n"
	"\\377, \\\\), and a line that had no newline ends in \\c.\n"
	"\n"
	"Exit status: 0, or with --follow the task's exit status, the same for\n"
	"submit --wait:\n"
	"  0        succeeded\n"
	"  N        failed with exit code N\n"
	"  128+N    died by signal N (or was killed by taskq kill with signal N)\n"
	"  124      timed out (--timeout), or stalled (--stall-timeout) on its\n"
	"           last attempt\n"
	"  127      could not be started (command not found, cwd gone)\n"
	"  1        output cap reached (output_overflow), lost, canceled\n"
	"  N / 1    its output could not all be stored (output_lost): its own exit\n"
	"           code N or 128+N for a signal, 1 when it exited 0\n"
	"  2        (from taskq itself) no such task, bad option\n"
	"\n"
	"A task that ran but has no log file (logs/ID.log deleted after it ended):\n"
	"one line saying so, exit 1. A log deleted while its task ran is started\n"
	"again; its first line says the lines before it were lost, and --follow\n"
	"(and poll) go on from that line.\n"
	"\n"
	"A task whose log could not be written (a full disk, a file size limit)\n"
	"ran on to its end, its output after the failure dropped: it ends failed\n"
	"(output_lost), not retried, with a reason that names the failed call,\n"
	"its errno and how many bytes were kept; log prints what was kept, then\n"
	"one line on stderr: \"task ID: output missing: attempt N: ...\" (exit 0).\n";

enum {
	OPT_OFFSET = 256, OPT_LIMIT, OPT_STREAM, OPT_FOLLOW, OPT_JSON, OPT_RAW, OPT_AS,
};

static const struct cli_opt log_opts[] = {
	{ "offset", OPT_OFFSET, 1, 0 },
	{ "limit", OPT_LIMIT, 1, 0 },
	{ "stream", OPT_STREAM, 1, 0 },
	{ "follow", OPT_FOLLOW, 0, 'f' },
	{ "json", OPT_JSON, 0, 0 },
	{ "raw", OPT_RAW, 0, 0 },
	{ NULL, 0, 0, 0 },
};

struct log_req {
	int64_t id;
	int have_id;
	int64_t offset;  /* lines to skip; -1: not given */
	int64_t limit;   /* -1: not given */
	enum tq_stream stream;
	int follow, json, raw;
};

static int take_log_opt(const struct cli_ctx *c, struct log_req *r, int k,
			const struct cli_args *a)
{
	struct tq_err err = TQ_ERR_INIT;

	switch (k) {
	case OPT_OFFSET:
		/* the store numbers lines from 1: leave room for the + 1 */
		if (tq_parse_int(a->val, 0, INT64_MAX - 1, &r->offset, &err) < 0)
			return cli_usage(c, "--offset %s (the number of lines to skip; 0 "
					 "starts at the first)", err.msg);
		return CLI_OK;
	case OPT_LIMIT:
		if (tq_parse_int(a->val, 0, INT64_MAX, &r->limit, &err) < 0)
			return cli_usage(c, "--limit %s", err.msg);
		return CLI_OK;
	case OPT_STREAM:
		if (strcmp(a->val, "stdout") == 0)
			r->stream = TQ_STREAM_STDOUT;
		else if (strcmp(a->val, "stderr") == 0)
			r->stream = TQ_STREAM_STDERR;
		else
			return cli_usage(c, "--stream \"%s\": expected stdout or stderr", a->val);
		return CLI_OK;
	case OPT_FOLLOW: r->follow = 1; return CLI_OK;
	case OPT_JSON: r->json = 1; return CLI_OK;
	case OPT_RAW: r->raw = 1; return CLI_OK;
	case CLI_OPT_ARG:
		if (r->have_id)
			return cli_usage(c, "unexpected argument \"%s\"", a->val);
		r->have_id = 1;
		return cli_parse_id(c, a->val, &r->id);
	default:
		return CLI_USAGE;
	}
}

static int parse_log(struct cli_ctx *c, struct log_req *r, int argc, char **argv)
{
	struct cli_args a;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, log_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP) {
			cli_print_help(c->cmd, stdout);
			return -1;
		}
		rc = take_log_opt(c, r, k, &a);
	}
	if (rc != CLI_OK)
		return rc;
	if (!r->have_id)
		return cli_usage_no_id(c);
	if (r->json && r->raw)
		return cli_usage(c, "give --json or --raw, not both");
	if (r->follow && r->offset >= 0 && r->limit >= 0)
		return cli_usage(c, "--follow reads to the end: give --offset or --limit, "
				 "not both");
	return CLI_OK;
}

/* On stderr, when lines before the ones shown were left out. */
static void page_hint(const struct log_req *r, const struct cli_lines *p, int64_t total)
{
	const char *s = r->stream == TQ_STREAM_STDOUT ? " (stdout)" :
			r->stream == TQ_STREAM_STDERR ? " (stderr)" : "";

	if (r->offset >= 0 || total <= p->count)
		return;
	fflush(stdout); /* after the lines, on a shared terminal */
	if (p->count == 0)
		fprintf(stderr, "%lld lines%s; --offset/--limit to page\n", (long long)total, s);
	else
		fprintf(stderr, "lines %lld-%lld of %lld%s; --offset/--limit to page\n",
			(long long)(p->last - p->count + 1), (long long)p->last,
			(long long)total, s);
}

/* After the first page: print lines from `next` on as they arrive, until
 * the task has ended. Returns its exit status (128+N when signal N ended the
 * wait), or a CLI error code. Releases f. */
static int follow(const struct cli_ctx *c, struct cli_follow *f, struct tq_queue *q,
		  const struct log_req *r, struct cli_lines *p, int64_t next)
{
	struct tq_err err = TQ_ERR_INIT;
	int how, rc = CLI_OK;

	f->stream = r->stream;
	f->lines = p;
	f->next = next;
	how = f->signal != 0 ? CLI_FOLLOW_SIGNAL : cli_follow_run(f, &err);
	if (how < 0)
		rc = err.code == TQ_ENOTFOUND
		     ? cli_runtime(c, "task %lld was removed", (long long)r->id)
		     : cli_fail(c, &err);
	else if (how == CLI_FOLLOW_SIGNAL)
		rc = 128 + f->signal; /* the reader stopped; the task goes on */
	else if (!ferror(stdout)) { /* else main's cli_finish_stdout says why */
		cli_note_output_missing(c, q, &f->task);
		cli_follow_say_end(c, &f->task);
		rc = cli_task_status(&f->task);
	}
	return rc;
}

void cli_note_output_missing(const struct cli_ctx *c, struct tq_queue *q,
			     const struct tq_task *t)
{
	char note[TQ_ERR_MAX];
	int which = 0;

	if (!output_missing(q, t, &which, note, sizeof(note)))
		return;
	fflush(stdout);
	fprintf(stderr, "taskq: %s: task %lld: output missing: attempt %d: %s\n",
		c->cmd->name, (long long)t->id, which, note);
}

static int show_log(const struct cli_ctx *c, const struct log_req *r)
{
	struct tq_err err = TQ_ERR_INIT;
	/* --offset N skips N lines: the store's ranges start at a 1-based
	 * line number, 0 meaning "the tail" */
	struct tq_log_range range = { .stream = r->stream,
				      .offset = r->offset >= 0 ? r->offset + 1 : 0,
				      .limit = r->limit, .tail = CLI_LOG_TAIL };
	struct tq_queue *q = NULL;
	struct cli_follow f;
	struct cli_lines p;
	struct tq_task t;
	int64_t total = 0, retry_ms = 0;
	int rc;

	if (r->offset < 0 && r->limit >= 0)
		range.tail = r->limit; /* --limit alone: the last M lines */
	if (r->follow && (rc = cli_retry_ms(c, &retry_ms)) != CLI_OK)
		return rc;
	if ((rc = open_task(c, r->id, 0, retry_ms, &q, &t)) != CLI_OK)
		return rc;
	cli_lines_init(&p, stdout, stdout, r->raw);
	p.json = r->json;
	cli_follow_init(&f, q, r->id);
	f.lines = &p;
	if (r->follow) /* a Ctrl-C during the first page ends the wait too */
		cli_follow_catch(&f);
	/* the file read is where --follow goes on counting lines */
	if (tq_log_read_file(q, r->id, &range, r->follow ? cli_follow_lines_cb : cli_lines_cb,
			     r->follow ? (void *)&f : (void *)&p, &total, &f.file, &err) < 0)
		rc = cli_fail(c, &err);
	else if (p.rc < 0)
		rc = cli_runtime(c, "out of memory");
	else if (!r->follow && log_missing(q, &t, total))
		rc = cli_runtime(c, "task %lld: its log file logs/%lld.log is missing (deleted?);"
				 " its output is lost", (long long)r->id, (long long)r->id);
	else if (!r->follow) /* --follow says it once the task has ended */
		cli_note_output_missing(c, q, &t);
	if (rc == CLI_OK)
		page_hint(r, &p, total);
	if (rc == CLI_OK && r->follow)
		rc = follow(c, &f, q, r, &p, range.offset > total ? range.offset : total + 1);
	cli_follow_release(&f);
	cli_lines_release(&p);
	tq_task_release(&t);
	tq_queue_close(q);
	return rc;
}

static int run_log(struct cli_ctx *c, int argc, char **argv)
{
	struct log_req r = { .offset = -1, .limit = -1, .stream = TQ_STREAM_ALL };
	int rc = parse_log(c, &r, argc, argv);

	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc; /* -1: --help was printed */
	/* raw bytes to a file or pipe: fewer, larger writes */
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 256 * 1024);
	return show_log(c, &r);
}

const struct cli_cmd cli_cmd_log = {
	.name = "log",
	.synopsis = "taskq log ID [--offset N] [--limit M] [--stream stdout|stderr]\n"
		    "            [-f|--follow] [--raw] [--json]",
	.summary = "Print a task's output, by line (the last 200 by default).",
	.help = log_help,
	.run = run_log,
};

/* ------------------------------------------------------------------ */
/* poll                                                               */

static const char poll_help[] =
	"The output that arrived since the previous poll by the same reader, then\n"
	"the task's state. Each reader (--as NAME, default \"default\") has its own\n"
	"cursor, stored in the database: it survives restarts, and readers with\n"
	"different names never take each other's lines. Polls under one name that\n"
	"run at the same time each get different lines, never the same ones twice.\n"
	"\n"
	"Options:\n"
	"  --as NAME   the reader (default: default)\n"
	"  --raw       the exact bytes, also on a terminal\n"
	"  --json      one object: {\"id\":5,\"state\":\"running\",\"outcome\":null,\n"
	"              \"exit_code\":null,\"signal\":null,\"exit_status\":null,\n"
	"              \"reason\":null,\"lines\":[{\"n\":1,\"stream\":\"stdout\",\n"
	"              \"text\":\"...\"}],\"more\":false,\"next\":2,\"total\":1}\n"
	"              (lines as in log --json; exit_status as in log --follow)\n"
	"\n"
	"One poll returns at most 1000 lines or 1M of text; \"more\" (JSON) or \"more\n"
	"waiting\" (the status line) says the next poll has lines ready. \"next\" is\n"
	"the number of the first line the next poll returns (lines count from 1;\n"
	"log --offset counts lines to skip, so log --offset NEXT-1 starts there).\n"
	"\n"
	"Without --json the new lines go to stdout exactly as `taskq log` prints\n"
	"them (so the stdouts of every poll by one reader, put together, are the\n"
	"task's output), and one status line goes to stderr:\n"
	"  task 5: running; 3 new lines (4-6 of 6)\n"
	"  task 5: failed, exit status 3; no new lines (6 in all); end of output\n"
	"  task 5: running; 1000 new lines (1-1000 of 2400); more waiting\n"
	"\n"
	"A task that ran but whose log file was deleted after it ended: the status\n"
	"line says \"its log file logs/ID.log is missing (deleted?)\" in place of\n"
	"the line count, and --json adds \"log_missing\":true. A task whose log\n"
	"could not be written (output_lost: a full disk, a file size limit): the\n"
	"status line ends \"output missing: attempt N could not store all of it\",\n"
	"and --json has \"output_missing\":true (false otherwise).\n"
	"\n"
	"Exit status: 0 whatever the task's state (it is in the output); 2 for an\n"
	"unknown task.\n";

static const struct cli_opt poll_opts[] = {
	{ "as", OPT_AS, 1, 0 },
	{ "json", OPT_JSON, 0, 0 },
	{ "raw", OPT_RAW, 0, 0 },
	{ NULL, 0, 0, 0 },
};

struct poll_req {
	int64_t id;
	int have_id;
	const char *reader;
	int json, raw;
};

static int poll_json(const struct poll_req *r, const struct tq_task *t,
		     const struct tq_ops_poll *g, int64_t shown, int64_t total, int missing,
		     int lost)
{
	cJSON *o = NULL, *lines = cJSON_CreateArray();
	int64_t next = shown + (int64_t)g->n + 1;
	int oom = lines == NULL;

	for (size_t i = 0; !oom && i < g->n; i++) {
		struct tq_log_line l = tq_ops_poll_line(g, i);
		cJSON *item = cli_log_line_json(&l, &oom);
		if (item != NULL && !cJSON_AddItemToArray(lines, item)) {
			cJSON_Delete(item);
			oom = 1;
		}
	}
	if (!oom && (o = cJSON_CreateObject()) == NULL)
		oom = 1;
	if (!oom) {
		cli_json_int(o, "id", r->id, 1, &oom);
		cli_json_task_end(o, t, &oom);
		if (cJSON_AddItemToObject(o, "lines", lines))
			lines = NULL; /* o owns it */
		else
			oom = 1;
		cli_json_bool(o, "more", next <= total, &oom);
		cli_json_int(o, "next", next, 1, &oom);
		cli_json_int(o, "total", total, 1, &oom);
		if (missing)
			cli_json_bool(o, "log_missing", 1, &oom);
		cli_json_bool(o, "output_missing", lost > 0, &oom);
	}
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(o);
	cJSON_Delete(lines);
	return oom ? TQ_ENOMEM : 0;
}

static int poll_human(const struct poll_req *r, const struct tq_task *t,
		      const struct tq_ops_poll *g, int64_t shown, int64_t total, int missing,
		      int lost)
{
	int64_t next = shown + (int64_t)g->n + 1;
	struct cli_lines p;
	char st[128];
	int rc = 0;

	cli_lines_init(&p, stdout, stdout, r->raw);
	for (size_t i = 0; rc == 0 && i < g->n; i++) {
		struct tq_log_line l = tq_ops_poll_line(g, i);
		rc = cli_lines_put(&p, &l);
	}
	cli_lines_release(&p);
	fflush(stdout);
	describe_state(t, st, sizeof(st));
	/* on a line of its own even when stdout and stderr are one file and
	 * the output ended without a newline */
	fprintf(stderr, "%stask %lld: %s; ", p.open ? "\n" : "", (long long)r->id, st);
	if (missing)
		fprintf(stderr, "its log file logs/%lld.log is missing (deleted?)",
			(long long)r->id);
	else if (g->n == 0)
		fprintf(stderr, "no new lines (%lld in all)", (long long)total);
	else
		fprintf(stderr, "%zu new line%s (%lld-%lld of %lld)", g->n, g->n == 1 ? "" : "s",
			(long long)shown + 1, (long long)next - 1, (long long)total);
	if (next <= total)
		fputs("; more waiting", stderr);
	else if (tq_state_final(t->state))
		fputs("; end of output", stderr);
	if (lost > 0)
		fprintf(stderr, "; output missing: attempt %d could not store all of it "
			"(taskq show %lld says why)", lost, (long long)r->id);
	fputc('\n', stderr);
	return rc;
}

static int take_poll_opt(const struct cli_ctx *c, struct poll_req *r, int k,
			 const struct cli_args *a)
{
	switch (k) {
	case OPT_AS:
		if (*a->val == '\0')
			return cli_usage(c, "--as: empty reader name");
		if (strlen(a->val) >= TQ_NAME_MAX)
			return cli_usage(c, "--as \"%.40s...\": longer than %d bytes", a->val,
					 TQ_NAME_MAX - 1);
		r->reader = a->val;
		return cli_check_text(c, "--as", a->val);
	case OPT_JSON: r->json = 1; return CLI_OK;
	case OPT_RAW: r->raw = 1; return CLI_OK;
	case CLI_OPT_ARG:
		if (r->have_id)
			return cli_usage(c, "unexpected argument \"%s\"", a->val);
		r->have_id = 1;
		return cli_parse_id(c, a->val, &r->id);
	default:
		return CLI_USAGE;
	}
}

static int do_poll(const struct cli_ctx *c, const struct poll_req *r)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_ops_poll g;
	struct tq_task t;
	int rc, missing, lost = 0;
	char note[TQ_ERR_MAX];

	memset(&g, 0, sizeof(g));
	if ((rc = open_task(c, r->id, 0, 0, &q, &t)) != CLI_OK)
		return rc;
	tq_task_release(&t);
	if ((rc = tq_ops_poll(q, r->id, r->reader, &g, &err)) < 0) {
		rc = cli_fail(c, &err);
	} else {
		missing = log_missing(q, &g.task, g.total);
		if (!output_missing(q, &g.task, &lost, note, sizeof(note)))
			lost = 0;
		if ((r->json ? poll_json(r, &g.task, &g, g.shown, g.total, missing, lost)
			     : poll_human(r, &g.task, &g, g.shown, g.total, missing, lost)) < 0)
			rc = cli_runtime(c, "out of memory");
	}
	tq_ops_poll_release(&g);
	tq_queue_close(q);
	return rc;
}

static int run_poll(struct cli_ctx *c, int argc, char **argv)
{
	struct poll_req r = { .reader = "default" };
	struct cli_args a;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, poll_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(c->cmd, stdout);
		rc = take_poll_opt(c, &r, k, &a);
	}
	if (rc != CLI_OK)
		return rc;
	if (!r.have_id)
		return cli_usage_no_id(c);
	if (r.json && r.raw)
		return cli_usage(c, "give --json or --raw, not both");
	return do_poll(c, &r);
}

const struct cli_cmd cli_cmd_poll = {
	.name = "poll",
	.synopsis = "taskq poll ID [--as NAME] [--raw] [--json]",
	.summary = "Print a task's state and the output since this reader's last poll.",
	.help = poll_help,
	.run = run_poll,
};
