/*
 * submit.h - what `taskq submit` shares with `taskq ask` and with the lines
 * of `taskq submit --file`: its options, the state they build, and storing.
 *
 * Usage (ask does this with its own options merged in):
 *
 *     struct cli_submit s;
 *     cli_submit_init(&s);
 *     ... for each option k: cli_submit_take_opt(c, &s, k, &a) ...
 *     ... set s.spec.argv/argc (or call cli_submit_take_command) ...
 *     rc = cli_submit_prepare(c, &s);   cwd, environment, --stdin-file
 *     rc = cli_submit_store(c, &s);     insert, wake, autostart, print/--wait
 *     cli_submit_release(&s);
 */
#ifndef TQ_CLI_SUBMIT_H
#define TQ_CLI_SUBMIT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "common/env.h"

/* A growable array of strings; owned or borrowed as the field says. */
struct cli_strv {
	const char **v;
	size_t n, cap;
};

int cli_strv_push(struct cli_strv *s, const char *p);

/* Everything submit collects before it stores the spec. */
struct cli_submit {
	struct tq_task_spec spec;
	const char *shell;
	const char *cwd_flag;
	struct cli_strv sets, unsets;   /* --env K=V, --unset K (borrowed) */
	struct tq_label *labels;        /* key and value point into label_bufs */
	char **label_bufs;
	size_t nlabels, labels_cap;
	int64_t *after;                 /* --after / --after-any ids */
	size_t nafter, after_cap;
	unsigned after_kinds;           /* CLI_AFTER_*: which of the two were given */
	const char *when_flag;          /* "--delay" or "--at" once given */
	int64_t delay_ms;               /* --delay: counted again at the insert */
	int clean_env, json, no_start;
	int keep_stall;                 /* --stall-timeout given (ask keeps it
					 * over the profile's) */
	int wait;                       /* --wait given */
	int64_t wait_ms;                /* its limit; 0: none */
	int wait_result;                /* ask: --wait prints the id on stderr,
					 * then the result as `taskq result`
					 * does (cli_ask_waited), not the output */
	const char *stdin_file;
	char *stdin_data;               /* --stdin-file's bytes */
	char *cwd;                      /* the resolved working directory (malloc'd) */
	char *shell_argv[4];
	struct tq_env env;
	struct cli_strv owned;          /* malloc'd strings freed by release */
	void *owned_argv;               /* a malloc'd argv array (ask), freed */
};

enum { CLI_AFTER_SUCCESS = 1 << 0, CLI_AFTER_ANY = 1 << 1 };

/* An --on-exit command is a shell command line, not a script. */
#define CLI_ON_EXIT_MAX (64 * 1024)
/* The largest --file: a million tasks with room to spare, in memory at
 * once (the import is one transaction). */
#define CLI_IMPORT_FILE_MAX ((int64_t)1024 * 1024 * 1024)
#define CLI_IMPORT_FILE_MAX_TEXT "1G"

/* submit's options, NULL-terminated (keys >= 256 and < 512; ask's own keys
 * start at 512). Does not include --file, which only submit takes. */
extern const struct cli_opt cli_submit_opts[];

void cli_submit_init(struct cli_submit *s);
void cli_submit_release(struct cli_submit *s);

/* Keep p (malloc'd) until release. Returns p, or NULL (and frees p) when
 * out of memory. */
char *cli_submit_own(struct cli_submit *s, char *p);

/* One of cli_submit_opts (key k, value in a->val). CLI_OK, an exit code
 * after printing the error, or -1 after printing --help (exit 0). */
int cli_submit_take_opt(const struct cli_ctx *c, struct cli_submit *s, int k,
			const struct cli_args *a);

/* The command: --shell's (given before), else the arguments from
 * a->argv[a->i - 1] on (have_cmd: cli_next returned CLI_OPT_ARG). Borrowed,
 * not copied. CLI_OK or an exit code after printing the error. */
int cli_submit_take_command(const struct cli_ctx *c, struct cli_submit *s,
			    const struct cli_args *a, int have_cmd);

/* --wait[=DUR] at a->argv[a->i]: returns 1 (and *rc) when it was one. */
int cli_submit_take_wait(const struct cli_ctx *c, struct cli_submit *s,
			 struct cli_args *a, int *rc);

/*
 * --wait's two halves, which cli_submit_store runs after the insert (a
 * caller that stores by other means may run them itself):
 *
 * (ask --wait, s->wait_result, runs the first and prints its answer with
 * cli_ask_waited in place of the second, but for a signal.)
 *
 * cli_submit_wait says on stderr at once which task it waits for (unless
 * s->wait_result: ask says it its own way), then
 * follows task id (cli.h, cli_follow) until it ends, s->wait_ms passes, or
 * SIGINT/SIGTERM/SIGHUP comes, printing its output to p as it arrives (p
 * NULL: none). CLI_OK with f filled (release it), or an exit code after
 * printing the error.
 *
 * cli_submit_show_end prints the end and returns the exit code: ended: the
 * output if it was not streamed (stdout lines to stdout, stderr lines to
 * stderr), a line for an end the output does not explain (could not
 * start, timed out, ...), the task's exit status; the wait ran out: the id
 * on stdout, the last 20 lines on stderr unless streamed, "task N is still
 * running; taskq poll N / taskq log N --follow", 0; a signal: "task N still
 * running; taskq log N --follow", 128+N. --json (not with wait_result):
 * its one object instead of the lines and the id.
 */
int cli_submit_wait(const struct cli_ctx *c, struct cli_submit *s, struct tq_queue *q,
		    int64_t id, struct cli_follow *f, struct cli_lines *p);
int cli_submit_show_end(const struct cli_ctx *c, struct cli_submit *s, struct tq_queue *q,
			struct cli_follow *f);

/* Resolve --cwd, build the environment (scrub, --unset, --env), read
 * --stdin-file; fills the spec's pointers (cwd, env, labels, after). */
int cli_submit_prepare(const struct cli_ctx *c, struct cli_submit *s);

/* Insert the task (durably), ring the doorbell, autostart a supervisor,
 * then print the id (or --json, or wait with --wait). A --unique key held
 * by an unfinished task prints that task's id and says so on stderr. */
int cli_submit_store(const struct cli_ctx *c, struct cli_submit *s);

/*
 * The --file importer (import.c), apart from the store so that it can be
 * fuzzed: parse JSON lines (buf, len bytes; blank lines skipped) into task
 * specs, each line on top of the options given on the command line
 * (defaults, already prepared; NULL: none). On a bad line returns
 * TQ_EINVAL with err "line N: what is wrong" and *out NULL.
 */
struct cli_import;
int cli_import_parse(const char *buf, size_t len, const struct cli_submit *defaults,
		     struct cli_import **out, struct tq_err *err);
/* The specs, in file order; valid until cli_import_free. */
const struct tq_task_spec *cli_import_specs(const struct cli_import *im, size_t *n);
/* The file's line (1-based) that spec i came from; 0 if i is out of range. */
size_t cli_import_line(const struct cli_import *im, size_t i);
/* A checksum of the bytes of that line (what --resume knows it by). */
uint64_t cli_import_line_sum(const struct cli_import *im, size_t i);
void cli_import_free(struct cli_import *im);  /* NULL is fine */

/*
 * Checks shared by the flags and the lines of --file. They, the importer and
 * cli_strv_push / cli_submit_init / _release / _own live in import.c, which
 * needs nothing else of the CLI but cli_ask_apply (ask.h), so a fuzzer links
 * it alone with the common code. Each returns 0 or TQ_EINVAL (or TQ_ENOMEM)
 * with a message that does not name the flag or the field.
 */

/* A task, batch, group, session name, label key or unique key: 1 to
 * TQ_NAME_MAX - 1 bytes, valid UTF-8, no control characters. */
int cli_check_name(const char *s, struct tq_err *err);

/* "ID[,ID...]": appended to *ids (reallocarray'd; *n used, *cap allocated). */
int cli_ids_parse(const char *s, int64_t **ids, size_t *n, size_t *cap,
		  struct tq_err *err);

/*
 * --at TIME: ms since the epoch. ISO-8601 "2026-11-23T04:00", with seconds
 * (":00"), fractions (".250"), a space for the T, and a zone ("Z", "+02:00",
 * "-0530"); a date alone is its midnight; no zone is local time. "HH:MM" (or
 * "HH:MM:SS") is the next such local time after now_ms: today, or tomorrow
 * if it has passed.
 */
int cli_time_parse(const char *s, int64_t now_ms, int64_t *ms, struct tq_err *err);

#endif
