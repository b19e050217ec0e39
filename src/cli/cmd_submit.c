/*
 * cmd_submit.c - `taskq submit`: add a command to the queue, print its id.
 *
 * The command is stored as the argv it was given, byte for byte; no shell
 * sees it unless --shell asks for one. The environment is the submitter's
 * minus the scrub list (src/common/env.h), then --unset, then --env, as
 * env(1) orders -u before assignments. The commit is synced (TQ_OPEN_DURABLE)
 * before the id is printed: an id on stdout is a task that survives a power
 * loss.
 *
 * Submit is on the benchmark's hot path (a bare exec plus one insert), so it
 * does only what the task needs: no locale, no config file, no supervisor.
 *
 * --wait[=DUR] then waits for the task to end, reading the store as `taskq
 * log` does and printing through its line printer (cli.h, cmd_log.c).
 */
#include "cli.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/env.h"
#include "common/parse.h"
#include "common/sys.h"
#include "queue/logstore.h"
#include "worker/doorbell.h"
#include "worker/supervisor.h"

extern char **environ;

static const char submit_help[] =
	"CMD and its ARGS are stored exactly, byte for byte. The -- is needed only\n"
	"when CMD starts with '-'; options after CMD belong to CMD.\n"
	"\n"
	"Options:\n"
	"  --shell STRING   run STRING with /bin/sh -c instead of CMD (on purpose:\n"
	"                   CMD itself is never given to a shell)\n"
	"  --cwd DIR        working directory (default: the current one); a relative\n"
	"                   DIR is resolved now; it must exist\n"
	"  --env K=V        set a variable in the task's environment (repeatable)\n"
	"  --unset K        leave a variable out of it (repeatable)\n"
	"  --clean-env      start from an empty environment; --env adds to it\n"
	"  --name NAME      the task's name (default: derived from the command,\n"
	"                   e.g. \"make all\", \"claude\")\n"
	"  --timeout DUR    kill the task after DUR (default 30m; 0: never), such as\n"
	"                   30s, 5m, 2h, 1h30m\n"
	"  --label K=V      attach a label, for list --label (repeatable)\n"
	"  --priority N     higher runs first (default 0; may be negative)\n"
	"  --batch NAME     put the task in a batch, for list --batch\n"
	"  --kill-grace DUR after TERM (timeout, kill, shutdown), KILL the task's\n"
	"                   process group if it has not exited (default 5s)\n"
	"  --max-output SIZE  kill the task once its output passes SIZE (default\n"
	"                   50M; 0: unlimited); it ends as output_overflow\n"
	"  --stdin-file F   the task reads F's bytes (stored now) on its stdin\n"
	"  --stdin MODE     null (default: /dev/null) or pipe (taskq write ID DATA\n"
	"                   feeds it)\n"
	"  --pty            run the task on a pseudo-terminal\n"
	"  --group NAME     the task's group (default: the program's name, e.g.\n"
	"                   claude): a rate limit pauses the whole group\n"
	"  --retries N      retry a transient failure (rate_limit, overload,\n"
	"                   network; exit 75) up to N times (default 3; 0: never)\n"
	"  --retry-lost     also retry when the task's worker died (lost)\n"
	"  --backoff DUR    wait before the first retry (default 30s), doubled for\n"
	"                   each next one, with jitter; a provider's retry-after\n"
	"                   is honoured\n"
	"  --backoff-max DUR  the longest wait between retries (default 30m)\n"
	"  --no-start       do not start a supervisor if none runs (also:\n"
	"                   TASKQ_AUTOSTART=0)\n"
	"  --json           print {\"id\":N} instead of the bare id\n"
	"  --wait[=DUR]     wait up to DUR (default 10s; 0: no limit) for the task\n"
	"                   to end; see below\n"
	"\n"
	"The environment is yours minus variables that mark the submitting process\n"
	"(CLAUDECODE, CLAUDE_CODE_ENTRYPOINT, CLAUDE_CODE_SESSION_ID,\n"
	"CLAUDE_CODE_CHILD_SESSION, CLAUDE_CODE_SSE_PORT, CLAUDE_CODE_EXECPATH,\n"
	"AI_AGENT, CLAUDE_EFFORT, CLAUDE_CODE_RETRY_WATCHDOG, and the names in\n"
	"$TASKQ_SCRUB_ENV); then --unset, then --env apply.\n"
	"\n"
	"Examples:\n"
	"  taskq submit -- make -C src all\n"
	"  taskq submit --timeout 2h --label kind=review -- claude -p \"review src/\"\n"
	"  taskq submit --shell 'sort big.txt | uniq -c > counts.txt'\n"
	"\n"
	"After the task is stored, submit rings the workers' doorbell, and starts a\n"
	"supervisor in the background (taskq serve) if none runs.\n"
	"\n"
	"--wait: if the task ends within DUR, its output is printed as it ran,\n"
	"stdout lines to stdout and stderr lines to stderr (exact bytes; escaped\n"
	"as by taskq log on a terminal), and submit exits with the task's exit\n"
	"status (0, its exit code, 128+N for a signal, 124 timed out, 127 not\n"
	"started; see taskq help log). Otherwise it prints the id on stdout, the\n"
	"last 20 lines so far and \"task N is still running\" on stderr, and exits\n"
	"0: the task goes on in the background (taskq poll N, taskq log N -f).\n"
	"With --json, one object instead: {\"id\":N,\"done\":true,\"state\":...,\n"
	"\"outcome\":...,\"exit_code\":...,\"signal\":...,\"exit_status\":...,\n"
	"\"reason\":...,\"lines\":[...],\"total\":N} (lines as in log --json: all\n"
	"of them when done, else the last 20). Only the inline form takes a value:\n"
	"--wait=30s; a bare --wait means 10s.\n";

enum {
	OPT_SHELL = 256, OPT_CWD, OPT_ENV, OPT_UNSET, OPT_CLEAN_ENV, OPT_NAME,
	OPT_TIMEOUT, OPT_LABEL, OPT_PRIORITY, OPT_BATCH, OPT_JSON, OPT_KILL_GRACE,
	OPT_MAX_OUTPUT, OPT_STDIN_FILE, OPT_STDIN, OPT_PTY, OPT_NO_START, OPT_GROUP,
	OPT_RETRIES, OPT_RETRY_LOST, OPT_BACKOFF, OPT_BACKOFF_MAX,
};

static const struct cli_opt submit_opts[] = {
	{ "shell", OPT_SHELL, 1, 0 },
	{ "cwd", OPT_CWD, 1, 0 },
	{ "env", OPT_ENV, 1, 0 },
	{ "unset", OPT_UNSET, 1, 0 },
	{ "clean-env", OPT_CLEAN_ENV, 0, 0 },
	{ "name", OPT_NAME, 1, 0 },
	{ "timeout", OPT_TIMEOUT, 1, 0 },
	{ "label", OPT_LABEL, 1, 0 },
	{ "priority", OPT_PRIORITY, 1, 0 },
	{ "batch", OPT_BATCH, 1, 0 },
	{ "json", OPT_JSON, 0, 0 },
	{ "kill-grace", OPT_KILL_GRACE, 1, 0 },
	{ "max-output", OPT_MAX_OUTPUT, 1, 0 },
	{ "stdin-file", OPT_STDIN_FILE, 1, 0 },
	{ "stdin", OPT_STDIN, 1, 0 },
	{ "pty", OPT_PTY, 0, 0 },
	{ "no-start", OPT_NO_START, 0, 0 },
	{ "group", OPT_GROUP, 1, 0 },
	{ "retries", OPT_RETRIES, 1, 0 },
	{ "retry-lost", OPT_RETRY_LOST, 0, 0 },
	{ "backoff", OPT_BACKOFF, 1, 0 },
	{ "backoff-max", OPT_BACKOFF_MAX, 1, 0 },
	{ NULL, 0, 0, 0 },
};

/* A growable array of borrowed strings (argv pointers). */
struct strv {
	const char **v;
	size_t n, cap;
};

/* Everything submit collects before it builds the spec. */
struct submit {
	struct tq_task_spec spec;
	const char *shell;
	const char *cwd_flag;
	struct strv sets, unsets;
	struct tq_label *labels;  /* key and value point into label_bufs */
	char **label_bufs;        /* owned copies of each --label K=V */
	size_t nlabels, labels_cap;
	int clean_env, json, no_start;
	int wait;                 /* --wait given */
	int64_t wait_ms;          /* its limit; 0: none */
	const char *stdin_file;
	char *stdin_data;         /* --stdin-file's bytes */
	char cwd[PATH_MAX];
	char *shell_argv[4];
	struct tq_env env;
};

static int strv_push(struct strv *s, const char *p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		const char **v = reallocarray(s->v, cap, sizeof(*v));
		if (v == NULL)
			return TQ_ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = p;
	return 0;
}

static void submit_release(struct submit *s)
{
	free(s->sets.v);
	free(s->unsets.v);
	for (size_t i = 0; i < s->nlabels; i++)
		free(s->label_bufs[i]);
	free(s->label_bufs);
	free(s->labels);
	free(s->stdin_data);
	tq_env_release(&s->env);
}

static int oom(const struct cli_ctx *c)
{
	return cli_runtime(c, "out of memory");
}

/* A name (--name, --batch, a label key): what the store accepts. */
static int check_name(const struct cli_ctx *c, const char *flag, const char *s)
{
	if (*s == '\0')
		return cli_usage(c, "%s: empty name", flag);
	if (strlen(s) >= TQ_NAME_MAX)
		return cli_usage(c, "%s \"%.40s...\": longer than %d bytes", flag, s,
				 TQ_NAME_MAX - 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < ' ' || *p == 0x7f)
			return cli_usage(c, "%s \"%s\": contains a control character",
					 flag, s);
	return CLI_OK;
}

/* --env K=V: a non-empty name before the first '='. */
static int check_kv(const struct cli_ctx *c, const char *flag, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (eq == NULL || eq == kv)
		return cli_usage(c, "%s \"%s\": expected NAME=VALUE", flag, kv);
	return CLI_OK;
}

static int add_label(const struct cli_ctx *c, struct submit *s, const char *kv)
{
	char *buf, *eq;
	int rc;

	if ((rc = check_kv(c, "--label", kv)) != CLI_OK)
		return rc;
	if (strlen(strchr(kv, '=') + 1) > CLI_LABEL_VALUE_MAX)
		return cli_usage(c, "--label \"%.40s...\": value longer than %d bytes",
				 kv, CLI_LABEL_VALUE_MAX);
	if ((buf = strdup(kv)) == NULL)
		return oom(c);
	eq = strchr(buf, '=');
	*eq = '\0';
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].key, buf) == 0)
			rc = cli_usage(c, "--label \"%s\": label %s given twice", kv, buf);
	if (rc == CLI_OK)
		rc = check_name(c, "--label", buf);
	if (rc == CLI_OK && s->nlabels == s->labels_cap) {
		size_t cap = s->labels_cap ? s->labels_cap * 2 : 4;
		struct tq_label *l = reallocarray(s->labels, cap, sizeof(*l));
		char **b = l ? reallocarray(s->label_bufs, cap, sizeof(*b)) : NULL;
		if (l != NULL)
			s->labels = l;
		if (b != NULL)
			s->label_bufs = b, s->labels_cap = cap;
		else
			rc = oom(c);
	}
	if (rc != CLI_OK) {
		free(buf);
		return rc;
	}
	s->labels[s->nlabels] = (struct tq_label){ buf, eq + 1 };
	s->label_bufs[s->nlabels++] = buf;
	return CLI_OK;
}

/* --cwd DIR, or the current directory: an absolute directory that exists.
 * An absolute DIR is kept as written (its symlinks resolve when the task
 * starts, as the user meant); a relative one is resolved now, against the
 * directory submit runs in, since nothing later knows what it was relative
 * to. */
static int resolve_cwd(const struct cli_ctx *c, const char *dir, char *out, size_t n)
{
	struct stat sb;

	if (dir == NULL) {
		if (getcwd(out, n) == NULL)
			return cli_runtime(c, "current directory: %s; give --cwd DIR",
					   strerror(errno));
		return CLI_OK;
	}
	if (*dir == '\0')
		return cli_usage(c, "--cwd: empty directory name");
	if (dir[0] == '/') {
		if (strlen(dir) >= n)
			return cli_usage(c, "--cwd \"%s\": longer than %zu bytes", dir, n - 1);
		memcpy(out, dir, strlen(dir) + 1);
	} else if (realpath(dir, out) == NULL) {
		return cli_usage(c, "--cwd \"%s\": %s", dir, strerror(errno));
	}
	if (stat(out, &sb) < 0)
		return cli_usage(c, "--cwd \"%s\": %s", dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return cli_usage(c, "--cwd \"%s\": not a directory", dir);
	return CLI_OK;
}

/* One option; a->val holds its value. */
static int take_opt(const struct cli_ctx *c, struct submit *s, int k,
		    const struct cli_args *a)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	switch (k) {
	case OPT_SHELL:
		if (*a->val == '\0')
			return cli_usage(c, "--shell: empty script");
		s->shell = a->val;
		return CLI_OK;
	case OPT_CWD:
		s->cwd_flag = a->val;
		return CLI_OK;
	case OPT_ENV:
		if (check_kv(c, "--env", a->val) != CLI_OK)
			return CLI_USAGE;
		return strv_push(&s->sets, a->val) < 0 ? oom(c) : CLI_OK;
	case OPT_UNSET:
		if (*a->val == '\0' || strchr(a->val, '=') != NULL)
			return cli_usage(c, "--unset \"%s\": expected a variable name",
					 a->val);
		return strv_push(&s->unsets, a->val) < 0 ? oom(c) : CLI_OK;
	case OPT_CLEAN_ENV:
		s->clean_env = 1;
		return CLI_OK;
	case OPT_NAME:
		s->spec.name = a->val;
		return check_name(c, "--name", a->val);
	case OPT_BATCH:
		s->spec.batch = a->val;
		return check_name(c, "--batch", a->val);
	case OPT_TIMEOUT:
		if (tq_parse_duration(a->val, &s->spec.timeout_ms, &err) < 0)
			return cli_usage(c, "--timeout %s", err.msg);
		return CLI_OK;
	case OPT_PRIORITY:
		if (tq_parse_int(a->val, -CLI_PRIORITY_MAX, CLI_PRIORITY_MAX, &v, &err) < 0)
			return cli_usage(c, "--priority %s", err.msg);
		s->spec.priority = v;
		return CLI_OK;
	case OPT_LABEL:
		return add_label(c, s, a->val);
	case OPT_JSON:
		s->json = 1;
		return CLI_OK;
	case OPT_KILL_GRACE:
		if (tq_parse_duration(a->val, &s->spec.kill_grace_ms, &err) < 0)
			return cli_usage(c, "--kill-grace %s", err.msg);
		return CLI_OK;
	case OPT_MAX_OUTPUT:
		if (tq_parse_size(a->val, &s->spec.max_output, &err) < 0)
			return cli_usage(c, "--max-output %s", err.msg);
		return CLI_OK;
	case OPT_STDIN_FILE:
		s->stdin_file = a->val;
		s->spec.stdin_mode = TQ_STDIN_FILE;
		return CLI_OK;
	case OPT_STDIN:
		if (strcmp(a->val, "pipe") == 0)
			s->spec.stdin_mode = TQ_STDIN_PIPE;
		else if (strcmp(a->val, "null") == 0)
			s->spec.stdin_mode = TQ_STDIN_NULL;
		else
			return cli_usage(c, "--stdin \"%s\": expected null or pipe "
					 "(for a file: --stdin-file F)", a->val);
		s->stdin_file = NULL;
		return CLI_OK;
	case OPT_PTY:
		s->spec.pty = 1;
		return CLI_OK;
	case OPT_NO_START:
		s->no_start = 1;
		return CLI_OK;
	case OPT_GROUP:
		s->spec.group = a->val;
		return check_name(c, "--group", a->val);
	case OPT_RETRIES:
		if (tq_parse_int(a->val, 0, CLI_RETRIES_MAX, &s->spec.max_retries, &err) < 0)
			return cli_usage(c, "--retries %s", err.msg);
		return CLI_OK;
	case OPT_RETRY_LOST:
		s->spec.retry_lost = 1;
		return CLI_OK;
	case OPT_BACKOFF:
		if (tq_parse_duration(a->val, &s->spec.backoff_ms, &err) < 0)
			return cli_usage(c, "--backoff %s", err.msg);
		return CLI_OK;
	case OPT_BACKOFF_MAX:
		if (tq_parse_duration(a->val, &s->spec.backoff_max_ms, &err) < 0)
			return cli_usage(c, "--backoff-max %s", err.msg);
		return CLI_OK;
	case CLI_OPT_HELP:
		cli_print_help(&cli_cmd_submit, stdout);
		return -1; /* done, exit 0 */
	default:
		return CLI_USAGE;
	}
}

/* The command: from --shell, or the arguments from a->i - 1 on. */
static int take_command(const struct cli_ctx *c, struct submit *s,
			const struct cli_args *a, int have_cmd)
{
	size_t bytes = 0;

	if (s->shell != NULL && have_cmd)
		return cli_usage(c, "give either --shell \"STRING\" or a command, not both");
	if (s->shell != NULL) {
		s->shell_argv[0] = "/bin/sh";
		s->shell_argv[1] = "-c";
		s->shell_argv[2] = (char *)s->shell;
		s->spec.argv = s->shell_argv;
		s->spec.argc = 3;
		s->spec.shell = 1;
	} else if (!have_cmd) {
		return cli_usage(c, "no command given; usage: %s", cli_cmd_submit.synopsis);
	} else {
		s->spec.argv = a->argv + a->i - 1;
		s->spec.argc = (size_t)(a->argc - a->i + 1);
	}
	if (s->spec.argv[0][0] == '\0')
		return cli_usage(c, "the command name is empty");
	for (size_t i = 0; i < s->spec.argc; i++)
		bytes += strlen(s->spec.argv[i]) + 1;
	if (bytes > TQ_ARGV_MAX)
		return cli_usage(c, "the command is %zu bytes, more than %d", bytes,
				 TQ_ARGV_MAX);
	return CLI_OK;
}

/* The task's environment: see the top of the file for the order. */
static int build_env(const struct cli_ctx *c, struct submit *s)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t bytes;

	if (tq_env_build(&s->env, s->clean_env ? NULL : environ,
			 getenv(TQ_ENV_SCRUB_VAR), &err) < 0)
		return cli_fail(c, &err);
	for (size_t i = 0; i < s->unsets.n; i++)
		tq_env_unset(&s->env, s->unsets.v[i]);
	for (size_t i = 0; i < s->sets.n; i++)
		if (tq_env_set(&s->env, s->sets.v[i], &err) < 0)
			return cli_fail(c, &err);
	bytes = tq_env_bytes(&s->env);
	if (bytes > TQ_ENV_MAX)
		return cli_usage(c, "the environment is %zu bytes, more than %d", bytes,
				 TQ_ENV_MAX);
	s->spec.env = s->env.vars;
	s->spec.envc = s->env.n;
	return CLI_OK;
}

/* --stdin-file: the bytes are stored with the task, so the file may change
 * or go away before the task runs. */
static int read_stdin_file(const struct cli_ctx *c, struct submit *s)
{
	struct stat sb;
	size_t cap, len = 0;
	ssize_t r;
	int fd;

	if (s->stdin_file == NULL)
		return CLI_OK;
	if ((fd = tq_open(s->stdin_file, O_RDONLY, 0)) < 0)
		return cli_usage(c, "--stdin-file \"%s\": %s", s->stdin_file, strerror(errno));
	if (fstat(fd, &sb) < 0 || S_ISDIR(sb.st_mode)) {
		tq_close(fd);
		return cli_usage(c, "--stdin-file \"%s\": not a readable file", s->stdin_file);
	}
	cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : 65536;
	for (;;) {
		if (len == cap || s->stdin_data == NULL) {
			char *nb;
			if (s->stdin_data != NULL)
				cap *= 2;
			if ((int64_t)cap > TQ_STDIN_FILE_MAX + 1)
				cap = (size_t)TQ_STDIN_FILE_MAX + 1;
			if ((nb = realloc(s->stdin_data, cap)) == NULL) {
				tq_close(fd);
				return oom(c);
			}
			s->stdin_data = nb;
		}
		if ((r = tq_read(fd, s->stdin_data + len, cap - len)) <= 0)
			break;
		len += (size_t)r;
		if ((int64_t)len > TQ_STDIN_FILE_MAX) {
			tq_close(fd);
			return cli_usage(c, "--stdin-file \"%s\": larger than 256M",
					 s->stdin_file);
		}
	}
	tq_close(fd);
	if (r < 0)
		return cli_runtime(c, "--stdin-file \"%s\": %s", s->stdin_file,
				   strerror(errno));
	s->spec.stdin_data = s->stdin_data;
	s->spec.stdin_len = len;
	return CLI_OK;
}

/* Wake an idle worker, and start a supervisor if none runs. A failure to
 * start one is reported but does not fail the submit: the task is stored. */
static void after_store(const struct cli_ctx *c, struct submit *s, const char *home)
{
	const char *auto_env = getenv("TASKQ_AUTOSTART");
	struct tq_err err = TQ_ERR_INIT;
	char exe[PATH_MAX];

	tq_doorbell_ring(home);
	if (s->no_start || (auto_env != NULL && strcmp(auto_env, "0") == 0))
		return;
	if (tq_self_exe(exe, sizeof(exe), &err) < 0 ||
	    tq_supervisor_autostart(home, exe, &err) < 0)
		fprintf(stderr, "taskq: %s: warning: %s\n", c->cmd->name, err.msg);
}

/* ------------------------------------------------------------------ */
/* --wait                                                             */

#define WAIT_DEFAULT_MS (10 * 1000) /* a bare --wait */
#define WAIT_TAIL 20                /* lines shown of a task still running */
#define WAIT_PAUSE_MAX_MS 100       /* longest pause between looks */

/*
 * Wait until task id ends, or wait_ms pass (0: no limit). 1 when it ended,
 * 0 when time ran out (t holds the task either way), or an error. The
 * database tells no other process when it changes, so this looks at it
 * with a growing pause: a quick task ends within milliseconds of its
 * start, a long one costs ten reads a second.
 */
static int wait_end(struct tq_queue *q, int64_t id, int64_t wait_ms, struct tq_task *t,
		    struct tq_err *err)
{
	int64_t deadline = tq_mono_ms() + wait_ms, pause = 2, left;
	int rc;

	for (;;) {
		if ((rc = tq_queue_get(q, id, 0, t, err)) < 0)
			return rc;
		if (tq_state_final(t->state))
			return 1;
		left = deadline - tq_mono_ms();
		if (wait_ms > 0 && left <= 0)
			return 0;
		tq_task_release(t);
		tq_sleep_ms(wait_ms > 0 && left < pause ? left : pause);
		pause = pause * 2 < WAIT_PAUSE_MAX_MS ? pause * 2 : WAIT_PAUSE_MAX_MS;
	}
}

struct json_lines {
	cJSON *arr;
	int oom;
};

static int json_line_cb(const struct tq_log_line *l, void *arg)
{
	struct json_lines *j = arg;
	cJSON *item = cli_log_line_json(l, &j->oom);

	if (item != NULL && !cJSON_AddItemToArray(j->arr, item)) {
		cJSON_Delete(item);
		j->oom = 1;
	}
	return j->oom;
}

/* --wait --json: one object, the output's lines in it. */
static int waited_json(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		       int done, const struct tq_log_range *r)
{
	struct tq_err err = TQ_ERR_INIT;
	struct json_lines j = { cJSON_CreateArray(), 0 };
	cJSON *o = cJSON_CreateObject();
	int64_t total = 0;
	int rc = CLI_OK;

	if (j.arr == NULL || o == NULL)
		j.oom = 1;
	else
		cli_json_int(o, "id", t->id, 1, &j.oom);
	if (!j.oom && tq_log_read(q, t->id, r, json_line_cb, &j, &total, &err) < 0)
		rc = cli_fail(c, &err);
	if (rc == CLI_OK && !j.oom) {
		cli_json_bool(o, "done", done, &j.oom);
		cli_json_task_end(o, t, &j.oom);
		if (cJSON_AddItemToObject(o, "lines", j.arr))
			j.arr = NULL;
		else
			j.oom = 1;
		cli_json_int(o, "total", total, 1, &j.oom);
	}
	if (rc == CLI_OK && (j.oom || cli_json_print(o, stdout) < 0))
		rc = cli_runtime(c, "out of memory");
	cJSON_Delete(o);
	cJSON_Delete(j.arr);
	if (rc == CLI_OK && done)
		rc = cli_task_status(t);
	return rc;
}

/* After the wait: the output and the task's exit status if it ended; else
 * the id, the last lines and where to look next. */
static int show_waited(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		       int done, int json)
{
	struct tq_log_range r = { .stream = TQ_STREAM_ALL, .offset = done ? 1 : 0,
				  .limit = -1, .tail = WAIT_TAIL };
	struct tq_err err = TQ_ERR_INIT;
	struct cli_lines p;
	int rc = CLI_OK;

	if (json)
		return waited_json(c, q, t, done, &r);
	if (!done) {
		printf("%lld\n", (long long)t->id);
		fflush(stdout);
	}
	/* as it ran: stdout lines to stdout, stderr lines to stderr */
	cli_lines_init(&p, done ? stdout : stderr, stderr, 0);
	if (tq_log_read(q, t->id, &r, cli_lines_cb, &p, NULL, &err) < 0)
		rc = cli_fail(c, &err);
	else if (p.rc < 0)
		rc = cli_runtime(c, "out of memory");
	cli_lines_release(&p);
	if (rc != CLI_OK)
		return rc;
	if (done)
		return cli_task_status(t);
	fprintf(stderr, "%stask %lld is still %s; taskq poll %lld / taskq log %lld --follow\n",
		p.open ? "\n" : "", (long long)t->id, tq_state_name(t->state),
		(long long)t->id, (long long)t->id);
	return CLI_OK;
}

static int wait_and_show(const struct cli_ctx *c, struct submit *s, struct tq_queue *q,
			 int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t = { 0 };
	int rc, done;

	if ((done = wait_end(q, id, s->wait_ms, &t, &err)) < 0)
		rc = cli_fail(c, &err);
	else
		rc = show_waited(c, q, &t, done, s->json);
	tq_task_release(&t);
	return rc;
}

/* --wait[=DUR] at argv[a->i], if it is there: handled before cli_next,
 * which knows no options with an optional value. Only the inline form
 * takes one, so a bare --wait never takes the command's name for its
 * value. Returns 1 (and *rc) if it was --wait, else 0. */
static int take_wait(const struct cli_ctx *c, struct submit *s, struct cli_args *a, int *rc)
{
	struct tq_err err = TQ_ERR_INIT;
	const char *arg;

	*rc = CLI_OK;
	if (a->only_args || a->i >= a->argc)
		return 0;
	arg = a->argv[a->i];
	if (strcmp(arg, "--wait") == 0)
		s->wait_ms = WAIT_DEFAULT_MS;
	else if (strncmp(arg, "--wait=", 7) == 0 &&
		 tq_parse_duration(arg + 7, &s->wait_ms, &err) < 0)
		*rc = cli_usage(c, "--wait %s", err.msg);
	else if (strncmp(arg, "--wait=", 7) != 0)
		return 0;
	s->wait = 1;
	a->i++;
	return 1;
}

static int store(const struct cli_ctx *c, struct submit *s)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	int64_t id = 0;
	int rc;

	s->spec.cwd = s->cwd;
	s->spec.labels = s->labels;
	s->spec.nlabels = s->nlabels;
	if ((rc = cli_open(c, TQ_OPEN_DURABLE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_submit(q, &s->spec, &id, NULL, &err) < 0)
		rc = cli_fail(c, &err);
	if (rc == CLI_OK)
		after_store(c, s, tq_queue_home(q));
	if (rc == CLI_OK && s->wait) {
		rc = wait_and_show(c, s, q, id);
		tq_queue_close(q);
		return rc;
	}
	tq_queue_close(q);
	if (rc != CLI_OK)
		return rc;
	if (s->json)
		printf("{\"id\":%lld}\n", (long long)id);
	else
		printf("%lld\n", (long long)id);
	return CLI_OK;
}

static int parse(const struct cli_ctx *c, struct submit *s, int argc, char **argv)
{
	struct cli_args a;
	int k, rc;

	cli_args_init(&a, argc, argv, 1);
	for (;;) {
		if (take_wait(c, s, &a, &rc)) {
			if (rc != CLI_OK)
				return rc;
			continue;
		}
		if ((k = cli_next(c, &a, submit_opts)) == CLI_OPT_END)
			break;
		if (k == CLI_OPT_ARG)
			return take_command(c, s, &a, 1);
		if (k == CLI_OPT_ERR)
			return CLI_USAGE;
		if ((rc = take_opt(c, s, k, &a)) != CLI_OK)
			return rc;
	}
	return take_command(c, s, &a, 0);
}

static int run_submit(struct cli_ctx *c, int argc, char **argv)
{
	struct submit s = { .spec = TQ_TASK_SPEC_INIT, .env = TQ_ENV_INIT };
	int rc;

	if ((rc = parse(c, &s, argc, argv)) == CLI_OK &&
	    (rc = resolve_cwd(c, s.cwd_flag, s.cwd, sizeof(s.cwd))) == CLI_OK &&
	    (rc = build_env(c, &s)) == CLI_OK &&
	    (rc = read_stdin_file(c, &s)) == CLI_OK)
		rc = store(c, &s);
	submit_release(&s);
	return rc < 0 ? CLI_OK : rc; /* -1: --help was printed */
}

const struct cli_cmd cli_cmd_submit = {
	.name = "submit",
	.synopsis = "taskq submit [options] [--] CMD [ARGS...]",
	.summary = "Add a command to the queue and print its id.",
	.help = submit_help,
	.run = run_submit,
};
