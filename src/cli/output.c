/*
 * output.c - escaping, tables, colour and JSON for the CLI (see output.h
 * for the display policy and why it holds on a terminal and off it).
 *
 * UTF-8 is decoded here by hand rather than with mbrtowc: the decoder must
 * reject overlong forms and surrogates the same way whatever the locale,
 * and the JSON side needs it even in the C locale.
 */
#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include "output.h"

#include <bsd/vis.h>
#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <wctype.h>

#include "common/err.h"
#include "common/parse.h"
#include "queue/queue.h"

static int utf8_locale; /* set by cli_output_init */

void cli_output_init(void)
{
	const char *cs;

	if (setlocale(LC_CTYPE, "") == NULL)
		return;
	cs = nl_langinfo(CODESET);
	utf8_locale = cs != NULL && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

/* Code points a terminal shows as nothing, or that reorder the text around
 * them (the "Trojan Source" bidi overrides): escaped even when valid. */
static int invisible(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c ||
	       (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff ||
	       (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

/* The terminal width of a code point we may pass through, or -1. */
static int passable_width(uint32_t cp)
{
	int w;

	if (!utf8_locale || invisible(cp) || !iswprint((wint_t)cp))
		return -1;
	w = wcwidth((wchar_t)cp);
	return w;
}

char *cli_esc(const char *s, unsigned flags, size_t *width)
{
	const unsigned char *p = (const unsigned char *)s;
	int vflags = VIS_CSTYLE | VIS_OCTAL | VIS_TAB | VIS_NL | VIS_NOLOCALE;
	size_t len = strlen(s), w = 0;
	char *out, *o;

	/* the worst case: every byte becomes "\ooo", plus quotes and NUL */
	out = malloc(len * 4 + 3);
	if (out == NULL)
		return NULL;
	o = out;
	if (flags & CLI_ESC_QUOTE) {
		vflags |= VIS_DQ;
		*o++ = '"', w++;
	}
	while (*p != '\0') {
		uint32_t cp;
		size_t n = tq_utf8_seq(p, &cp);
		int cw = n > 1 ? passable_width(cp) : -1;
		char *start = o;

		if (n > 1 && cw >= 0) {
			memcpy(o, p, n);
			o += n, p += n, w += (size_t)cw;
			continue;
		}
		if (*p < 0x80)
			o = vis(o, *p, vflags, p[1]);
		else
			o += snprintf(o, 5, "\\%03o", *p);
		w += (size_t)(o - start);
		p++;
	}
	if (flags & CLI_ESC_QUOTE)
		*o++ = '"', w++;
	*o = '\0';
	if (width != NULL)
		*width = w;
	return out;
}

int cli_colour(void)
{
	static int decided = -1;
	const char *nc, *term;

	if (decided < 0) {
		nc = getenv("NO_COLOR");
		term = getenv("TERM");
		decided = isatty(STDOUT_FILENO) && (nc == NULL || *nc == '\0') &&
			  (term == NULL || strcmp(term, "dumb") != 0);
	}
	return decided;
}

const char *cli_state_sgr(int state)
{
	switch (state) {
	case TQ_RUNNING: return "33";    /* yellow */
	case TQ_SUCCEEDED: return "32";  /* green */
	case TQ_FAILED:
	case TQ_TIMED_OUT:
	case TQ_KILLED: return "31";     /* red */
	case TQ_CANCELED: return "2";    /* dim */
	default: return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */

void cli_table_init(struct cli_table *t, size_t ncols, const char *const *heads,
		    unsigned right)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols < CLI_TABLE_MAXCOLS ? ncols : CLI_TABLE_MAXCOLS;
	t->heads = heads;
	t->right = right;
}

static int table_grow(struct cli_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	char **cells = reallocarray(t->cells, cap, sizeof(*cells));
	size_t *widths;
	const char **sgr;

	if (cells == NULL)
		return TQ_ENOMEM;
	t->cells = cells;
	widths = reallocarray(t->widths, cap, sizeof(*widths));
	if (widths == NULL)
		return TQ_ENOMEM;
	t->widths = widths;
	sgr = reallocarray(t->sgr, cap, sizeof(*sgr));
	if (sgr == NULL)
		return TQ_ENOMEM;
	t->sgr = sgr;
	t->cap = cap;
	return 0;
}

int cli_table_add(struct cli_table *t, const char *text, const char *sgr)
{
	char *cell;
	size_t w;

	if (t->n == t->cap && table_grow(t) < 0)
		return TQ_ENOMEM;
	cell = cli_esc(text != NULL ? text : "-", 0, &w);
	if (cell == NULL)
		return TQ_ENOMEM;
	t->cells[t->n] = cell;
	t->widths[t->n] = w;
	t->sgr[t->n] = sgr;
	t->n++;
	return 0;
}

static void pad(FILE *f, size_t n)
{
	while (n-- > 0)
		fputc(' ', f);
}

/* One cell: padded to width (right-aligned or, unless last, left-aligned). */
static void print_cell(const struct cli_table *t, FILE *f, size_t col,
		       const char *text, size_t w, size_t width, const char *sgr)
{
	int right = (t->right >> col) & 1, last = col + 1 == t->ncols;

	if (col > 0)
		fputs("  ", f);
	if (right)
		pad(f, width - w);
	if (sgr != NULL && cli_colour())
		fprintf(f, "\033[%sm%s\033[0m", sgr, text);
	else
		fputs(text, f);
	if (!right && !last)
		pad(f, width - w);
}

void cli_table_print(const struct cli_table *t, FILE *f)
{
	size_t widths[CLI_TABLE_MAXCOLS] = { 0 }, nc = t->ncols;

	for (size_t c = 0; c < nc; c++)
		widths[c] = strlen(t->heads[c]);
	for (size_t i = 0; i < t->n; i++)
		if (t->widths[i] > widths[i % nc])
			widths[i % nc] = t->widths[i];
	for (size_t c = 0; c < nc; c++)
		print_cell(t, f, c, t->heads[c], strlen(t->heads[c]), widths[c], NULL);
	fputc('\n', f);
	for (size_t i = 0; i + nc <= t->n; i += nc) {
		for (size_t c = 0; c < nc; c++)
			print_cell(t, f, c, t->cells[i + c], t->widths[i + c],
				   widths[c], t->sgr[i + c]);
		fputc('\n', f);
	}
}

void cli_table_release(struct cli_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->widths);
	free(t->sgr);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------------ */
/* JSON                                                               */

static char *base64(const char *s)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < len ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Add (to an object with key, or to an array with key NULL) one item. */
static void add(cJSON *to, const char *key, cJSON *item, int *oom)
{
	if (item == NULL || to == NULL) {
		cJSON_Delete(item);
		*oom = 1;
		return;
	}
	/* adding copies the key, which can fail too */
	if (!(key != NULL ? cJSON_AddItemToObject(to, key, item)
			  : cJSON_AddItemToArray(to, item))) {
		cJSON_Delete(item);
		*oom = 1;
	}
}

/* s as a JSON string item; *bad is set if it was not valid UTF-8. */
static cJSON *utf8_string(const char *s, int *bad, int *oom)
{
	char *fixed = NULL;
	int rc = tq_utf8_fix(s, &fixed);
	cJSON *item;

	if (rc < 0) {
		*oom = 1;
		return NULL;
	}
	if (rc == 1)
		*bad = 1;
	item = cJSON_CreateString(rc == 1 ? fixed : s);
	free(fixed);
	return item;
}

static void add_base64(cJSON *to, const char *key, const char *s, int *oom)
{
	char name[128];
	char *b = base64(s);

	if (key != NULL)
		snprintf(name, sizeof(name), "%s_base64", key);
	add(to, key != NULL ? name : NULL, b ? cJSON_CreateString(b) : NULL, oom);
	free(b);
}

void cli_json_bytes(cJSON *o, const char *key, const char *s, int *oom)
{
	char *fixed_key = NULL;
	int bad = 0;

	/* keys can be stored text too (label names): JSON needs UTF-8 there */
	if (tq_utf8_fix(key, &fixed_key) < 0) {
		*oom = 1;
		return;
	}
	if (fixed_key != NULL)
		key = fixed_key;
	if (s == NULL)
		add(o, key, cJSON_CreateNull(), oom);
	else
		add(o, key, utf8_string(s, &bad, oom), oom);
	if (bad)
		add_base64(o, key, s, oom);
	free(fixed_key);
}

void cli_json_strv(cJSON *o, const char *key, char *const *v, size_t n, int *oom)
{
	cJSON *arr = cJSON_CreateArray(), *exact;
	char name[128];
	int bad = 0;

	add(o, key, arr, oom);
	for (size_t i = 0; arr != NULL && i < n; i++)
		add(arr, NULL, utf8_string(v[i], &bad, oom), oom);
	if (!bad)
		return;
	snprintf(name, sizeof(name), "%s_base64", key);
	exact = cJSON_CreateArray();
	add(o, name, exact, oom);
	for (size_t i = 0; exact != NULL && i < n; i++)
		add_base64(exact, NULL, v[i], oom);
}

void cli_json_int(cJSON *o, const char *key, int64_t v, int present, int *oom)
{
	/* a double holds every integer up to 2^53: ids, ms times, counts */
	add(o, key, present ? cJSON_CreateNumber((double)v) : cJSON_CreateNull(), oom);
}

void cli_json_bool(cJSON *o, const char *key, int v, int *oom)
{
	add(o, key, cJSON_CreateBool(v != 0), oom);
}

void cli_json_name(cJSON *o, const char *key, const char *s, int *oom)
{
	add(o, key, s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull(), oom);
}

int cli_json_print(const cJSON *j, FILE *f)
{
	char *s = cJSON_PrintUnformatted(j);

	if (s == NULL)
		return TQ_ENOMEM;
	fputs(s, f);
	fputc('\n', f);
	cJSON_free(s);
	return 0;
}
