/*
 * cursors.c - poll cursors: for each task and reader name, how many lines
 * of the task's log that reader has been shown (the cursors table).
 *
 * What it does not do: read the log (logstore.c) or decide how much one
 * poll returns (the CLI). A cursor only moves by compare-and-set, so two
 * processes polling under one reader name never both deliver the same
 * lines; readers with different names never touch each other's row. Rows
 * go with their task (ON DELETE CASCADE).
 */
#include "internal.h"

#include <string.h>

#include "common/sys.h"

static int check_reader(const char *reader, struct tq_err *err)
{
	if (reader == NULL || *reader == '\0')
		return tq_err_set(err, TQ_EINVAL, "poll cursor: empty reader name");
	if (strlen(reader) >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "poll cursor: reader name longer than %d bytes",
				  TQ_NAME_MAX - 1);
	return 0;
}

int tq_sqlite_cursor_get(struct tq_queue *base, int64_t id, const char *reader,
			int64_t *line, uint64_t *log_file, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	/* The join tells "no such task" (no row) from "never polled" (NULL). */
	sqlite3_stmt *st = tq_db_stmt(q, ST_CURSOR_GET, err);
	int rc;

	*line = 0;
	if (log_file != NULL)
		*log_file = 0;
	if ((rc = check_reader(reader, err)) < 0)
		return rc;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	tq_bind_text(st, 2, reader);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*line = sqlite3_column_int64(st, 0);
	if (rc == SQLITE_ROW && log_file != NULL)
		*log_file = (uint64_t)sqlite3_column_int64(st, 1); /* NULL reads 0 */
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read poll cursor");
}

int tq_sqlite_cursor_advance(struct tq_queue *base, int64_t id, const char *reader,
			    int64_t from, int64_t to, uint64_t log_file, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	/* One statement, so no transaction is needed: insert the row if the
	 * reader has none (its cursor was 0: rows only go away with their
	 * task), else update it only where it still holds `from`. The
	 * SELECT's WHERE also settles SQLite's parse of INSERT ... SELECT ...
	 * ON CONFLICT. */
	sqlite3_stmt *st = tq_db_stmt(q, ST_CURSOR_ADVANCE, err);
	int64_t now_at = 0;
	int rc;

	if ((rc = check_reader(reader, err)) < 0)
		return rc;
	if (from < 0 || to < 0)
		return tq_err_set(err, TQ_EINVAL, "poll cursor: negative line");
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	tq_bind_text(st, 2, reader);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, to);
	sqlite3_bind_int64(st, 5, tq_now_ms());
	tq_bind_opt_i64(st, 6, (int64_t)log_file, 0);
	if ((rc = tq_db_exec_st(q, st, err, "move poll cursor")) < 0)
		return rc;
	if (sqlite3_changes(q->db) > 0)
		return 0;
	/* Nothing changed: no such task, or the cursor had moved on. */
	if ((rc = tq_sqlite_cursor_get(&q->base, id, reader, &now_at, NULL, err)) < 0)
		return rc;
	return tq_err_set(err, TQ_ESTALE, "task %lld: reader %s's cursor moved from %lld to %lld "
			  "meanwhile", (long long)id, reader, (long long)from, (long long)now_at);
}
