/*
 * stmt.c - the texts and names of the statements of stmts.def, and the
 * builder of the list statement's per-shape text. No SQLite call: the cache
 * that prepares them is in db.c.
 */
#include "stmt.h"

#include <stdio.h>

#include "common/err.h"

static const char *const stmt_sql[ST_COUNT] = {
#define STMT(name, sql) [name] = sql,
#include "stmts.def"
#undef STMT
};

static const char *const stmt_names[ST_COUNT] = {
#define STMT(name, sql) [name] = #name,
#include "stmts.def"
#undef STMT
};

const char *tq_stmt_sql(enum tq_stmt id)
{
	return (unsigned)id < ST_COUNT ? stmt_sql[id] : NULL;
}

const char *tq_stmt_name(enum tq_stmt id)
{
	return (unsigned)id < ST_COUNT ? stmt_names[id] : NULL;
}

/* The list's filters in the order their conditions are written. */
static const struct {
	unsigned bit;
	const char *sql;
} list_filters[] = {
	{ TQ_LIST_F_STATES, " AND t.state IN (SELECT value FROM json_each(?1))" },
	{ TQ_LIST_F_NAME, " AND t.name = ?2" },
	{ TQ_LIST_F_LABEL,
	  " AND t.id IN (SELECT task_id FROM labels WHERE key = ?3 AND value = ?4)" },
	{ TQ_LIST_F_BATCH, " AND t.batch = ?5" },
	{ TQ_LIST_F_GROUP, " AND t.grp = ?6" },
	{ TQ_LIST_F_CATEGORY, " AND t.category = ?7" },
	/* implied by ?1, written out so that the planner may use the partial
	 * index whose WHERE it is */
	{ TQ_LIST_F_SETTLED, " AND t.state NOT IN ('queued','running')" },
	{ TQ_LIST_F_RUNNING, " AND t.state = 'running'" },
};

int tq_stmt_list_sql(unsigned shape, char *buf, size_t n)
{
	size_t len;
	int w;

	if (shape >= TQ_LIST_VARIANTS || n == 0)
		return TQ_EINVAL;
	/* the few running tasks, sorted, rather than every newer task read
	 * until they are found */
	w = snprintf(buf, n, "SELECT " TQ_TASK_COLS " FROM tasks t%s WHERE 1",
		     (shape & TQ_LIST_F_RUNNING) ? " INDEXED BY tasks_running" : "");
	if (w < 0 || (size_t)w >= n)
		return TQ_EINVAL;
	len = (size_t)w;
	for (size_t i = 0; i < sizeof(list_filters) / sizeof(list_filters[0]); i++) {
		if (!(shape & list_filters[i].bit))
			continue;
		w = snprintf(buf + len, n - len, "%s", list_filters[i].sql);
		if (w < 0 || (size_t)w >= n - len)
			return TQ_EINVAL;
		len += (size_t)w;
	}
	w = snprintf(buf + len, n - len, " ORDER BY t.id DESC LIMIT ?8 OFFSET ?9");
	return w < 0 || (size_t)w >= n - len ? TQ_EINVAL : 0;
}
