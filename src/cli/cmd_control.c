/*
 * cmd_control.c - reaching a running task: `taskq kill ID` and
 * `taskq write ID DATA`.
 *
 * The CLI never signals a task itself: ops/kill.h stores the request and
 * pokes the task's worker (through its identity); this file parses, calls
 * and says what happened.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ops/kill.h"

enum { O_SIGNAL = 256, O_NOWAIT, O_EOF, O_LINE, O_FILE };

#define WRITE_MAX ((int64_t)64 * 1024 * 1024) /* one `taskq write` */
/* How long kill waits for the end beyond the task's kill grace. */
#define KILL_WAIT_MARGIN_MS 15000

static const struct { const char *name; int sig; } signals[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "ALRM", SIGALRM },
	{ "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "ABRT", SIGABRT },
};

/* "TERM", "SIGTERM", "term" or "15". */
static int parse_signal(const char *s, int *sig)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	if (isdigit((unsigned char)s[0])) {
		if (tq_parse_int(s, 1, NSIG - 1, &v, &err) < 0)
			return -1;
		*sig = (int)v;
		return 0;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (strcasecmp(s, signals[i].name) == 0) {
			*sig = signals[i].sig;
			return 0;
		}
	return -1;
}

static int kill_one(const struct cli_ctx *c, struct tq_queue *q, int64_t id, int sig,
		    int wait)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	int rc = tq_ops_kill_request(q, c->home, id, sig,
				     "canceled by taskq kill before it started", &k, &err);

	switch (rc) {
	case TQ_OPS_KILL_RECORDING:
		return cli_runtime(c, "task %lld has already ended (%s); its end is being "
				   "recorded", (long long)id, k.how);
	case TQ_OPS_KILL_NOT_RUNNING:
		return cli_runtime(c, "task %lld has already ended (%s)", (long long)id,
				   tq_state_name(k.state));
	case TQ_OPS_KILL_CANCELED:
		printf("%lld canceled (it had not started)\n", (long long)id);
		return CLI_OK;
	case TQ_OPS_KILL_NO_WORKER:
		return cli_runtime(c, "task %lld is running, but its worker is not alive; it is "
				   "recovered when its lease expires (taskq serve)", (long long)id);
	case TQ_OPS_KILL_REQUESTED:
		break;
	default:
		return cli_fail(c, &err);
	}
	if (!wait) {
		printf("%lld: kill requested (%s)\n", (long long)id, strsignal(sig));
		return CLI_OK;
	}
	rc = tq_ops_kill_wait(q, c->home, id,
			      tq_mono_ms() + k.kill_grace_ms + KILL_WAIT_MARGIN_MS, &k, &err);
	if (rc == TQ_OPS_END_RECORDING) {
		printf("%lld ended (%s); its end is being recorded\n", (long long)id, k.how);
		return CLI_OK;
	}
	if (rc != TQ_OPS_ENDED) /* still running, gone meanwhile, or the store failed */
		return cli_runtime(c, "task %lld: kill requested, but it is still running",
				   (long long)id);
	printf("%lld %s\n", (long long)id, tq_state_name(k.state));
	return CLI_OK;
}

static int run_kill(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "signal", O_SIGNAL, 1, 's' }, { "no-wait", O_NOWAIT, 0, 0 },
		{ NULL, 0, 0, 0 },
	};
	struct tq_queue *q = NULL;
	struct cli_args a;
	int64_t ids[64];
	size_t n = 0;
	int k, sig = SIGTERM, wait = 1, rc = CLI_OK, worst = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_SIGNAL:
			if (parse_signal(a.val, &sig) < 0)
				return cli_usage(c, "%s \"%s\": expected a signal such as TERM, "
						 "INT, KILL or 9", a.flag, a.val);
			break;
		case O_NOWAIT: wait = 0; break;
		case CLI_OPT_ARG:
			if (n == sizeof(ids) / sizeof(ids[0]))
				return cli_usage(c, "at most %zu ids at once", n);
			rc = cli_parse_id(c, a.val, &ids[n++]);
			break;
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (n == 0)
		return cli_usage_no_id(c);
	if ((rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = kill_one(c, q, ids[i], sig, wait);
		worst = rc > worst ? rc : worst;
	}
	tq_queue_close(q);
	return worst;
}

/* ------------------------------------------------------------------ */
/* write                                                              */

static int read_all(const struct cli_ctx *c, const char *path, char **buf, size_t *len)
{
	int fd = strcmp(path, "-") == 0 ? 0 : tq_open(path, O_RDONLY, 0);
	size_t cap = 65536;
	ssize_t r;

	*len = 0;
	if (fd < 0)
		return cli_usage(c, "--file %s: %s", path, strerror(errno));
	if ((*buf = malloc(cap)) == NULL)
		return cli_runtime(c, "out of memory");
	while ((r = tq_read(fd, *buf + *len, cap - *len)) > 0) {
		*len += (size_t)r;
		if ((int64_t)*len > WRITE_MAX) {
			if (fd != 0)
				tq_close(fd);
			return cli_usage(c, "input is larger than 64M");
		}
		if (*len == cap) {
			char *nb = realloc(*buf, cap * 2);
			if (nb == NULL)
				return cli_runtime(c, "out of memory");
			*buf = nb;
			cap *= 2;
		}
	}
	if (fd != 0)
		tq_close(fd);
	if (r < 0)
		return cli_runtime(c, "read %s: %s", path, strerror(errno));
	return CLI_OK;
}

static int run_write(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "eof", O_EOF, 0, 0 }, { "line", O_LINE, 0, 'l' }, { "file", O_FILE, 1, 'f' },
		{ NULL, 0, 0, 0 },
	};
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	const char *data = NULL, *file = NULL;
	char *buf = NULL;
	struct cli_args a;
	int64_t id = 0;
	size_t len = 0;
	int k, eof = 0, line = 0, have_id = 0, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_EOF: eof = 1; break;
		case O_LINE: line = 1; break;
		case O_FILE: file = a.val; break;
		case CLI_OPT_ARG:
			if (!have_id)
				rc = cli_parse_id(c, a.val, &id), have_id = 1;
			else if (data == NULL)
				data = a.val;
			else
				rc = cli_usage(c, "unexpected argument \"%s\" (quote DATA)", a.val);
			break;
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (!have_id)
		return cli_usage_no_id(c);
	if (data != NULL && file != NULL)
		return cli_usage(c, "give DATA or --file, not both");
	if (data == NULL && file == NULL && !eof)
		return cli_usage(c, "nothing to write: give DATA, --file F, or --eof");
	if (file != NULL && (rc = read_all(c, file, &buf, &len)) != CLI_OK) {
		free(buf);
		return rc;
	}
	if (data != NULL) {
		len = strlen(data);
		if ((buf = malloc(len + 2)) == NULL)
			return cli_runtime(c, "out of memory");
		memcpy(buf, data, len);
	}
	if (line) {
		char *nb = realloc(buf, len + 1);
		if (nb == NULL) {
			free(buf);
			return cli_runtime(c, "out of memory");
		}
		buf = nb;
		buf[len++] = '\n';
	}
	rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q);
	if (rc == CLI_OK && tq_ops_write(q, id, buf, len, eof, &err) < 0)
		rc = cli_fail(c, &err);
	free(buf);
	tq_queue_close(q);
	return rc;
}

const struct cli_cmd cli_cmd_kill = {
	.name = "kill",
	.synopsis = "taskq kill ID... [--signal SIG] [--no-wait]",
	.summary = "Stop running tasks (and cancel ones not started yet).",
	.help =
	"Sends SIG (default TERM) to the task's process group, then KILL to the group\n"
	"after the task's kill grace (--kill-grace at submit, default 5s) if it has not\n"
	"exited. The task ends `killed`. A task that has not started is canceled.\n"
	"Waits until the task has ended (at most its kill grace + 15s).\n"
	"\n"
	"A task whose process has ended while its end could not be written yet\n"
	"(the database was locked or the disk full: its worker keeps the end in\n"
	"HOME/ends/ and writes it as soon as it can) is not waited for: kill says\n"
	"so in one line, \"ID ended (OUTCOME, exit code N); its end is being\n"
	"recorded\", exit 0 when that end came after this kill, exit 1 when it had\n"
	"ended before (as for any task that has already ended).\n"
	"\n"
	"A running task whose worker has died (killed, or exited and not reaped) is\n"
	"not waited for either: kill says so, exit 1; the supervisor recovers the\n"
	"task (and ends its processes) when its lease expires.\n"
	"\n"
	"  -s, --signal SIG    TERM, INT, HUP, KILL, ... or a number\n"
	"      --no-wait       return once the kill is requested\n",
	.run = run_kill,
};

const struct cli_cmd cli_cmd_write = {
	.name = "write",
	.synopsis = "taskq write ID [DATA] [--line] [--file F|-] [--eof]",
	.summary = "Send input to a task submitted with --stdin pipe.",
	.help =
	"Stores DATA (exactly, no newline added) for the task's standard input; its\n"
	"worker delivers it, so nothing is lost if the task has not started yet.\n"
	"\n"
	"  -l, --line          add a newline after DATA\n"
	"  -f, --file F        send the contents of F (- for standard input)\n"
	"      --eof           then close the task's standard input\n",
	.run = run_write,
};
