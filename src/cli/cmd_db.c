/*
 * cmd_db.c - taskq db migrate: make or migrate the store's schema now and
 * say its version, for a deploy that wants the schema right before it
 * starts nodes (serve migrates too, and so does any command that opens the
 * store). PostgreSQL: migrators on many nodes at once take turns on an
 * advisory lock (queue/pg/db.c); SQLite: the state directory's database.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char db_help[] =
	"Subcommands:\n"
	"  migrate   create or migrate the store's schema and print its version:\n"
	"            the SQLite database of the state directory, or the PostgreSQL\n"
	"            database of --db / TASKQ_DB / the config's \"database\"\n"
	"\n"
	"Options:\n"
	"  --json    {\"backend\": \"postgresql\", \"schema_version\": 9}\n"
	"\n"
	"Example:\n"
	"  taskq --db postgresql://taskq@db1/taskq db migrate\n";

enum { OPT_JSON = 300 };

static const struct cli_opt db_opts[] = {
	{ "json", OPT_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

static int run_db(struct cli_ctx *c, int argc, char **argv)
{
	struct tq_err err = TQ_ERR_INIT;
	const char *sub = NULL, *db = getenv(TQ_DB_VAR);
	const char *backend = db != NULL && tq_queue_is_database(db) ? "postgresql" : "sqlite";
	struct tq_queue *q = NULL;
	struct cli_args a;
	int64_t version = 0;
	int k, json = 0, rc;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, db_opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP:
			return cli_print_help(&cli_cmd_db, stdout);
		case OPT_JSON:
			json = 1;
			break;
		case CLI_OPT_ARG:
			if (sub != NULL)
				return cli_usage(c, "unexpected argument \"%s\"", a.val);
			sub = a.val;
			break;
		default:
			return CLI_USAGE;
		}
	}
	if (sub == NULL)
		return cli_usage(c, "no subcommand given; see 'taskq help db'");
	if (strcmp(sub, "migrate") != 0)
		return cli_usage(c, "unknown subcommand \"%s\"; see 'taskq help db'", sub);
	if ((rc = cli_open(c, 0, &q)) != CLI_OK)
		return rc;
	rc = tq_queue_schema_version(q, &version, &err);
	tq_queue_close(q);
	if (rc < 0)
		return cli_fail(c, &err);
	if (json)
		printf("{\"backend\": \"%s\", \"schema_version\": %lld}\n", backend,
		       (long long)version);
	else
		printf("%s store: schema version %lld\n", backend, (long long)version);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_db = {
	.name = "db",
	.synopsis = "taskq db migrate [--json]",
	.summary = "Create or migrate the store's schema and print its version.",
	.help = db_help,
	.run = run_db,
};
