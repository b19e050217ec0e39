/*
 * fuzz_import.c - libFuzzer harness for `taskq submit --file`'s JSON-lines
 * importer (src/cli/submit.h: cli_import_parse), which reads a file a user
 * or a cron job wrote: any bytes at all.
 *
 * The importer lives in the CLI sources, so this harness is linked with all
 * of them, main.c compiled with -Dmain=taskq_cli_main (tests/fuzz/meson.build).
 * Parsed twice: with no defaults, and over the defaults of a plain
 * `taskq submit --file F` (cli_submit_init, a cwd).
 * Checked beyond "no crash, no sanitizer report, no hang":
 *   - success gives an import and its specs; each spec has a command
 *     (argc >= 1, argv[0..argc-1] non-NULL strings) and NULL-or-string
 *     names; a shell spec is {"/bin/sh", "-c", STRING};
 *   - failure is TQ_EINVAL, *out NULL, and a message "line N: ...".
 * A failed check abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/submit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what)
{
	fprintf(stderr, "fuzz_import: %s\n", what);
	abort();
}

static void check_spec(const struct tq_task_spec *t)
{
	volatile size_t n = 0;
	size_t i;

	if (t->argc < 1 || t->argv == NULL)
		die("a spec without a command");
	for (i = 0; i < t->argc; i++) {
		if (t->argv[i] == NULL)
			die("a NULL argument");
		n += strlen(t->argv[i]);
	}
	if (t->shell && (t->argc != 3 || strcmp(t->argv[1], "-c") != 0))
		die("a shell spec that is not sh -c STRING");
	if (t->name)
		n += strlen(t->name);
	if (t->cwd)
		n += strlen(t->cwd);
	if (t->batch)
		n += strlen(t->batch);
	if (t->group)
		n += strlen(t->group);
	for (i = 0; i < t->envc; i++)
		n += strlen(t->env[i]);
	for (i = 0; i < t->nlabels; i++)
		n += strlen(t->labels[i].key) + strlen(t->labels[i].value);
	(void)n;
}

static void parse(const uint8_t *data, size_t size, const struct cli_submit *defaults)
{
	struct tq_err err = TQ_ERR_INIT;
	struct cli_import *im = (struct cli_import *)&err; /* must be overwritten */
	const struct tq_task_spec *specs;
	size_t n = 0, i;
	int rc;

	rc = cli_import_parse((const char *)data, size, defaults, &im, &err);
	if (rc < 0) {
		if (rc != TQ_EINVAL)
			die("an error other than TQ_EINVAL");
		if (im != NULL)
			die("*out not NULL after an error");
		if (strncmp(err.msg, "line ", 5) != 0)
			die("an error message not starting with \"line N: \"");
		return;
	}
	if (rc != 0 || im == NULL)
		die("success without an import");
	specs = cli_import_specs(im, &n);
	if (n > 0 && specs == NULL)
		die("specs NULL with n > 0");
	for (i = 0; i < n; i++)
		check_spec(&specs[i]);
	cli_import_free(im);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cli_submit s;

	parse(data, size, NULL);
	cli_submit_init(&s);
	s.spec.cwd = "/tmp";
	parse(data, size, &s);
	cli_submit_release(&s);
	return 0;
}
