/*
 * release.c - releasing what the store's interface hands out (queue.h:
 * tasks, attempts, groups, stdin chunks, sessions, stats, batches): the
 * caller owns these structs whichever backend filled them, so their release
 * is the interface's, not a backend's. Moved as they were from the SQLite
 * backend's files. No SQL.
 */
#include "queue/queue.h"

#include <stdlib.h>
#include <string.h>

/* A NULL-terminated array of malloc'd strings (a task's argv, env). */
static void free_vector(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

void tq_task_release(struct tq_task *t)
{
	if (t == NULL)
		return;
	free_vector(t->argv);
	free_vector(t->env);
	free(t->name);
	free(t->cwd);
	free(t->batch);
	free(t->group);
	free(t->session);
	free(t->unique_key);
	free(t->on_exit);
	free(t->agent);
	free(t->model);
	free(t->prompt);
	free(t->sources_json);
	free(t->reason);
	for (size_t i = 0; i < t->nlabels; i++) {
		free((char *)t->labels[i].key);
		free((char *)t->labels[i].value);
	}
	free(t->labels);
	free(t->after);
	free(t->after_any);
	memset(t, 0, sizeof(*t));
}

void tq_task_list_free(struct tq_task *tasks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tq_task_release(&tasks[i]);
	free(tasks);
}

static void attempt_release(struct tq_attempt *a)
{
	free(a->reason);
	free(a->result);
	free(a->subtype);
	free(a->agent_session);
	free(a->model);
	free(a->node);
}

void tq_attempt_list_free(struct tq_attempt *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		attempt_release(&list[i]);
	free(list);
}

void tq_supervisor_list_free(struct tq_supervisor_info *list, size_t n)
{
	for (size_t i = 0; list != NULL && i < n; i++)
		free(list[i].containment);
	free(list);
}

void tq_group_list_free(struct tq_group *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(list[i].name);
		free(list[i].pause_reason);
	}
	free(list);
}

void tq_stdin_chunks_free(struct tq_stdin_chunk *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i].data);
	free(list);
}

void tq_session_info_release(struct tq_session_info *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->ntasks; i++) {
		free(s->tasks[i].name);
		free(s->tasks[i].agent_session);
	}
	free(s->tasks);
	free(s->key);
	free(s->agent_session);
	free(s->cwd);
	memset(s, 0, sizeof(*s));
}

void tq_session_row_release(struct tq_session_row *r)
{
	if (r == NULL)
		return;
	free(r->key);
	free(r->agent);
	free(r->agent_session);
	free(r->cwd);
	free(r->node);
	memset(r, 0, sizeof(*r));
}

void tq_session_row_list_free(struct tq_session_row *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tq_session_row_release(&list[i]);
	free(list);
}

void tq_stats_release(struct tq_stats *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nmodels; i++)
		free(s->models[i].model);
	free(s->models);
	memset(s, 0, sizeof(*s));
}

int tq_batch_done(const struct tq_batch *b)
{
	return b->counts[TQ_QUEUED] + b->counts[TQ_SCHEDULED] + b->counts[TQ_BLOCKED] +
	       b->counts[TQ_RUNNING] == 0;
}

void tq_batch_release(struct tq_batch *b)
{
	if (b == NULL)
		return;
	free(b->name);
	memset(b, 0, sizeof(*b));
}

void tq_batch_list_free(struct tq_batch *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tq_batch_release(&list[i]);
	free(list);
}
