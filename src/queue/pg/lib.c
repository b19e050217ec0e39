/*
 * lib.c - libpq, loaded when a PostgreSQL store is first opened. taskq is
 * not linked with libpq: a process on the SQLite store (every client start
 * by default) maps neither libpq nor what libpq needs (libssl, libcrypto,
 * gssapi, ldap: 30 libraries, their relocations paid before main). The
 * few functions used are resolved into one table; a missing library or
 * symbol is one line, and nothing else changes.
 */
#include "internal.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#define TQ_PQ_SONAME "libpq.so.5"

static struct tq_pq_api api;
const struct tq_pq_api *tq_pq;

static const struct {
	const char *name;
	size_t off;
} syms[] = {
	{ "PQconnectdb", offsetof(struct tq_pq_api, connectdb) },
	{ "PQconnectdbParams", offsetof(struct tq_pq_api, connectdb_params) },
	{ "PQpingParams", offsetof(struct tq_pq_api, ping_params) },
	{ "PQstatus", offsetof(struct tq_pq_api, status) },
	{ "PQerrorMessage", offsetof(struct tq_pq_api, error_message) },
	{ "PQfinish", offsetof(struct tq_pq_api, finish) },
	{ "PQreset", offsetof(struct tq_pq_api, reset) },
	{ "PQexec", offsetof(struct tq_pq_api, exec) },
	{ "PQexecParams", offsetof(struct tq_pq_api, exec_params) },
	{ "PQresultStatus", offsetof(struct tq_pq_api, result_status) },
	{ "PQresultErrorField", offsetof(struct tq_pq_api, result_error_field) },
	{ "PQresultErrorMessage", offsetof(struct tq_pq_api, result_error_message) },
	{ "PQntuples", offsetof(struct tq_pq_api, ntuples) },
	{ "PQgetvalue", offsetof(struct tq_pq_api, getvalue) },
	{ "PQgetisnull", offsetof(struct tq_pq_api, getisnull) },
	{ "PQgetlength", offsetof(struct tq_pq_api, getlength) },
	{ "PQclear", offsetof(struct tq_pq_api, clear) },
	{ "PQcmdTuples", offsetof(struct tq_pq_api, cmd_tuples) },
	{ "PQsocket", offsetof(struct tq_pq_api, socket) },
	{ "PQconsumeInput", offsetof(struct tq_pq_api, consume_input) },
	{ "PQnotifies", offsetof(struct tq_pq_api, notifies) },
	{ "PQfreemem", offsetof(struct tq_pq_api, freemem) },
	{ "PQsetNoticeProcessor", offsetof(struct tq_pq_api, set_notice_processor) },
	{ "PQtransactionStatus", offsetof(struct tq_pq_api, transaction_status) },
};

int tq_pq_load(struct tq_err *err)
{
	void *h;

	if (tq_pq != NULL)
		return 0;
	/* RTLD_LOCAL: its symbols stay out of the process's namespace;
	 * never closed: the table points into it for the process's life */
	if ((h = dlopen(TQ_PQ_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return tq_err_set(err, TQ_EIO, "PostgreSQL store: cannot load %s (install "
				  "the libpq5 package): %s", TQ_PQ_SONAME, dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(h, syms[i].name);

		if (f == NULL) {
			dlclose(h);
			return tq_err_set(err, TQ_EIO, "PostgreSQL store: %s has no %s (a "
					  "libpq older than 10?)", TQ_PQ_SONAME, syms[i].name);
		}
		/* POSIX: a function pointer converts to and from void * (dlsym) */
		memcpy((char *)&api + syms[i].off, &f, sizeof(f));
	}
	tq_pq = &api;
	return 0;
}
