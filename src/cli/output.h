/*
 * output.h - how the CLI shows data: escaped text, aligned tables, colour,
 * JSON.
 *
 * Human output escapes every stored string, on a terminal or not (so what a
 * script greps is what a person saw, and no task name can move the cursor
 * or recolour a terminal): control characters (tab and newline included),
 * backslash, bytes that are not valid UTF-8, invisible and bidirectional
 * format characters (U+200B..U+200F, U+202A..U+202E, U+2066..U+2069, ...)
 * become C-style escapes from vis(3) ("\t", "\n", "\\", "\033", "\377").
 * Valid, printable UTF-8 passes through when the locale's character set is
 * UTF-8; otherwise every non-ASCII byte is escaped. The output is therefore
 * unambiguous: a backslash always starts an escape.
 *
 * JSON output is exact: cJSON escapes what JSON requires, and a string that
 * is not valid UTF-8 is emitted with U+FFFD for each bad byte plus a
 * "KEY_base64" field holding the exact bytes.
 */
#ifndef TQ_CLI_OUTPUT_H
#define TQ_CLI_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/*
 * Read the locale's character set (setlocale(LC_CTYPE, "")) so that UTF-8
 * text can pass through cli_esc. Only the commands that print stored text
 * call it: locale loading costs time that `submit` does not spend.
 */
void cli_output_init(void);

enum cli_esc_flags {
	CLI_ESC_QUOTE = 1 << 0, /* wrap in "..." and escape '"' as well */
};

/*
 * s escaped for human output (see above), malloc'd; NULL when out of
 * memory. *width (may be NULL) receives its width in terminal columns.
 */
char *cli_esc(const char *s, unsigned flags, size_t *width);

/* 1 when stdout should get colour: a terminal, $NO_COLOR unset or empty,
 * $TERM not "dumb". Decided once. */
int cli_colour(void);

/* The SGR colour for a state ("32" for succeeded), or NULL for none. */
const char *cli_state_sgr(int state);

/*
 * An aligned table: columns separated by two spaces, the last not padded,
 * a header line first. Cells are escaped when added. All functions but
 * print return 0 or TQ_ENOMEM.
 */
#define CLI_TABLE_MAXCOLS 16 /* more columns than any table has */

struct cli_table {
	size_t ncols;
	const char *const *heads;
	unsigned right;      /* bit i: right-align column i (numbers) */
	char **cells;        /* escaped text, row-major */
	size_t *widths;      /* display width of each cell */
	const char **sgr;    /* colour of each cell, or NULL */
	size_t n, cap;       /* cells used, allocated */
};

void cli_table_init(struct cli_table *t, size_t ncols, const char *const *heads,
		    unsigned right);
/* Append one cell (rows fill left to right); sgr may be NULL. */
int cli_table_add(struct cli_table *t, const char *text, const char *sgr);
void cli_table_print(const struct cli_table *t, FILE *f);
void cli_table_release(struct cli_table *t);

/*
 * JSON builders. Each takes a sticky *oom flag: the first failed allocation
 * sets it and later calls still run (cJSON's add functions accept NULL), so
 * a caller checks once at the end.
 */
/* key: s as a JSON string (null for NULL); plus key_base64 if s is not
 * valid UTF-8. */
void cli_json_bytes(cJSON *o, const char *key, const char *s, int *oom);
/* key: an array of the n strings; plus key_base64 (an array of every
 * string's exact bytes) if any of them is not valid UTF-8. */
void cli_json_strv(cJSON *o, const char *key, char *const *v, size_t n, int *oom);
/* key: v, or null when !present. */
void cli_json_int(cJSON *o, const char *key, int64_t v, int present, int *oom);
void cli_json_bool(cJSON *o, const char *key, int v, int *oom);
/* key: a plain string already known to be ASCII (a state name), or null. */
void cli_json_name(cJSON *o, const char *key, const char *s, int *oom);

/* Print j compactly on one line to f. Returns 0 or TQ_ENOMEM. */
int cli_json_print(const cJSON *j, FILE *f);

#endif
