/*
 * config.c - the user's config file (config.h): where it is, reading it
 * whole (once, in a process that asked to keep it), parsing it as one JSON
 * value.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "sys.h"

/* "line L, column C" of offset off in text. */
static void where_in(const char *text, size_t off, char *buf, size_t n)
{
	size_t line = 1, col = 1;

	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(buf, n, "line %zu, column %zu", line, col);
}

int tq_config_parse(const char *file, const char *text, size_t n, cJSON **out,
		    struct tq_err *err)
{
	const char *end = NULL;
	char at[64];
	cJSON *j = cJSON_ParseWithLengthOpts(text, n, &end, 0);

	*out = NULL;
	if (j == NULL) {
		if (end == NULL || end < text || end > text + n)
			return tq_err_set(err, TQ_EINVAL, "%s: invalid JSON", file);
		where_in(text, (size_t)(end - text), at, sizeof(at));
		return tq_err_set(err, TQ_EINVAL, "%s: invalid JSON at %s", file, at);
	}
	while (end < text + n && isspace((unsigned char)*end))
		end++;
	if (end < text + n) {
		where_in(text, (size_t)(end - text), at, sizeof(at));
		cJSON_Delete(j);
		return tq_err_set(err, TQ_EINVAL, "%s: unexpected text after the JSON value "
				  "at %s", file, at);
	}
	*out = j;
	return 0;
}

int tq_config_path(char *buf, size_t n, int *must_exist, struct tq_err *err)
{
	const char *e = getenv("TASKQ_CONFIG"), *x = getenv("XDG_CONFIG_HOME");
	const char *h = getenv("HOME");
	int k;

	*must_exist = 0;
	if (e != NULL && *e != '\0') {
		*must_exist = 1;
		k = snprintf(buf, n, "%s", e);
	} else if (x != NULL && x[0] == '/') {
		k = snprintf(buf, n, "%s/taskq/config.json", x);
	} else if (h != NULL && *h != '\0') {
		k = snprintf(buf, n, "%s/.config/taskq/config.json", h);
	} else {
		return 1;
	}
	if (k < 0 || (size_t)k >= n)
		return tq_err_set(err, TQ_EINVAL, "config file path longer than %zu bytes", n - 1);
	return 0;
}

/* What tq_config_keep keeps: the first read's path and text (NULL: the
 * file did not exist). */
static struct {
	int on, have;
	char *path, *text;
	size_t len;
} kept;

void tq_config_keep(void)
{
	kept.on = 1;
}

/* Answer a read from what was kept: 1 with *text and *len set, 0 when
 * nothing kept answers it (then it is read, and its errors said, as
 * always). */
static int from_kept(const char *path, int must_exist, size_t max, char **text,
		     size_t *len)
{
	if (!kept.have || strcmp(kept.path, path) != 0 || kept.len > max ||
	    (kept.text == NULL && must_exist))
		return 0;
	if (kept.text != NULL && (*text = malloc(kept.len + 1)) == NULL)
		return 0;
	if (kept.text != NULL)
		memcpy(*text, kept.text, kept.len + 1);
	*len = kept.len;
	return 1;
}

/* Keep the first read that succeeded (text NULL: no such file). */
static void keep(const char *path, const char *text, size_t len)
{
	if (!kept.on || kept.have || (kept.path = strdup(path)) == NULL)
		return;
	if (text != NULL && (kept.text = malloc(len + 1)) == NULL) {
		free(kept.path);
		kept.path = NULL;
		return;
	}
	if (text != NULL)
		memcpy(kept.text, text, len + 1);
	kept.len = len;
	kept.have = 1;
}

int tq_config_read(const char *path, int must_exist, size_t max, char **text,
		   size_t *len, struct tq_err *err)
{
	struct stat st;
	char *buf = NULL;
	ssize_t got;
	int fd, rc = 0;

	*text = NULL;
	*len = 0;
	if (from_kept(path, must_exist, max, text, len))
		return 0;
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0) {
		if (errno == ENOENT && !must_exist) {
			keep(path, NULL, 0);
			return 0;
		}
		return tq_err_sys(err, "open %s", path);
	}
	if (fstat(fd, &st) < 0)
		rc = tq_err_sys(err, "stat %s", path);
	else if (!S_ISREG(st.st_mode))
		rc = tq_err_set(err, TQ_EINVAL, "%s: not a regular file", path);
	else if ((uint64_t)st.st_size > max)
		rc = tq_err_set(err, TQ_EINVAL, "%s: larger than %zu bytes", path, max);
	else if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		rc = tq_err_set(err, TQ_ENOMEM, "read %s: out of memory", path);
	else if ((got = tq_read_full(fd, buf, (size_t)st.st_size)) < 0)
		rc = tq_err_sys(err, "read %s", path);
	else {
		buf[got] = '\0';
		*text = buf;
		*len = (size_t)got;
		buf = NULL;
		keep(path, *text, *len);
	}
	free(buf);
	tq_close(fd);
	return rc;
}
