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
	int clean_env, json, no_start;
	int wait;                       /* --wait given */
	int64_t wait_ms;                /* its limit; 0: none */
	const char *stdin_file;
	char *stdin_data;               /* --stdin-file's bytes */
	char cwd[PATH_MAX];
	char *shell_argv[4];
	struct tq_env env;
	struct cli_strv owned;          /* malloc'd strings freed by release */
	void *owned_argv;               /* a malloc'd argv array (ask), freed */
};

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

/* --wait[=DUR] at a->argv[a->i]: returns 1 (and *rc) when it was one. */
int cli_submit_take_wait(const struct cli_ctx *c, struct cli_submit *s,
			 struct cli_args *a, int *rc);

/* Resolve --cwd, build the environment (scrub, --unset, --env), read
 * --stdin-file; fills the spec's pointers. */
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
void cli_import_free(struct cli_import *im);

#endif
