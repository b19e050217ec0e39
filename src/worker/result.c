/*
 * result.c - an agent's final result from its output (result.h).
 * Placeholder: filled in by the results work (issue 7).
 */
#include "result.h"

#include <stdlib.h>

struct tq_result_parser {
	int unused;
};

struct tq_result_parser *tq_result_parser_new(const char *parser)
{
	(void)parser;
	return calloc(1, sizeof(struct tq_result_parser));
}

void tq_result_parser_free(struct tq_result_parser *p)
{
	free(p);
}

void tq_result_feed(struct tq_result_parser *p, const void *buf, size_t len)
{
	(void)p;
	(void)buf;
	(void)len;
}

void tq_result_end(struct tq_result_parser *p, struct tq_result *r)
{
	(void)p;
	*r = (struct tq_result){ 0 };
}
