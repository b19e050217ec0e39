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
 *
 * The queue controls (--unique, --after, --after-any, --delay, --at,
 * --session, --on-exit) only fill the spec: the store makes a --unique check
 * and its insert atomic, blocks and cancels dependents, and schedules.
 * --file FILE parses every line first (import.c), then stores them in
 * short chunks, each a transaction, that --resume can go on with. The options and the state they build are shared with
 * `taskq ask` through submit.h; ask's option keys start where ours end.
 */
#include "cli.h"
#include "output.h"
#include "ask.h"
#include "submit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "agent/scrub.h"
#include "common/env.h"
#include "common/parse.h"
#include "common/sys.h"
#include "ops/import.h"
#include "ops/submit.h"
#include "queue/logstore.h"

extern char **environ;

/* Longer than the 4095 bytes C99 promises every compiler takes (which
 * -Wpedantic enforces); GCC and Clang take any length, and one string keeps
 * `taskq help submit` and `taskq submit --help` the same text. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
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
	"  --stall-timeout DUR  stop the task when it has printed no new output on\n"
	"                   either stream for DUR (default: off; taskq ask: the\n"
	"                   agent's, 5m): the attempt is stalled, retried as a\n"
	"                   network failure; a line repeated (\"Reconnecting...\")\n"
	"                   is not new output. Out of retries: timed_out (124)\n"
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
	"  --unique KEY     add nothing while an unfinished task (queued, scheduled,\n"
	"                   blocked, running) holds KEY: print that task's id\n"
	"                   instead (and say so on stderr); exit 0\n"
	"  --after ID[,ID...]  run only after those tasks succeeded; if one does\n"
	"                   not, this task is canceled with the reason (repeatable)\n"
	"  --after-any ID[,ID...]  run after those tasks ended, however they ended\n"
	"  --delay DUR      do not start before DUR from now\n"
	"  --at TIME        do not start before TIME: 04:00 (the next 04:00, local),\n"
	"                   2026-11-23T04:00 (local), 2026-11-23T04:00:00Z,\n"
	"                   2026-11-23T04:00+02:00\n"
	"  --session KEY    tasks with the same KEY run one at a time, in order, in\n"
	"                   the directory of the first (another --cwd is refused)\n"
	"  --on-exit CMD    after the task's final end (also a lost one), a worker\n"
	"                   runs CMD with /bin/sh, once, with TASKQ_ID, TASKQ_STATE,\n"
	"                   TASKQ_EXIT_CODE, TASKQ_LOG set; its failure never\n"
	"                   changes the task\n"
	"  --file FILE      add one task per line of FILE (- for stdin); see below\n"
	"  --resume RUN     with --file: go on with an import that stopped half\n"
	"                   way (its error names RUN); see below\n"
	"  --json           print {\"id\":N} instead of the bare id\n"
	"  --wait[=DUR]     wait up to DUR (default 10s; 0: no limit) for the task\n"
	"                   to end; see below\n"
	"\n"
	"The task runs with your umask (as with the directory and environment).\n"
	"The environment is yours minus variables that an agent CLI sets for its\n"
	"children (claude: CLAUDECODE, CLAUDE_CODE_SESSION_ID, AI_AGENT, ...;\n"
	"gemini: GEMINI_CLI, and with it the GIT_CONFIG_* it sets; codex:\n"
	"CODEX_THREAD_ID, CODEX_SANDBOX, ...; opencode: OPENCODE, OPENCODE_PID,\n"
	"AGENT; the list is agent-env.json, the config's \"scrub_env\" and\n"
	"$TASKQ_SCRUB_ENV add to it); then --unset, then --env apply. The list\n"
	"applies again when the task starts.\n"
	"\n"
	"Examples:\n"
	"  taskq submit -- make -C src all\n"
	"  taskq submit --timeout 2h --label kind=review -- claude -p \"review src/\"\n"
	"  taskq submit --shell 'sort big.txt | uniq -c > counts.txt'\n"
	"  taskq submit --unique nightly --at 02:00 -- ./nightly.sh\n"
	"  taskq submit --batch review --file tasks.jsonl\n"
	"\n"
	"--file: each line is one JSON object with the fields of the options:\n"
	"  {\"cmd\":[\"make\",\"-C\",\"site1\"],\"name\":\"site1\",\"batch\":\"nightly\"}\n"
	"  {\"shell\":\"gzip -9 *.log\",\"cwd\":\"logs\",\"unique\":\"gzip-logs\"}\n"
	"Fields: cmd (an array of strings) or shell (a string); name, cwd (relative\n"
	"to --cwd), env (an object, added to the environment; a null value unsets),\n"
	"timeout, stall_timeout, kill_grace, backoff, backoff_max, delay (durations:\n"
	"\"30m\", or seconds as a number), at, retries, priority, max_output (\"50M\"\n"
	"or bytes), group, batch, unique, session, on_exit, labels (an object), after\n"
	"and after_any (an id, an array of ids, or \"3,4\"), retry_lost, pty (true or\n"
	"false); for an agent task instead of cmd: prompt, agent, model, sources\n"
	"(an object NAME: PATH), isolate, warm and idle_timeout (with session:\n"
	"ask --warm). The options given on the command line\n"
	"are the defaults of every line. A bad line (an unknown field, a wrong\n"
	"type) adds nothing: the whole file is read first, and the error names\n"
	"FILE:LINE. Blank lines are skipped. Prints one id per line (--json: one\n"
	"array), in the file's order.\n"
	"The tasks are stored in chunks of about 250 ms each, so a long file never\n"
	"holds the database from the workers. If storing stops half way (a store\n"
	"error such as a full disk or an --after id that does not exist, or\n"
	"Ctrl-C: taken between chunks), the tasks stored stay, their ids are\n"
	"printed, and the error says which lines they are and gives a run id:\n"
	"the same command with --resume RUN stores the rest, each line once (a\n"
	"line stored already prints the id it got; fix a bad line in place;\n"
	"within a day). A resume with another file, or with lines added or\n"
	"removed above where it stopped, or a run id not known here, is refused\n"
	"and stores nothing. Exit 1 (2 for a bad value), 128+N after signal N.\n"
	"\n"
	"When a supervisor runs, submit hands it the task through its socket\n"
	"(STATE/submit.sock), which stores it as durably, and faster than a\n"
	"process opening the database; else (or if the supervisor does not answer)\n"
	"submit stores the task itself, exactly once either way; also, saying so,\n"
	"when the supervisor runs another version of taskq (it cannot read the\n"
	"request, or submit cannot read its answer).\n"
	"TASKQ_SUBMIT_VIA=direct always stores it directly; =supervisor fails\n"
	"rather than do so. After storing the task itself, submit rings the\n"
	"workers' doorbell (unless the task waits in a paused group), and starts\n"
	"a supervisor in the background (taskq serve) if none runs.\n"
	"\n"
	"A PostgreSQL store that cannot be reached (the server restarting,\n"
	"stopped) is tried again for 30s, or as long as TASKQ_DB_RETRY says (a\n"
	"duration; 0: not at all); then submit fails with one line and exit 1,\n"
	"having stored nothing. A try cut off in its commit, done or not, and the\n"
	"next store the task once (its token).\n"
	"\n"
	"--wait: first one line on stderr names the task (\"taskq: submit: task N:\n"
	"waiting up to 10.0s for it to end (Ctrl-C leaves it running)\"). If the\n"
	"task ends within DUR, its output is printed as it ran, stdout lines to\n"
	"stdout and stderr lines to stderr (exact bytes; escaped as by taskq log\n"
	"on a terminal), and submit exits with the task's exit status (0, its exit\n"
	"code, 128+N for a signal, 124 timed out, 127 not started; see taskq help\n"
	"log); an end its output does not explain gets one line on stderr (\"task\n"
	"N could not start: exec ...\", timed out, was killed, ...). The output is\n"
	"printed as it arrives on a terminal and with --wait=0; into a file or a\n"
	"pipe with a limit, only at the end (stdout must hold the output or the\n"
	"id). Otherwise it prints the id on stdout, the last 20 lines so far\n"
	"(unless shown as they arrived) and \"task N is still running\" on stderr,\n"
	"and exits 0: the task goes on in the background (taskq poll N, taskq log\n"
	"N -f). Ctrl-C (SIGINT; also SIGTERM, SIGHUP) ends the wait, not the task:\n"
	"\"task N still running; taskq log N --follow\" on stderr, exit 128+N (130).\n"
	"With --json, one object instead: {\"id\":N,\"done\":true,\"state\":...,\n"
	"\"outcome\":...,\"exit_code\":...,\"signal\":...,\"exit_status\":...,\n"
	"\"reason\":...,\"lines\":[...],\"total\":N} (lines as in log --json: all\n"
	"of them when done, else the last 20; also after Ctrl-C, with done false).\n"
	"Only the inline form takes a value:\n"
	"--wait=30s; a bare --wait means 10s.\n";
#pragma GCC diagnostic pop

/*
 * The options ask shares (cli_submit_opts), then --file, which only submit
 * takes. One list, so the two tables cannot drift apart.
 */
#define SUBMIT_OPTS                                   \
	{ "shell", OPT_SHELL, 1, 0 },                 \
	{ "cwd", OPT_CWD, 1, 0 },                     \
	{ "env", OPT_ENV, 1, 0 },                     \
	{ "unset", OPT_UNSET, 1, 0 },                 \
	{ "clean-env", OPT_CLEAN_ENV, 0, 0 },         \
	{ "name", OPT_NAME, 1, 0 },                   \
	{ "timeout", OPT_TIMEOUT, 1, 0 },             \
	{ "stall-timeout", OPT_STALL_TIMEOUT, 1, 0 }, \
	{ "label", OPT_LABEL, 1, 0 },                 \
	{ "priority", OPT_PRIORITY, 1, 0 },           \
	{ "batch", OPT_BATCH, 1, 0 },                 \
	{ "json", OPT_JSON, 0, 0 },                   \
	{ "kill-grace", OPT_KILL_GRACE, 1, 0 },       \
	{ "max-output", OPT_MAX_OUTPUT, 1, 0 },       \
	{ "stdin-file", OPT_STDIN_FILE, 1, 0 },       \
	{ "stdin", OPT_STDIN, 1, 0 },                 \
	{ "pty", OPT_PTY, 0, 0 },                     \
	{ "no-start", OPT_NO_START, 0, 0 },           \
	{ "group", OPT_GROUP, 1, 0 },                 \
	{ "retries", OPT_RETRIES, 1, 0 },             \
	{ "retry-lost", OPT_RETRY_LOST, 0, 0 },       \
	{ "backoff", OPT_BACKOFF, 1, 0 },             \
	{ "backoff-max", OPT_BACKOFF_MAX, 1, 0 },     \
	{ "unique", OPT_UNIQUE, 1, 0 },               \
	{ "after", OPT_AFTER, 1, 0 },                 \
	{ "after-any", OPT_AFTER_ANY, 1, 0 },         \
	{ "delay", OPT_DELAY, 1, 0 },                 \
	{ "at", OPT_AT, 1, 0 },                       \
	{ "on-exit", OPT_ON_EXIT, 1, 0 },             \
	{ "session", OPT_SESSION, 1, 0 }

/* Keys 256..511 (ask's own start at 512). */
enum {
	OPT_SHELL = 256, OPT_CWD, OPT_ENV, OPT_UNSET, OPT_CLEAN_ENV, OPT_NAME,
	OPT_TIMEOUT, OPT_LABEL, OPT_PRIORITY, OPT_BATCH, OPT_JSON, OPT_KILL_GRACE,
	OPT_MAX_OUTPUT, OPT_STDIN_FILE, OPT_STDIN, OPT_PTY, OPT_NO_START, OPT_GROUP,
	OPT_RETRIES, OPT_RETRY_LOST, OPT_BACKOFF, OPT_BACKOFF_MAX, OPT_UNIQUE,
	OPT_AFTER, OPT_AFTER_ANY, OPT_DELAY, OPT_AT, OPT_ON_EXIT, OPT_SESSION,
	OPT_FILE, OPT_RESUME, OPT_STALL_TIMEOUT,
	OPT_SUBMIT_LAST_ /* must stay below 512 */
};
_Static_assert(OPT_SUBMIT_LAST_ < 512, "submit's option keys must stay below ask's");

const struct cli_opt cli_submit_opts[] = {
	SUBMIT_OPTS,
	{ NULL, 0, 0, 0 },
};

static const struct cli_opt submit_opts[] = {
	SUBMIT_OPTS,
	{ "file", OPT_FILE, 1, 0 },
	{ "resume", OPT_RESUME, 1, 0 },
	{ NULL, 0, 0, 0 },
};

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
	return cli_check_text(c, flag, s);
}

/* --env K=V: a non-empty name before the first '='. */
static int check_kv(const struct cli_ctx *c, const char *flag, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (eq == NULL || eq == kv)
		return cli_usage(c, "%s \"%s\": expected NAME=VALUE", flag, kv);
	return CLI_OK;
}

static int add_label(const struct cli_ctx *c, struct cli_submit *s, const char *kv)
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
	if (rc == CLI_OK)
		rc = cli_check_text(c, "--label", kv);
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
static int resolve_cwd(const struct cli_ctx *c, const char *dir, char **out)
{
	struct stat sb;

	free(*out);
	*out = NULL;
	if (dir == NULL) {
		if ((*out = getcwd(NULL, 0)) == NULL)
			return cli_runtime(c, "current directory: %s; give --cwd DIR",
					   strerror(errno));
		return CLI_OK;
	}
	if (*dir == '\0')
		return cli_usage(c, "--cwd: empty directory name");
	if (dir[0] == '/') {
		if (strlen(dir) >= PATH_MAX)
			return cli_usage(c, "--cwd \"%s\": longer than %d bytes", dir,
					 PATH_MAX - 1);
		if ((*out = strdup(dir)) == NULL)
			return cli_runtime(c, "out of memory");
	} else if ((*out = realpath(dir, NULL)) == NULL) {
		return cli_usage(c, "--cwd \"%s\": %s", dir, strerror(errno));
	}
	if (stat(*out, &sb) < 0)
		return cli_usage(c, "--cwd \"%s\": %s", dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return cli_usage(c, "--cwd \"%s\": not a directory", dir);
	return CLI_OK;
}

/* --after / --after-any ID[,ID...]: the store has one kind per task (its
 * spec holds one after_any flag), so the two cannot be mixed in one task. */
static int take_after(const struct cli_ctx *c, struct cli_submit *s, int any,
		      const char *val)
{
	const char *flag = any ? "--after-any" : "--after";
	struct tq_err err = TQ_ERR_INIT;

	if (s->after_kinds & (any ? CLI_AFTER_SUCCESS : CLI_AFTER_ANY))
		return cli_usage(c, "give --after or --after-any, not both: a task "
				 "waits for all of its dependencies the same way");
	if (cli_ids_parse(val, &s->after, &s->nafter, &s->after_cap, &err) < 0)
		return err.code == TQ_ENOMEM ? oom(c) :
		       cli_usage(c, "%s %s", flag, err.msg);
	s->after_kinds |= any ? CLI_AFTER_ANY : CLI_AFTER_SUCCESS;
	s->spec.after_any = any;
	return CLI_OK;
}

/* --delay DUR / --at TIME: both set run_after, so only one may be given. */
static int take_when(const struct cli_ctx *c, struct cli_submit *s, const char *flag,
		     const char *val)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_now_ms(), v;

	if (s->when_flag != NULL && strcmp(s->when_flag, flag) != 0)
		return cli_usage(c, "give --delay or --at, not both");
	s->when_flag = flag;
	if (strcmp(flag, "--delay") == 0) {
		if (tq_parse_duration(val, &v, &err) < 0)
			return cli_usage(c, "--delay %s", err.msg);
		s->delay_ms = v;
		s->spec.run_after = v > 0 ? now + v : 0;
		return CLI_OK;
	}
	if (cli_time_parse(val, now, &s->spec.run_after, &err) < 0)
		return cli_usage(c, "--at %s", err.msg);
	return CLI_OK;
}

int cli_submit_take_opt(const struct cli_ctx *c, struct cli_submit *s, int k,
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
		return cli_strv_push(&s->sets, a->val) < 0 ? oom(c) : CLI_OK;
	case OPT_UNSET:
		if (*a->val == '\0' || strchr(a->val, '=') != NULL)
			return cli_usage(c, "--unset \"%s\": expected a variable name",
					 a->val);
		return cli_strv_push(&s->unsets, a->val) < 0 ? oom(c) : CLI_OK;
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
	case OPT_STALL_TIMEOUT:
		if (tq_parse_duration(a->val, &s->spec.stall_timeout_ms, &err) < 0)
			return cli_usage(c, "--stall-timeout %s", err.msg);
		s->keep_stall = 1;
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
	case OPT_UNIQUE:
		s->spec.unique_key = a->val;
		return check_name(c, "--unique", a->val);
	case OPT_AFTER:
	case OPT_AFTER_ANY:
		return take_after(c, s, k == OPT_AFTER_ANY, a->val);
	case OPT_DELAY:
		return take_when(c, s, "--delay", a->val);
	case OPT_AT:
		return take_when(c, s, "--at", a->val);
	case OPT_ON_EXIT:
		if (*a->val == '\0')
			return cli_usage(c, "--on-exit: empty command");
		if (strlen(a->val) > CLI_ON_EXIT_MAX)
			return cli_usage(c, "--on-exit: longer than %d bytes", CLI_ON_EXIT_MAX);
		s->spec.on_exit = a->val;
		return cli_check_text(c, "--on-exit", a->val);
	case OPT_SESSION:
		s->spec.session = a->val;
		return check_name(c, "--session", a->val);
	case CLI_OPT_HELP:
		/* the running command's help: ask passes its help key here too */
		cli_print_help(c->cmd, stdout);
		return -1; /* done, exit 0 */
	default:
		return CLI_USAGE;
	}
}

int cli_submit_take_command(const struct cli_ctx *c, struct cli_submit *s,
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
		return cli_usage(c, "no command given; usage: %s", c->cmd->synopsis);
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
static int build_env(const struct cli_ctx *c, struct cli_submit *s)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t bytes;

	if (tq_scrub_env(&s->env, s->clean_env ? NULL : environ,
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

/*
 * Read all of path ("-": standard input, when allow_stdin) into a malloc'd
 * buffer with a NUL after the last byte (*data, *len), refusing more than
 * max bytes. flag names the option in messages.
 */
static int read_all(const struct cli_ctx *c, const char *flag, const char *path,
		    int allow_stdin, int64_t max, const char *max_text, char **data,
		    size_t *len)
{
	int fd = allow_stdin && strcmp(path, "-") == 0 ? 0 : -1;
	char *buf = NULL, *nb;
	size_t cap;
	struct stat sb;
	ssize_t r = 0;
	int rc = CLI_OK;

	*data = NULL;
	*len = 0;
	if (fd < 0 && (fd = tq_open(path, O_RDONLY, 0)) < 0)
		return cli_usage(c, "%s \"%s\": %s", flag, path, strerror(errno));
	if (fstat(fd, &sb) < 0 || S_ISDIR(sb.st_mode)) {
		rc = cli_usage(c, "%s \"%s\": not a readable file", flag, path);
		goto out;
	}
	/* a regular file is read in one go; a pipe grows the buffer */
	cap = S_ISREG(sb.st_mode) && sb.st_size > 0 && sb.st_size <= max ?
	      (size_t)sb.st_size + 2 : 65536;
	for (;;) {
		if (*len + 1 >= cap || buf == NULL) {
			if (buf != NULL)
				cap *= 2;
			if ((int64_t)cap > max + 2)
				cap = (size_t)max + 2;
			if ((nb = realloc(buf, cap)) == NULL) {
				rc = oom(c);
				goto out;
			}
			buf = nb;
		}
		if ((r = tq_read(fd, buf + *len, cap - 1 - *len)) <= 0)
			break;
		*len += (size_t)r;
		if ((int64_t)*len > max) {
			rc = cli_usage(c, "%s \"%s\": larger than %s", flag, path, max_text);
			goto out;
		}
	}
	if (r < 0) {
		rc = cli_runtime(c, "%s \"%s\": %s", flag, path, strerror(errno));
		goto out;
	}
	buf[*len] = '\0';
	*data = buf;
	buf = NULL;
out:
	if (fd > 0)
		tq_close(fd);
	free(buf);
	if (rc != CLI_OK)
		*len = 0;
	return rc;
}

/* --stdin-file: the bytes are stored with the task, so the file may change
 * or go away before the task runs. */
static int read_stdin_file(const struct cli_ctx *c, struct cli_submit *s)
{
	size_t len;
	int rc;

	if (s->stdin_file == NULL)
		return CLI_OK;
	rc = read_all(c, "--stdin-file", s->stdin_file, 0, TQ_STDIN_FILE_MAX, "256M",
		      &s->stdin_data, &len);
	if (rc != CLI_OK)
		return rc;
	s->spec.stdin_data = s->stdin_data;
	s->spec.stdin_len = len;
	return CLI_OK;
}

/* Whether a direct store starts a supervisor if none runs. */
static int autostart(const struct cli_submit *s)
{
	const char *v = getenv("TASKQ_AUTOSTART");

	return !s->no_start && !(v != NULL && strcmp(v, "0") == 0);
}

/* A failure to start a supervisor does not fail the submit: the task is
 * stored. */
static void say_not_started(const struct cli_ctx *c, int rc, const struct tq_err *err)
{
	if (rc < 0)
		fprintf(stderr, "taskq: %s: warning: %s\n", c->cmd->name, err->msg);
}

/* ------------------------------------------------------------------ */
/* --wait                                                             */

#define WAIT_DEFAULT_MS (10 * 1000) /* a bare --wait */
#define WAIT_TAIL 20                /* lines shown of a task still running */
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
	return rc;
}

/* On stderr at once, so that a long wait, or one cut short, never leaves
 * the user without the id. */
static void say_waiting(const struct cli_ctx *c, const struct cli_submit *s, int64_t id)
{
	char d[32];

	if (s->wait_ms > 0) {
		tq_format_duration(s->wait_ms, d, sizeof(d));
		cli_note(c, "task %lld: waiting up to %s for it to end (Ctrl-C leaves it "
			 "running)", (long long)id, d);
	} else {
		cli_note(c, "task %lld: waiting for it to end (Ctrl-C leaves it running)",
			 (long long)id);
	}
}

int cli_submit_wait(const struct cli_ctx *c, struct cli_submit *s, struct tq_queue *q,
		    int64_t id, struct cli_follow *f, struct cli_lines *p)
{
	struct tq_err err = TQ_ERR_INIT;

	cli_follow_init(f, q, id);
	f->wait_ms = s->wait_ms;
	f->lines = p;
	if (!s->wait_result) /* ask --wait says its id its own way */
		say_waiting(c, s, id);
	if (cli_follow_run(f, &err) < 0)
		return err.code == TQ_ENOTFOUND
		       ? cli_runtime(c, "task %lld was removed", (long long)id)
		       : cli_fail(c, &err);
	return CLI_OK;
}

/* The lines of range r to stdout (stderr lines to stderr) as they ran;
 * sets *open when the last one had no newline. */
static int print_range(const struct cli_ctx *c, struct tq_queue *q, int64_t id,
		       const struct tq_log_range *r, FILE *out, int *open)
{
	struct tq_err err = TQ_ERR_INIT;
	struct cli_lines p;
	int rc = CLI_OK;

	cli_lines_init(&p, out, stderr, 0);
	if (tq_log_read(q, id, r, cli_lines_cb, &p, NULL, &err) < 0)
		rc = cli_fail(c, &err);
	else if (p.rc < 0)
		rc = cli_runtime(c, "out of memory");
	*open = p.open;
	cli_lines_release(&p);
	return rc;
}

int cli_submit_show_end(const struct cli_ctx *c, struct cli_submit *s, struct tq_queue *q,
			struct cli_follow *f)
{
	const struct tq_task *t = &f->task;
	int done = f->how == CLI_FOLLOW_ENDED, streamed = f->lines != NULL;
	struct tq_log_range r = { .stream = TQ_STREAM_ALL, .offset = done ? 1 : 0,
				  .limit = -1, .tail = WAIT_TAIL };
	int rc = CLI_OK, open = streamed && f->lines->open;
	long long id = (long long)t->id;

	if (s->json && !s->wait_result) /* ask's --json is its result's */
		rc = waited_json(c, q, t, done, &r);
	else if (done && !streamed)
		rc = print_range(c, q, t->id, &r, stdout, &open);
	if (rc != CLI_OK)
		return rc;
	if (done) {
		cli_note_output_missing(c, q, t);
		cli_follow_say_end(c, t);
		return cli_task_status(t);
	}
	if (f->how == CLI_FOLLOW_SIGNAL) {
		fflush(stdout);
		if (tq_state_final(t->state)) /* it ended while its output was printed */
			fprintf(stderr, "%stask %lld %s; taskq log %lld\n", open ? "\n" : "", id,
				tq_state_name(t->state), id);
		else
			fprintf(stderr, "%stask %lld still %s; taskq log %lld --follow\n",
				open ? "\n" : "", id, tq_state_name(t->state), id);
		return 128 + f->signal;
	}
	/* the wait ran out: the id, the last lines (unless shown as they came),
	 * where to look next */
	if (!s->json) {
		printf("%lld\n", id);
		fflush(stdout);
		if (!streamed && (rc = print_range(c, q, t->id, &r, stderr, &open)) != CLI_OK)
			return rc;
	}
	fprintf(stderr, "%stask %lld is still %s; taskq poll %lld / taskq log %lld --follow\n",
		open ? "\n" : "", id, tq_state_name(t->state), id, id);
	return CLI_OK;
}

/*
 * --wait: the output as it arrives (stdout lines to stdout, stderr lines to
 * stderr) where stdout can take it before the end is known: with no limit
 * (--wait=0), or on a terminal. A finite wait into a file or a pipe keeps
 * the documented contract instead: the whole output if the task ended in
 * time, else the id alone on stdout.
 */
static int wait_and_show(const struct cli_ctx *c, struct cli_submit *s, struct tq_queue *q,
			 int64_t id)
{
	int stream = !s->json && !s->wait_result &&
		     (s->wait_ms == 0 || isatty(STDOUT_FILENO));
	struct cli_follow f;
	struct cli_lines p;
	int rc;

	if (s->wait_result) { /* taskq ask --wait: the id at once, on stderr */
		fprintf(stderr, "%lld\n", (long long)id);
		fflush(stderr);
	}
	cli_lines_init(&p, stdout, stderr, 0);
	rc = cli_submit_wait(c, s, q, id, &f, stream ? &p : NULL);
	/* ask --wait: its answer (cli_ask_waited); a signal ends both alike */
	if (rc == CLI_OK && s->wait_result && f.how != CLI_FOLLOW_SIGNAL)
		rc = cli_ask_waited(c, q, &f.task, f.how == CLI_FOLLOW_ENDED, s->json);
	else if (rc == CLI_OK)
		rc = cli_submit_show_end(c, s, q, &f);
	cli_follow_release(&f);
	cli_lines_release(&p);
	return rc;
}

/* --wait[=DUR] at argv[a->i], if it is there: handled before cli_next,
 * which knows no options with an optional value. Only the inline form
 * takes one, so a bare --wait never takes the command's name for its
 * value. Returns 1 (and *rc) if it was --wait, else 0. */
int cli_submit_take_wait(const struct cli_ctx *c, struct cli_submit *s,
			 struct cli_args *a, int *rc)
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

/* The task runs with the submitter's umask, as with its cwd and
 * environment. umask(2) can only be read by setting it; submit has one
 * thread and creates no file between the two calls. */
static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m & TQ_UMASK_MAX;
}

int cli_submit_prepare(const struct cli_ctx *c, struct cli_submit *s)
{
	int rc;

	if ((rc = resolve_cwd(c, s->cwd_flag, &s->cwd)) != CLI_OK ||
	    (rc = build_env(c, s)) != CLI_OK ||
	    (rc = read_stdin_file(c, s)) != CLI_OK)
		return rc;
	s->spec.cwd = s->cwd;
	s->spec.cwd_explicit = s->cwd_flag != NULL;
	s->spec.umask = (int)current_umask();
	s->spec.labels = s->labels;
	s->spec.nlabels = s->nlabels;
	s->spec.after = s->after;
	s->spec.nafter = s->nafter;
	return CLI_OK;
}

/* The note for a --unique key already held: the id on stdout is the task
 * that holds it, so a script can wait for it all the same. */
static void say_existed(const struct cli_ctx *c, int64_t id, const char *key)
{
	fprintf(stderr, "taskq: %s: task %lld holds unique key \"%s\"; not added\n",
		c->cmd->name, (long long)id, key);
}

/* ------------------------------------------------------------------ */
/* Storing: ops/submit.h (the socket, or the store itself)            */

/* TASKQ_SUBMIT_VIA: auto (the default: the supervisor's socket when one
 * listens, else the database), supervisor (the socket or fail), direct. */
static int submit_via(const struct cli_ctx *c, enum tq_ops_via *via)
{
	const char *v = getenv("TASKQ_SUBMIT_VIA");

	if (tq_ops_submit_via(v, via) < 0)
		return cli_usage(c, "TASKQ_SUBMIT_VIA=\"%s\": expected auto, supervisor "
				 "or direct", v);
	return CLI_OK;
}

/* Why the supervisor's fast path was left (ops/submit.h, o.fallback). */
static void say_fallback(const struct cli_ctx *c, const struct tq_ops_submit *o)
{
	if (o->fallback == TQ_OPS_FALLBACK_UNREAD)
		/* it stored nothing (wire.h, "Versions") */
		fprintf(stderr, "taskq: %s: the running supervisor could not read "
			"this submit (%s): it runs another version of taskq; "
			"storing the task directly (after an upgrade: taskq "
			"shutdown, and the next submit starts this one)\n",
			c->cmd->name, o->why.msg);
	if (o->fallback == TQ_OPS_FALLBACK_GARBLED)
		/* it may have stored it: the same token keeps it once */
		fprintf(stderr, "taskq: %s: this taskq could not read the running "
			"supervisor's answer (%s): it runs another version of "
			"taskq; storing the task directly (after an upgrade: "
			"taskq shutdown, and the next submit starts this one)\n",
			c->cmd->name, o->why.msg);
}

/* Print the id (or --json) of a stored task. */
static int print_stored(const struct cli_submit *s, int64_t id, int existed)
{
	if (s->json)
		printf("{\"id\":%lld%s}\n", (long long)id, existed ? ",\"existed\":true" : "");
	else
		printf("%lld\n", (long long)id);
	return CLI_OK;
}

/* Stored by the supervisor: the rest of a submit (the supervisor rang the
 * doorbell, and it runs: nothing to start). */
static int stored_via_supervisor(const struct cli_ctx *c, struct cli_submit *s, int64_t id,
				 int existed)
{
	struct tq_queue *q = NULL;
	int rc;

	if (existed)
		say_existed(c, id, s->spec.unique_key);
	if (!s->wait)
		return print_stored(s, id, existed);
	if ((rc = cli_open(c, 0, &q)) != CLI_OK)
		return rc;
	rc = wait_and_show(c, s, q, id);
	tq_queue_close(q);
	return rc;
}

int cli_submit_store(const struct cli_ctx *c, struct cli_submit *s)
{
	struct tq_ops_submit o = TQ_OPS_SUBMIT_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char *home;
	int rc;

	if ((rc = submit_via(c, &o.via)) != CLI_OK ||
	    (rc = cli_retry_ms(c, &o.retry_ms)) != CLI_OK)
		return rc;
	/* On the heap, as every PATH_MAX buffer on this path: a page of stack
	 * more is a page fault more in every submit. */
	if ((home = malloc(PATH_MAX)) == NULL)
		return cli_runtime(c, "out of memory");
	if (tq_home_resolve(c->home_flag, home, PATH_MAX, &err) < 0) {
		free(home);
		return cli_fail(c, &err);
	}
	o.home = home;
	/* --delay counts from the store, not from the parse */
	if (s->delay_ms > 0 && s->when_flag != NULL && strcmp(s->when_flag, "--delay") == 0)
		o.delay_ms = s->delay_ms;
	rc = tq_ops_submit(&o, &s->spec, &err);
	say_fallback(c, &o);
	if (o.q != NULL && tq_queue_notice(o.q) != NULL)
		cli_note(c, "%s", tq_queue_notice(o.q));
	if (rc < 0 && o.failed_at == TQ_OPS_AT_OPEN) {
		/* a refused database is never the user's typo: exit 1 */
		cli_fail(c, &err);
		rc = CLI_RUNTIME;
	} else if (rc < 0) {
		rc = cli_fail(c, &err);
	} else if (o.by_supervisor) {
		free(home);
		return stored_via_supervisor(c, s, o.id, o.existed);
	}
	if (rc == CLI_OK && o.existed)
		say_existed(c, o.id, s->spec.unique_key);
	if (rc == CLI_OK)
		say_not_started(c, tq_ops_submit_started(&o, autostart(s), &err), &err);
	free(home);
	if (rc == CLI_OK && s->wait) {
		rc = wait_and_show(c, s, o.q, o.id);
		tq_queue_close(o.q);
		return rc;
	}
	tq_queue_close(o.q);
	if (rc != CLI_OK)
		return rc;
	return print_stored(s, o.id, o.existed);
}

/* ------------------------------------------------------------------ */
/* --file                                                             */

/*
 * Print an error of the importer or of the store as "FILE:LINE: what",
 * then tail (what a chunked import stored before it; may be "").
 * The importer says "line N: ..." (submit.h); the store says "task I: ..."
 * with I the index of the spec in the chunk of k specs that starts at spec
 * base, which cli_import_line maps back to the file's line.
 */
static int file_error(const struct cli_ctx *c, const char *file,
		      const struct cli_import *im, size_t base, size_t k,
		      const struct tq_err *err, const char *tail)
{
	const char *name = strcmp(file, "-") == 0 ? "<stdin>" : file;
	const char *m = err->msg, *rest = NULL;
	unsigned long long n = 0;
	int used = 0;

	if (sscanf(m, "line %llu: %n", &n, &used) == 1 && used > 0) {
		rest = m + used;
	} else if (im != NULL && sscanf(m, "task %llu: %n", &n, &used) == 1 && used > 0) {
		rest = m + used;
		n = cli_import_line(im, base + (size_t)n);
	} else if (im != NULL && k == 1 && err->code != TQ_EBUSY && err->code != TQ_EIO) {
		/* the store names the task only when there are several */
		rest = m;
		n = cli_import_line(im, base);
	}
	if (err->code == TQ_ENOMEM && tail[0] == '\0')
		return oom(c);
	if (rest == NULL) {
		cli_usage(c, "%s: %s%s", name, m, tail);
		return cli_exit_for(err->code);
	}
	if (cli_exit_for(err->code) == CLI_USAGE)
		return cli_usage(c, "%s:%llu: %s%s", name, n, rest, tail);
	return cli_runtime(c, "%s:%llu: %s%s", name, n, rest, tail);
}

/*
 * --file is stored in chunks, each its own transaction, that --resume can
 * go on with: ops/import.h (why chunks, the pacing between them, the run's
 * tokens, what a resume checks). Here: the ids printed as each chunk is
 * stored, and what an import that stopped says it stored.
 */
struct import_run {
	const struct cli_ctx *c;
	struct cli_submit *s;
	const char *file;
	const struct cli_import *im;
	struct tq_ops_import op;
	int opened;             /* --json: "[" printed */
};

static void import_line(void *arg, size_t i, size_t *line, uint64_t *sum)
{
	const struct import_run *r = arg;

	*line = cli_import_line(r->im, i);
	*sum = cli_import_line_sum(r->im, i);
}

/* A stored chunk's ids, in the file's order. */
static void print_chunk(void *arg, const int64_t *ids, const int *existed, size_t k)
{
	struct import_run *r = arg;

	for (size_t i = 0; i < k; i++) {
		if (r->s->json)
			printf("%s{\"id\":%lld%s}", r->opened++ ? "," : "[", (long long)ids[i],
			       existed[i] ? ",\"existed\":true" : "");
		else
			printf("%lld\n", (long long)ids[i]);
	}
	fflush(stdout); /* a stored task's id is out before the next chunk */
}

static void import_not_started(void *arg, const struct tq_err *err)
{
	const struct import_run *r = arg;

	say_not_started(r->c, err->code < 0 ? err->code : TQ_EIO, err);
}

/* The pending signal that stops the import, or 0. */
static int stop_signal(void *arg)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	sigset_t pend;

	(void)arg;
	if (sigpending(&pend) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigismember(&pend, sigs[i]))
			return sigs[i];
	return 0;
}

/* What was stored, for an import that stopped: "; lines 1-9999 are ...". */
static void stored_so_far(const struct import_run *r, char *buf, size_t n)
{
	const struct tq_ops_import *op = &r->op;

	if (op->done == 0 && !op->resumed) {
		buf[0] = '\0'; /* as for a file of one chunk: nothing was stored */
		return;
	}
	if (op->done == 0)
		snprintf(buf, n, "; nothing more was stored: run the same command with "
			 "--resume %s again to store the rest", op->run);
	else
		snprintf(buf, n, "; the tasks of lines %zu-%zu are stored (%zu task%s, "
			 "ids printed), the %zu after them are not: run the same command "
			 "with --resume %s to store the rest (a line stored already is "
			 "not stored again)", cli_import_line(r->im, 0),
			 cli_import_line(r->im, op->done - 1), op->done,
			 op->done == 1 ? "" : "s", op->n - op->done, op->run);
}

/* The words for where tq_ops_import stopped (rc), and the exit code. */
static int import_stopped(struct import_run *r, int rc, const struct tq_err *err)
{
	const struct tq_ops_import *op = &r->op;
	char tail[512];

	stored_so_far(r, tail, sizeof(tail));
	switch (rc) {
	case TQ_OPS_IMPORT_UNKNOWN_RUN:
		return cli_usage(r->c, "--resume %s: no import run %s is known in this state "
				 "directory (a run is kept a day): nothing stored", op->run,
				 op->run);
	case TQ_OPS_IMPORT_OTHER_LINE:
		return cli_usage(r->c, "%s:%zu: not the line run %s stored there as task %lld "
				 "(another file, or the file changed above the line that "
				 "stopped it)%s", r->file, op->bad_line, op->run,
				 (long long)op->bad_id, tail);
	case TQ_OPS_IMPORT_STOPPED:
		cli_runtime(r->c, "%s: interrupted (%s)%s", r->file, strsignal(op->signal),
			    tail);
		return 128 + op->signal;
	default:
		if (op->failed_k > 0)
			return file_error(r->c, r->file, r->im, op->done, op->failed_k, err,
					  tail);
		return err->code == TQ_ENOMEM ? oom(r->c) : cli_fail(r->c, err);
	}
}

/* Store the specs in chunks (ops/import.h); print the ids in the file's
 * order. */
static int store_many(const struct cli_ctx *c, struct cli_submit *s, const char *file,
		      const char *resume, const struct cli_import *im)
{
	struct import_run r = { .c = c, .s = s, .im = im };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	sigset_t stops, old;
	int rc;

	r.file = strcmp(file, "-") == 0 ? "<stdin>" : file;
	r.op.specs = cli_import_specs(im, &r.op.n);
	if (resume != NULL) {
		memcpy(r.op.run, resume, sizeof(r.op.run));
		r.op.resumed = 1;
	} else {
		tq_ops_import_new_run(r.op.run);
	}
	if (r.op.n == 0) {
		if (s->json)
			puts("[]");
		return CLI_OK;
	}
	/* SQLite opens and frees a temporary b-tree of ~90K for each insert
	 * (the CHECK (... IN (...)) lists of the tasks table); with glibc's
	 * default 128K trim threshold every free gives the heap's top back to
	 * the kernel and the next insert asks for it again: a third of the
	 * import's time in brk. This process is short-lived: keep the heap. */
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	if ((rc = cli_retry_ms(c, &r.op.retry_ms)) != CLI_OK ||
	    (rc = cli_open_retry(c, TQ_OPEN_DURABLE, r.op.retry_ms, &q)) != CLI_OK)
		return rc;
	r.op.q = q;
	r.op.home = c->home;
	r.op.autostart = autostart(s);
	r.op.line = import_line;
	r.op.stored = print_chunk;
	r.op.stop = stop_signal;
	r.op.not_started = import_not_started;
	r.op.arg = &r;
	/* A stop signal is taken between chunks (a chunk is short), so that
	 * what was stored can be said; none of them is handled, only held. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old);
	rc = tq_ops_import(&r.op, &err);
	if (rc != 0)
		rc = import_stopped(&r, rc, &err);
	if (r.op.started && s->json)
		puts(r.opened ? "]" : "[]");
	fflush(stdout);
	if (r.op.held > 0)
		fprintf(stderr, "taskq: %s: %zu of %zu task%s already present under "
			"their unique key; not added again (their ids are printed)\n",
			c->cmd->name, r.op.held, r.op.done, r.op.done == 1 ? " was" : "s were");
	tq_queue_close(q);
	/* a signal still pending after the last chunk: we are done anyway */
	if (rc == CLI_OK)
		sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* --file FILE: its lines on top of the command line's options. */
static int submit_file(const struct cli_ctx *c, struct cli_submit *s, const char *file,
		       const char *resume)
{
	struct tq_err err = TQ_ERR_INIT;
	struct cli_import *im = NULL;
	char *buf = NULL;
	size_t len;
	int rc;

	rc = read_all(c, "--file", file, 1, CLI_IMPORT_FILE_MAX, CLI_IMPORT_FILE_MAX_TEXT,
		      &buf, &len);
	if (rc != CLI_OK)
		return rc;
	if (cli_import_parse(buf, len, s, &im, &err) < 0)
		rc = file_error(c, file, NULL, 0, 0, &err, "");
	else
		rc = store_many(c, s, file, resume, im);
	cli_import_free(im);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */

static int parse(const struct cli_ctx *c, struct cli_submit *s, int argc, char **argv,
		 const char **file, const char **resume)
{
	struct cli_args a;
	int k, rc;

	cli_args_init(&a, argc, argv, 1);
	for (;;) {
		if (cli_submit_take_wait(c, s, &a, &rc)) {
			if (rc != CLI_OK)
				return rc;
			continue;
		}
		if ((k = cli_next(c, &a, submit_opts)) == CLI_OPT_END)
			break;
		if (k == CLI_OPT_ARG && *file != NULL)
			return cli_usage(c, "give either --file FILE or a command, not both");
		if (k == CLI_OPT_ARG)
			return cli_submit_take_command(c, s, &a, 1);
		if (k == CLI_OPT_ERR)
			return CLI_USAGE;
		if (k == OPT_FILE) {
			if (*a.val == '\0')
				return cli_usage(c, "--file: empty file name");
			*file = a.val;
			continue;
		}
		if (k == OPT_RESUME) {
			if (!tq_ops_import_run_ok(a.val))
				return cli_usage(c, "--resume \"%s\": expected the run id an "
						 "interrupted --file import printed, such as "
						 "--resume 3f9a0c1b2d4e5f60", a.val);
			*resume = a.val;
			continue;
		}
		if ((rc = cli_submit_take_opt(c, s, k, &a)) != CLI_OK)
			return rc;
	}
	if (*file == NULL)
		return cli_submit_take_command(c, s, &a, 0);
	if (s->shell != NULL)
		return cli_usage(c, "give either --file FILE or --shell \"STRING\", not both");
	if (s->wait)
		return cli_usage(c, "--wait takes one task; for the tasks of a file, "
				 "give them a --batch and run taskq wait --batch NAME");
	return CLI_OK;
}

static int run_submit(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_submit s;
	const char *file = NULL, *resume = NULL;
	int rc;

	cli_submit_init(&s);
	if ((rc = parse(c, &s, argc, argv, &file, &resume)) == CLI_OK && file == NULL &&
	    resume != NULL)
		rc = cli_usage(c, "--resume goes with --file FILE");
	if (rc == CLI_OK && (rc = cli_submit_prepare(c, &s)) == CLI_OK)
		rc = file != NULL ? submit_file(c, &s, file, resume) : cli_submit_store(c, &s);
	cli_submit_release(&s);
	return rc < 0 ? CLI_OK : rc; /* -1: --help was printed */
}

const struct cli_cmd cli_cmd_submit = {
	.name = "submit",
	.synopsis = "taskq submit [options] {[--] CMD [ARGS...] | --file FILE [--resume RUN]}",
	.summary = "Add a command to the queue and print its id.",
	.help = submit_help,
	.run = run_submit,
};
