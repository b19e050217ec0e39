/*
 * opts.c - the option parser every command uses.
 *
 * Not getopt_long: it prints its own messages (two lines, not ours), accepts
 * abbreviations of long options (a later option can make an abbreviation
 * ambiguous and break scripts), and reports an unknown long option without
 * saying which. Here: "--name VALUE" and "--name=VALUE", one-letter forms
 * only where a command declares them, "-h"/"--help" everywhere, "--" ends
 * options. A value is taken as is, even when it starts with '-'
 * ("--priority -5").
 */
#include "cli.h"

#include <string.h>

void cli_args_init(struct cli_args *a, int argc, char **argv, int stop_at_arg)
{
	memset(a, 0, sizeof(*a));
	a->argc = argc;
	a->argv = argv;
	a->i = 1;
	a->stop_at_arg = stop_at_arg;
}

/* The option whose long name is the n bytes at name, or NULL. */
static const struct cli_opt *find_long(const struct cli_opt *opts,
				       const char *name, size_t n)
{
	for (; opts != NULL && opts->name != NULL; opts++)
		if (strlen(opts->name) == n && strncmp(opts->name, name, n) == 0)
			return opts;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_opt *opts, char ch)
{
	for (; opts != NULL && opts->name != NULL; opts++)
		if (opts->short_name != 0 && opts->short_name == ch)
			return opts;
	return NULL;
}

/* Take the option's value: inline (after '='), or the next argument. */
static int take_value(const struct cli_ctx *c, struct cli_args *a,
		      const struct cli_opt *o, const char *inline_val)
{
	if (!o->has_arg) {
		if (inline_val != NULL)
			return cli_usage(c, "%s: takes no value", a->flag), CLI_OPT_ERR;
		a->val = NULL;
		return o->key;
	}
	if (inline_val != NULL) {
		a->val = inline_val;
		return o->key;
	}
	if (a->i >= a->argc)
		return cli_usage(c, "%s: missing value", a->flag), CLI_OPT_ERR;
	a->val = a->argv[a->i++];
	return o->key;
}

/* A "--long[=value]" argument at a->argv[a->i - 1]. */
static int long_opt(const struct cli_ctx *c, struct cli_args *a,
		    const struct cli_opt *opts, const char *arg)
{
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t n = eq != NULL ? (size_t)(eq - name) : strlen(name);
	const struct cli_opt *o = find_long(opts, name, n);

	a->flag = arg;
	if (o == NULL && n == 4 && strncmp(name, "help", 4) == 0 && eq == NULL)
		return CLI_OPT_HELP;
	if (o == NULL) {
		/* name the option without its value (which may be a secret) */
		return cli_usage(c, "unknown option \"--%.*s\"", (int)n, name),
		       CLI_OPT_ERR;
	}
	if (eq != NULL) {
		/* messages name the flag, not the flag with its value */
		snprintf(a->flagbuf, sizeof(a->flagbuf), "--%.*s",
			 (int)(n < 60 ? n : 60), name);
		a->flag = a->flagbuf;
	}
	return take_value(c, a, o, eq != NULL ? eq + 1 : NULL);
}

/* A "-x" argument. Options are not bundled ("-hx"): nothing needs it. */
static int short_opt(const struct cli_ctx *c, struct cli_args *a,
		     const struct cli_opt *opts, const char *arg)
{
	const struct cli_opt *o = arg[2] == '\0' ? find_short(opts, arg[1]) : NULL;

	a->flag = arg;
	if (o == NULL && strcmp(arg, "-h") == 0)
		return CLI_OPT_HELP;
	if (o == NULL)
		return cli_usage(c, "unknown option \"%s\"", arg), CLI_OPT_ERR;
	return take_value(c, a, o, NULL);
}

int cli_next(const struct cli_ctx *c, struct cli_args *a, const struct cli_opt *opts)
{
	const char *arg;

	if (a->i >= a->argc)
		return CLI_OPT_END;
	arg = a->argv[a->i++];
	a->flag = NULL;
	if (!a->only_args && strcmp(arg, "--") == 0) {
		a->only_args = 1;
		return cli_next(c, a, opts);
	}
	/* "-" alone is an argument (stdin, by convention), not an option */
	if (a->only_args || arg[0] != '-' || arg[1] == '\0') {
		a->val = arg;
		if (a->stop_at_arg)
			a->only_args = 1;
		return CLI_OPT_ARG;
	}
	if (arg[1] == '-')
		return long_opt(c, a, opts, arg);
	return short_opt(c, a, opts, arg);
}
