/*
 * cliconf.c - what the agents' files share to read a CLI's own config and
 * point the CLI at taskq's version of it (agent_int.h): a small file read
 * whole, JSON comments stripped, an option's value in argv, options put in
 * argv, a config directory overlaid with one file changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sys.h"
#include "agent.h"
#include "agent_int.h"
#include "profile.h"

/* Read a whole small file (at most max bytes) into a malloc'd string;
 * NULL when it cannot be read. */
char *tq_cliconf_read(const char *path, size_t max)
{
	int fd = tq_open(path, O_RDONLY, 0);
	char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if ((buf = malloc(max + 1)) != NULL && (n = tq_read_full(fd, buf, max)) >= 0 &&
	    (size_t)n < max) {
		buf[n] = '\0';
	} else {
		free(buf);
		buf = NULL;
	}
	tq_close(fd);
	return buf;
}

/* Strip // and / * * / comments outside strings (a CLI's JSON settings may
 * hold them, when it reads them with strip-json-comments), in place. */
void tq_cliconf_strip_comments(char *s)
{
	char *w = s;
	int in_str = 0, esc = 0;

	while (*s != '\0') {
		if (in_str) {
			if (esc)
				esc = 0;
			else if (*s == '\\')
				esc = 1;
			else if (*s == '"')
				in_str = 0;
			*w++ = *s++;
		} else if (s[0] == '/' && s[1] == '/') {
			s += strcspn(s, "\n");
		} else if (s[0] == '/' && s[1] == '*') {
			char *e = strstr(s + 2, "*/");
			s = e != NULL ? e + 2 : s + strlen(s);
		} else {
			in_str = *s == '"';
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* argv with extra inserted after its first element, into ar->argv. */
int tq_cliconf_argv_insert(struct tq_agent_run *ar, char *const *argv, size_t argc,
			   char *const *extra, size_t nextra, struct tq_err *err)
{
	char **v = calloc(argc + nextra + 1, sizeof(*v));
	size_t k = 0;

	if (v == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < argc + nextra; i++) {
		const char *s = i == 0 ? argv[0] : i <= nextra ? extra[i - 1] : argv[i - nextra];

		if ((v[k++] = strdup(s)) == NULL) {
			tq_profile_argv_free(v);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
	}
	tq_profile_argv_free(ar->argv);
	ar->argv = v;
	ar->argc = k;
	return 0;
}

/*
 * A private copy of one of the user's config directories in which taskq
 * changed one file, for a CLI pointed at it (by its config home variable):
 * the directory name made in dfd (dir's descriptor, 0700), file written
 * there with text, and a symlink to every other entry of user (the user's
 * own directory), so that the CLI reads taskq's file and everything else
 * (sessions, login, history) stays the user's, written through the links.
 * user/keep (a directory the CLI keeps its sessions in) is made first when
 * missing, and each name of ahead (NULL-terminated, may be NULL) is linked
 * even before it exists: what the CLI creates there on a first run must
 * outlive the copy. what names the purpose in errors ("WHAT: link
 * PATH"). On failure what was made is left for the run's cleanup (it is
 * inside the run's own directory).
 */
int tq_cliconf_overlay(int dfd, const char *dir, const char *name, const char *user,
		       const char *keep, const char *const *ahead, const char *file,
		       const char *text, const char *what, struct tq_err *err)
{
	char link[PATH_MAX + NAME_MAX + 2];
	struct dirent *e;
	DIR *d = NULL;
	int rc = 0, fd = -1;

	if (snprintf(link, sizeof(link), "%s/%s", user, keep) >= (int)sizeof(link)) {
		rc = tq_err_set(err, TQ_EINVAL, "%s: %s/%s: path too long", what, user, keep);
		goto out;
	}
	if (tq_mkdir_p(link, 0700) < 0) {
		rc = tq_err_sys(err, "%s: mkdir %s", what, link);
		goto out;
	}
	if (mkdirat(dfd, name, 0700) < 0 ||
	    (fd = tq_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0) {
		rc = tq_err_sys(err, "%s: mkdir %s/%s", what, dir, name);
		goto out;
	}
	if ((rc = tq_workspace_write(fd, file, text, err)) < 0)
		goto out;
	if ((d = opendir(user)) == NULL) {
		rc = tq_err_sys(err, "%s: read %s", what, user);
		goto out;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, file) == 0)
			continue;
		if (snprintf(link, sizeof(link), "%s/%s", user, e->d_name) >= (int)sizeof(link)) {
			rc = tq_err_set(err, TQ_EINVAL, "%s: %s/%s: path too long", what, user,
					e->d_name);
			goto out;
		}
		if (symlinkat(link, fd, e->d_name) < 0) {
			rc = tq_err_sys(err, "%s: link %s", what, link);
			goto out;
		}
	}
	for (size_t i = 0; ahead != NULL && ahead[i] != NULL; i++) {
		snprintf(link, sizeof(link), "%s/%s", user, ahead[i]);
		if (symlinkat(link, fd, ahead[i]) < 0 && errno != EEXIST) {
			rc = tq_err_sys(err, "%s: link %s", what, link);
			goto out;
		}
	}
out:
	if (d != NULL)
		closedir(d);
	tq_close(fd);
	return rc;
}

/* The value of option name (with a value: "NAME V", "NAME=V") last given
 * in argv before "--", or NULL. alias: a short form ("-p"), or NULL. */
const char *tq_cliconf_opt(char *const *v, size_t n, const char *name, const char *alias)
{
	const char *found = NULL;
	size_t len = strlen(name);

	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i], "--") == 0)
			break;
		if ((strcmp(v[i], name) == 0 || (alias != NULL && strcmp(v[i], alias) == 0)) &&
		    i + 1 < n)
			found = v[++i];
		else if (strncmp(v[i], name, len) == 0 && v[i][len] == '=')
			found = v[i] + len + 1;
	}
	return found;
}
