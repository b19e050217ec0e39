/*
 * cli.h - what the command files of the taskq CLI share: the command table
 * entry, option parsing, errors and exit codes, opening the queue, output.
 *
 * The CLI only parses, calls src/queue (queue.h) and prints: no SQL and no
 * process control live here. Every error reaches the user as exactly one
 * line on stderr, "taskq: CMD: what went wrong", and one of three exit codes.
 */
#ifndef TQ_CLI_H
#define TQ_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "queue/home.h"
#include "queue/logstore.h"
#include "queue/queue.h"

/* Exit codes (documented in `taskq help` and the README). */
enum cli_exit {
	CLI_OK = 0,
	CLI_RUNTIME = 1, /* database, I/O, a task in the wrong state */
	CLI_USAGE = 2,   /* bad flag or value, unknown command, id or state */
};

/* Priorities are bounded to 32 bits so a PostgreSQL INTEGER column holds
 * them as SQLite does. */
#define CLI_PRIORITY_MAX INT32_MAX
/* More retries than this is a mistake (a loop that never gives up). */
#define CLI_RETRIES_MAX 1000
/* A label value is shown in tables; longer text belongs in a file. */
#define CLI_LABEL_VALUE_MAX 1024

struct cli_cmd;

/* What every command gets from main. */
struct cli_ctx {
	const char *home_flag;     /* --home DIR, or NULL */
	const struct cli_cmd *cmd; /* the command running (names errors) */
	char *home;                /* the state directory cli_open resolved
				    * (PATH_MAX bytes, main's; "" before): the
				    * local node's, for its sockets and files */
};

/*
 * One command. run gets the arguments after the command name (argv[0] is
 * the name as typed) and returns an exit code.
 */
struct cli_cmd {
	const char *name;
	const char *alias;    /* NULL: none */
	const char *synopsis; /* "taskq show ID [--json] [--show-env]": the one
			       * synopsis, used by `taskq help` and --help */
	const char *summary;  /* one line for the command list */
	const char *help;     /* the rest of --help: options, examples */
	int (*run)(struct cli_ctx *c, int argc, char **argv);
};

extern const struct cli_cmd cli_cmd_submit;
extern const struct cli_cmd cli_cmd_db;
extern const struct cli_cmd cli_cmd_ask;
extern const struct cli_cmd cli_cmd_result;
extern const struct cli_cmd cli_cmd_stats;
extern const struct cli_cmd cli_cmd_session;
extern const struct cli_cmd cli_cmd_sessions;
extern const struct cli_cmd cli_cmd_wait;
extern const struct cli_cmd cli_cmd_batch;
extern const struct cli_cmd cli_cmd_group;
extern const struct cli_cmd cli_cmd_clear;
extern const struct cli_cmd cli_cmd_list;
extern const struct cli_cmd cli_cmd_show;
extern const struct cli_cmd cli_cmd_classify;
extern const struct cli_cmd cli_cmd_log;
extern const struct cli_cmd cli_cmd_poll;
extern const struct cli_cmd cli_cmd_cancel;
extern const struct cli_cmd cli_cmd_remove;
extern const struct cli_cmd cli_cmd_kill;
extern const struct cli_cmd cli_cmd_write;
extern const struct cli_cmd cli_cmd_retry;
extern const struct cli_cmd cli_cmd_pause;
extern const struct cli_cmd cli_cmd_resume;
extern const struct cli_cmd cli_cmd_serve;
extern const struct cli_cmd cli_cmd_drain;
extern const struct cli_cmd cli_cmd_status;
extern const struct cli_cmd cli_cmd_shutdown;
extern const struct cli_cmd cli_cmd_worker;
extern const struct cli_cmd cli_cmd_help;
extern const struct cli_cmd cli_cmd_version;

/* The command table (main.c), NULL-terminated, in the order help lists it. */
extern const struct cli_cmd *const cli_cmds[];

/* The command named name or aliased so, or NULL. */
const struct cli_cmd *cli_find_cmd(const char *name);

/* Print a command's synopsis and help to f. Returns CLI_OK. */
int cli_print_help(const struct cli_cmd *cmd, FILE *f);

/* ------------------------------------------------------------------ */
/* Options (opts.c)                                                   */

/*
 * One option a command accepts. key is the value cli_next returns for it
 * (a character for a one-letter form, else any int >= 256). Every command
 * also accepts -h/--help, returned as CLI_OPT_HELP.
 */
struct cli_opt {
	const char *name;  /* long form without "--": "timeout" */
	int key;
	int has_arg;       /* 1: takes a value (--timeout 5m, --timeout=5m) */
	char short_name;   /* 0: none */
};

enum {
	CLI_OPT_END = -1,  /* no more arguments */
	CLI_OPT_ARG = -2,  /* a positional argument, in a->val */
	CLI_OPT_ERR = -3,  /* a usage error, already printed */
	CLI_OPT_HELP = -4, /* -h or --help */
};

/*
 * The state of one parse. Options may come before or after positional
 * arguments ("show 5 --json"), unless stop_at_arg is set (submit: the first
 * positional argument starts the command, whose own flags are not ours).
 * "--" ends options; everything after it is positional.
 */
struct cli_args {
	int argc;
	char **argv;
	int i;            /* next argv index to read */
	int stop_at_arg;
	int only_args;    /* set after "--" */
	const char *val;  /* the option's value, or the positional argument */
	const char *flag; /* the option as typed ("--timeout"), for messages */
	char flagbuf[64]; /* the flag of "--name=VALUE", without the value */
};

/* Start parsing argv[1..argc-1] (argv[0] is the command's name). */
void cli_args_init(struct cli_args *a, int argc, char **argv, int stop_at_arg);

/*
 * The next option's key, CLI_OPT_ARG, CLI_OPT_HELP, CLI_OPT_END, or
 * CLI_OPT_ERR after printing one line (an unknown option, a missing or
 * unexpected value). With stop_at_arg, after the first positional argument
 * (returned as CLI_OPT_ARG) the rest are at a->argv[a->i ...].
 */
int cli_next(const struct cli_ctx *c, struct cli_args *a, const struct cli_opt *opts);

/* ------------------------------------------------------------------ */
/* Errors and exit codes (main.c)                                     */

/* Print "taskq: CMD: message" (control characters escaped, so it stays one
 * line) and return CLI_USAGE or CLI_RUNTIME. */
int cli_usage(const struct cli_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cli_runtime(const struct cli_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A name, key or other text the store keeps as text, given as flag or
 * argument what: CLI_OK when s is valid UTF-8, else one line,
 * `WHAT "S": not valid UTF-8`, and CLI_USAGE. Nothing stored can be
 * anything else (tq_spec_check), so a look-up by such a name is refused the
 * same way on SQLite and PostgreSQL (whose text takes none). */
int cli_check_text(const struct cli_ctx *c, const char *what, const char *s);

/* A line that is not an error, the same way: "taskq: CMD: message". */
void cli_note(const struct cli_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "taskq: CMD: no task id given; usage: SYNOPSIS" with the command's
 * synopsis folded onto that one line (a long synopsis is written on
 * several for `help`); returns CLI_USAGE. */
int cli_usage_no_id(const struct cli_ctx *c);

/* The exit code for a TQ_E* code: TQ_EINVAL and TQ_ENOTFOUND (an id or a
 * name the user gave) are usage errors, the rest runtime errors. */
int cli_exit_for(int code);

/* Print err's message as one line and return cli_exit_for(err->code). */
int cli_fail(const struct cli_ctx *c, const struct tq_err *err);

/*
 * Resolve the state directory and open the queue with flags. On failure
 * prints the error and returns its exit code (*q is NULL); 0 on success
 * (*q set). With TQ_OPEN_NOCREATE (every command but submit, serve, drain
 * and group set), a state directory or database that does not exist is
 * CLI_USAGE after one line naming the path and what chose it ("state
 * directory /tmp/typo does not exist (state directory from TASKQ_HOME);
 * ..."): most
 * often a typo, which an empty answer would hide.
 */
int cli_open(const struct cli_ctx *c, unsigned flags, struct tq_queue **q);

/* cli_open for a command that stores (submit --file): a store whose server
 * cannot be reached is tried again for retry_ms (ops/submit.h). */
int cli_open_retry(const struct cli_ctx *c, unsigned flags, int64_t retry_ms,
		   struct tq_queue **q);

/* TASKQ_DB_RETRY (ops/submit.h) into *ms; a bad value is CLI_USAGE, said. */
int cli_retry_ms(const struct cli_ctx *c, int64_t *ms);

/* cli_open with TQ_OPEN_NOCREATE, where a queue that does not exist yet is
 * no error: CLI_OK with *q NULL, nothing printed (ask looking up a session
 * before the first submit creates the queue). */
int cli_open_if_exists(const struct cli_ctx *c, unsigned flags, struct tq_queue **q);

/* Parse a task id; on failure print `"abc": expected a task id` and return
 * CLI_USAGE. */
int cli_parse_id(const struct cli_ctx *c, const char *s, int64_t *id);

/* Flush stdout; on failure (a full disk, a closed pipe) print why and
 * return CLI_RUNTIME. main calls it after every command. */
int cli_finish_stdout(const struct cli_ctx *c);

/* ------------------------------------------------------------------ */
/* Task output and status (cmd_log.c, status.c)                       */

struct cJSON;
struct tq_log_line;

/*
 * The exit status that stands for how task t ended, the shell's way:
 * succeeded 0; failed with exit code N: N; died by signal N: 128+N;
 * timed_out 124; killed 128+N (the signal; 137 if none is known);
 * spawn_failed 127; output_overflow, lost, canceled: 1. -1 while t has not
 * reached a final state. The table is in `taskq help log` and the README.
 */
int cli_task_status(const struct tq_task *t);

/*
 * Printing log lines (struct tq_log_line, queue/logstore.h) the way `taskq
 * log` does. Raw: each line's exact bytes, plus '\n' only where the output
 * had one, so the concatenation is the output byte for byte. Escaped (a
 * terminal, unless raw was asked for): each line through cli_esc (NUL as
 * "\000"), one per output line, a line that had no newline ending in "\c"
 * (as in echo). JSON: one object per line (cli_log_line_json).
 */
struct cli_lines {
	FILE *out;          /* stdout lines (and stderr lines unless err) */
	FILE *err;          /* stderr lines: out, or another stream (split) */
	int esc_out, esc_err; /* escape what goes to out / err */
	int json;           /* JSON lines on out instead */
	int rc;             /* first error (TQ_ENOMEM), or 0 */
	int64_t count;      /* lines printed */
	int64_t last;       /* n of the last line printed */
	int open;           /* the last raw line printed had no '\n' */
	char *tmp;          /* scratch for escaping */
	size_t tmp_cap;
};

/* Print stdout lines to out and stderr lines to err (the same FILE for
 * merged output); escape for whichever of them is a terminal unless raw. */
void cli_lines_init(struct cli_lines *p, FILE *out, FILE *err, int raw);
void cli_lines_release(struct cli_lines *p);
/* Print one line; 0 or TQ_ENOMEM (also kept in p->rc). */
int cli_lines_put(struct cli_lines *p, const struct tq_log_line *l);
/* tq_log_line_cb for tq_log_read with arg a struct cli_lines: prints each
 * line, stops at the first error. */
int cli_lines_cb(const struct tq_log_line *l, void *arg);

/* ------------------------------------------------------------------ */
/* Following a task (follow.c)                                        */

/*
 * Wait for a task to end, printing its new lines as they arrive: the wait
 * of log --follow and submit --wait (ask --wait). Usage:
 *
 *     struct cli_follow f;
 *     cli_follow_init(&f, q, id);
 *     f.lines = &p;            (optional: where lines go; NULL prints none)
 *     f.next = N;              (optional: the first line to print, from 1)
 *     f.wait_ms = ms;          (optional: give up after ms; 0: never)
 *     how = cli_follow_run(&f, &err);
 *     ... f.task is the task as last read; cli_follow_say_end(c, &f.task)
 *     cli_follow_release(&f);
 *
 * While it runs SIGINT, SIGTERM and SIGHUP are blocked and read from a
 * signalfd: they end the wait (CLI_FOLLOW_SIGNAL, f.signal), never the
 * task; cli_follow_release unblocks them.
 */
enum cli_follow_how {
	CLI_FOLLOW_ENDED = 1,   /* the task reached a final state (or stdout
				 * failed: ferror(stdout) says so) */
	CLI_FOLLOW_TIMEOUT,     /* wait_ms passed first */
	CLI_FOLLOW_SIGNAL,      /* a signal came first (f.signal) */
};

struct cli_follow {
	struct tq_queue *q;       /* borrowed */
	int64_t id;
	enum tq_stream stream;    /* which lines, and the numbering of next */
	struct cli_lines *lines;  /* borrowed; NULL: print no lines */
	int64_t next;             /* the first line not printed yet (1-based) */
	struct tq_log_file file;  /* the log file next counts in (zeros: none yet) */
	int64_t wait_ms;          /* 0: until the task ends */
	struct tq_task task;      /* as last read (owned) */
	int how;                  /* what cli_follow_run returned last */
	int signal;               /* CLI_FOLLOW_SIGNAL: the signal */
	/* private */
	struct tq_log_watch *watch; /* more output may have come (NULL: none) */
	int sig_fd;
	int since_look;           /* lines printed since the last look for a signal */
	sigset_t old_mask;
};

void cli_follow_init(struct cli_follow *f, struct tq_queue *q, int64_t id);
/* Catch the signals from now on (cli_follow_run does, if not done yet):
 * for a caller that prints something first (log's first page). */
void cli_follow_catch(struct cli_follow *f);
/* A cli_follow_how (also in f->how), or a TQ_E* code with err set (the task
 * was removed: TQ_ENOTFOUND). A signal that stops the printing of a backlog
 * wins over the task's end: f->task may then be final. */
int cli_follow_run(struct cli_follow *f, struct tq_err *err);
void cli_follow_release(struct cli_follow *f);
/* tq_log_line_cb with arg the struct cli_follow: prints to f->lines, and
 * stops at a caught signal (f->signal), looking every few hundred lines:
 * for a first page printed before cli_follow_run (log --follow). */
int cli_follow_lines_cb(const struct tq_log_line *l, void *arg);

/* One line on stderr for a task whose end its output and exit status do not
 * explain: "taskq: CMD: task 5 could not start: exec \"x\": No such file or
 * directory" (also timed out, was killed, was lost, was canceled, stalled,
 * reached its output cap); nothing for succeeded, failed, or died by a
 * signal (nor for output_lost: cli_note_output_missing), nor for a task
 * that has not ended. */
void cli_follow_say_end(const struct cli_ctx *c, const struct tq_task *t);

/* One line on stderr, after the output printed, when some of task t's
 * output could not be stored (output_lost, or an attempt's reason saying
 * so): "taskq: CMD: task 5: output missing: attempt 1: ...". Not an error.
 * (cmd_log.c) */
void cli_note_output_missing(const struct cli_ctx *c, struct tq_queue *q,
			     const struct tq_task *t);

/* {"n":N,"stream":"stdout"|"stderr","text":...} plus "text_base64" (exact
 * bytes) when the line is not valid UTF-8 or holds a NUL (then "text" has
 * U+FFFD for those bytes), plus "newline":false for a line that had none.
 * NULL when out of memory (*oom set). */
struct cJSON *cli_log_line_json(const struct tq_log_line *l, int *oom);

/* Add to o how t stands: state, outcome, exit_code, signal, exit_status
 * (cli_task_status, null until it ends), reason. */
void cli_json_task_end(struct cJSON *o, const struct tq_task *t, int *oom);

/* One task in a summary (wait --json, batch show --json): id, name, how it
 * stands (cli_json_task_end), category, attempt. NULL when out of memory
 * (*oom set). */
struct cJSON *cli_task_summary_json(const struct tq_task *t, int *oom);

#endif
