/*
 * strv.c - the NUL-separated string vector encoding of argv and env blobs
 * ("s\0s\0"), as the SQLite backend stores them (internal.h). Moved as it
 * was from names.c.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int tq_strv_encode(char *const *v, size_t n, size_t max, char **blob, size_t *len)
{
	size_t total = 0;
	char *p;

	*blob = NULL;
	*len = 0;
	for (size_t i = 0; i < n; i++) {
		total += strlen(v[i]) + 1;
		if (total > max)
			return TQ_EINVAL;
	}
	if ((p = malloc(total ? total : 1)) == NULL)
		return TQ_ENOMEM;
	*blob = p;
	*len = total;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;
		memcpy(p, v[i], l);
		p += l;
	}
	return 0;
}

int tq_strv_decode(const void *blob, size_t len, char ***v, size_t *n)
{
	const char *b = blob, *end = b + len;
	size_t count = 0, i = 0;
	char **out;

	*v = NULL;
	*n = 0;
	for (const char *p = b; p < end; p++)
		count += (*p == '\0');
	if (len > 0 && b[len - 1] != '\0')
		count++; /* tolerate a missing final NUL */
	if ((out = calloc(count + 1, sizeof(*out))) == NULL)
		return TQ_ENOMEM;
	for (const char *p = b; p < end && i < count; i++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		size_t l = z ? (size_t)(z - p) : (size_t)(end - p);
		if ((out[i] = malloc(l + 1)) == NULL) {
			tq_strv_free(out);
			return TQ_ENOMEM;
		}
		memcpy(out[i], p, l);
		out[i][l] = '\0';
		p += l + 1;
	}
	*v = out;
	*n = count;
	return 0;
}

void tq_strv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}
