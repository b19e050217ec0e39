/*
 * agent.c - agent tasks around their run (agent.h): the command template
 * expanded at spawn time, the isolated workspace (created, removed, swept),
 * and `taskq ask --interactive`.
 *
 * Workspaces are made and removed through directory descriptors with
 * O_NOFOLLOW, never by following a path twice: a source is a symlink into
 * the user's files, and removal must unlink that link, never what it points
 * to. A workspace is removed by first renaming it aside and checking that
 * the renamed directory is the one we meant (device and inode): the next
 * task of a session may already have created a new one under the same name.
 *
 * Not here: the store's SQL (queue.h), spawning queued tasks (spawn.c; the
 * interactive agent is the one exception, because it must share the
 * terminal's process group, which a task never does), the result parser.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include <bsd/vis.h>
#include <cjson/cJSON.h>

#include "common/sys.h"
#include "proc/loop.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "agent_int.h"
#include "profile.h"
#include "registry.h"
#include "result.h"
#include "scrub.h"

#define OWNER_MAX 4096             /* bytes of a .taskq-task file */
#define UUID_LEN 36
#define TRASH_PREFIX ".taskq-gone-"

/* What a workspace holds besides the sources: a source may not take these
 * names. */
static const char *const reserved[] = { "prompt.md", ".mcp.json", ".gemini", ".cursor",
					"opencode.json", TQ_WORKSPACE_OWNER,
					TQ_WORKSPACE_CODEX_HOME, NULL };

static const char mcp_empty[] = "{\"mcpServers\":{}}\n";
static const char opencode_empty[] =
	"{\"$schema\":\"https://opencode.ai/config.json\",\"mcp\":{}}\n";

/* ------------------------------------------------------------------ */
/* Names                                                              */

static void uuid_format(unsigned char b[16], char out[UUID_LEN + 1])
{
	snprintf(out, UUID_LEN + 1,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

/* A random (version 4) uuid. */
static void uuid_random(char out[UUID_LEN + 1])
{
	unsigned char b[16];

	arc4random_buf(b, sizeof(b));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	uuid_format(b, out);
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The uuid of a session's workspace: a hash of the state directory and
 * the key (version 8, "custom"), the same for every task of the session. */
static void uuid_of_session(const char *home, const char *key, char out[UUID_LEN + 1])
{
	uint64_t h[2] = { 0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL };
	unsigned char b[16];

	for (int k = 0; k < 2; k++) {
		h[k] = fnv1a(h[k], home, strlen(home) + 1);
		h[k] = fnv1a(h[k], key, strlen(key));
		for (int i = 0; i < 8; i++)
			b[k * 8 + i] = (unsigned char)(h[k] >> (8 * i));
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x80);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	uuid_format(b, out);
}

/* "taskq-" and a uuid: a workspace's name, nothing else. */
static int is_workspace_name(const char *s)
{
	size_t p = strlen(TQ_WORKSPACE_PREFIX);

	if (strncmp(s, TQ_WORKSPACE_PREFIX, p) != 0 || strlen(s) != p + UUID_LEN)
		return 0;
	for (size_t i = 0; i < UUID_LEN; i++) {
		char c = s[p + i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return 0;
		}
	}
	return 1;
}

/* ------------------------------------------------------------------ */
/* Removing                                                           */

/* Remove name in dfd and everything under it, following no symlink. A
 * directory the agent made unwritable is made writable first (we own it). */
static int rm_at(int dfd, const char *name, int depth)
{
	int rc = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -1;
	if (depth >= TQ_WORKSPACE_DEPTH_MAX) {
		errno = ELOOP;
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) {
		int fd = tq_openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		struct dirent *e;
		DIR *d;

		if (fd < 0)
			return errno == ENOENT ? 0 : -1;
		fchmod(fd, 0700);
		if ((d = fdopendir(fd)) == NULL) {
			tq_close(fd);
			return -1;
		}
		rc = 0;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (rm_at(dirfd(d), e->d_name, depth + 1) < 0)
				rc = -1;
		}
		closedir(d);
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		if (errno != ENOTEMPTY && errno != EEXIST)
			return -1;
	}
	return rc < 0 ? -1 : (errno = ENOTEMPTY, -1);
}

/*
 * Remove directory name in dfd if it is the one identified by (dev, ino):
 * renamed aside to a name nothing else uses, checked, then removed. If the
 * name meanwhile holds another directory, that one is put back untouched.
 * Returns 0 (removed, or already gone, or not ours) or -1 with errno.
 */
static int remove_dir_if(int dfd, const char *name, dev_t dev, ino_t ino)
{
	char trash[64], u[UUID_LEN + 1];
	struct stat st;

	uuid_random(u);
	snprintf(trash, sizeof(trash), TRASH_PREFIX "%s", u);
	if (renameat(dfd, name, dfd, trash) < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(dfd, trash, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (st.st_dev != dev || st.st_ino != ino) {
		/* a newer workspace of the same name: not ours to remove */
		if (renameat2(dfd, trash, dfd, name, RENAME_NOREPLACE) < 0)
			return -1;
		return 0;
	}
	return rm_at(dfd, trash, 0);
}

/* Split path into its directory (opened) and last component. */
static int open_parent(const char *path, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n;

	if (slash == NULL || slash[1] == '\0') {
		errno = EINVAL;
		return -1;
	}
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, n);
	dir[n] = '\0';
	*base = slash + 1;
	return tq_open(dir, O_RDONLY | O_DIRECTORY, 0);
}

/* Remove the workspace at path if it is still (dev, ino). */
static void workspace_remove(const char *path, dev_t dev, ino_t ino)
{
	const char *base;
	int dfd = open_parent(path, &base);

	if (dfd < 0)
		return;
	remove_dir_if(dfd, base, dev, ino);
	tq_close(dfd);
}

/* ------------------------------------------------------------------ */
/* Who owns a workspace                                               */

enum owner_state { OWNER_LIVES, OWNER_GONE, OWNER_NOT_OURS };

/* Read and parse the owner file of the workspace open as wfd; NULL when
 * it is missing or not a JSON object. */
static cJSON *read_owner(int wfd)
{
	char buf[OWNER_MAX + 1];
	int fd = tq_openat(wfd, TQ_WORKSPACE_OWNER, O_RDONLY | O_NOFOLLOW, 0);
	ssize_t n;
	cJSON *j;

	if (fd < 0)
		return NULL;
	n = tq_read_full(fd, buf, OWNER_MAX);
	tq_close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	j = cJSON_Parse(buf);
	if (j != NULL && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

static int64_t num_of(const cJSON *o, const char *key, int *ok)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*ok = cJSON_IsNumber(v);
	return *ok ? (int64_t)v->valuedouble : 0;
}

/*
 * Whether the workspace open as wfd must be kept: its task is running
 * under the attempt that made it, or waiting; its interactive process
 * lives; it has no owner file yet and is young. need_home: it is in a
 * directory shared with other state directories ($TMPDIR): only one that
 * names home is ours. q NULL: every task-owned workspace lives. < 0: the
 * store could not be read (err).
 */
static int owner_state(struct tq_queue *q, int wfd, const char *home, int need_home,
		       struct tq_err *err)
{
	cJSON *o = read_owner(wfd);
	const cJSON *h;
	struct tq_task t = { 0 };
	struct stat st;
	int ok, rc, have_task, have_pid;
	int64_t id, attempt, pid, start;

	if (o == NULL) {
		if (need_home || fstat(wfd, &st) < 0)
			return OWNER_NOT_OURS;
		return tq_now_ms() - ((int64_t)st.st_mtim.tv_sec * 1000) > TQ_WORKSPACE_ORPHAN_MS ?
		       OWNER_GONE : OWNER_LIVES;
	}
	h = cJSON_GetObjectItemCaseSensitive(o, "home");
	if (need_home && (!cJSON_IsString(h) || strcmp(h->valuestring, home) != 0)) {
		cJSON_Delete(o);
		return OWNER_NOT_OURS;
	}
	id = num_of(o, "task", &have_task);
	attempt = num_of(o, "attempt", &ok);
	pid = num_of(o, "pid", &have_pid);
	start = num_of(o, "start", &ok);
	cJSON_Delete(o);
	if (have_pid)
		return pid > 0 && tq_proc_alive((pid_t)pid, start) ? OWNER_LIVES : OWNER_GONE;
	if (!have_task)
		return OWNER_NOT_OURS;
	if (q == NULL)
		return OWNER_LIVES;
	rc = tq_queue_get(q, id, 0, &t, err);
	if (rc == TQ_ENOTFOUND)
		return OWNER_GONE;
	if (rc < 0)
		return rc;
	rc = tq_state_final(t.state) || (t.state == TQ_RUNNING && t.attempt != attempt) ?
	     OWNER_GONE : OWNER_LIVES;
	tq_task_release(&t);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Sources                                                            */

int tq_workspace_check_source(const char *name, const char *path, struct tq_err *err)
{
	struct stat st;

	if (*name == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0 || strlen(name) > NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "source \"%s\": the name must be a plain "
				  "file name (no '/')", name);
	for (size_t i = 0; reserved[i] != NULL; i++)
		if (strcmp(name, reserved[i]) == 0)
			return tq_err_set(err, TQ_EINVAL, "source \"%s\": the workspace has a "
					  "file of this name already", name);
	if (path[0] != '/')
		return tq_err_set(err, TQ_EINVAL, "source \"%s\": \"%s\" is not an absolute "
				  "path", name, path);
	if (stat(path, &st) < 0)
		return tq_err_set(err, TQ_EINVAL, "source \"%s\": %s: %s", name, path,
				  strerror(errno));
	if (access(path, S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) < 0)
		return tq_err_set(err, TQ_EINVAL, "source \"%s\": %s: not readable (%s)", name,
				  path, strerror(errno));
	return 0;
}

/* The sources of a task ({"NAME": "PATH", ...}, or NULL), each checked.
 * *out NULL when there are none. */
static int parse_sources(const char *json, cJSON **out, struct tq_err *err)
{
	const cJSON *it;
	cJSON *j;
	int rc;

	*out = NULL;
	if (json == NULL || *json == '\0')
		return 0;
	if ((j = cJSON_Parse(json)) == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return tq_err_set(err, TQ_EINVAL, "sources: not a JSON object of \"NAME\": \"PATH\"");
	}
	cJSON_ArrayForEach(it, j) {
		if (!cJSON_IsString(it)) {
			cJSON_Delete(j);
			return tq_err_set(err, TQ_EINVAL, "source \"%s\": the path is not a string",
					  it->string);
		}
		if ((rc = tq_workspace_check_source(it->string, it->valuestring, err)) < 0) {
			cJSON_Delete(j);
			return rc;
		}
	}
	*out = j;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Creating                                                           */

/* Write text as the new file name in dfd (0600; refuses to follow or
 * replace anything). */
static int write_file(int dfd, const char *name, const char *text, size_t len,
		      struct tq_err *err)
{
	int fd = tq_openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);

	if (fd < 0)
		return tq_err_sys(err, "workspace: create %s", name);
	if (tq_write_all(fd, text, len) < 0) {
		int rc = tq_err_sys(err, "workspace: write %s", name);

		tq_close(fd);
		return rc;
	}
	if (close(fd) < 0 && errno != EINTR)
		return tq_err_sys(err, "workspace: write %s", name);
	return 0;
}

static int write_str(int dfd, const char *name, const char *text, struct tq_err *err)
{
	return write_file(dfd, name, text, strlen(text), err);
}

/* What goes into a new workspace. */
struct ws_spec {
	struct tq_queue *q;        /* NULL: a session's workspace in use is never
				    * taken over */
	const char *home;
	const char *session_key;   /* NULL: a random name */
	const char *owner;         /* the owner file's JSON */
	const char *prompt;        /* NULL: an empty prompt.md */
	const cJSON *sources;      /* checked; NULL: none */
	int bare;                  /* only the owner file (a run's private
				    * directory, not a place to work in) */
};

/* Where workspaces go: HOME/work, or $TMPDIR when that cannot be made. */
static int ws_base(const char *home, char *buf, size_t n, struct tq_err *err)
{
	const char *tmp = getenv("TMPDIR");
	int k = snprintf(buf, n, "%s/work", home);

	if (k > 0 && (size_t)k < n && tq_mkdir_p(buf, 0700) == 0)
		return 0;
	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	k = snprintf(buf, n, "%s", tmp);
	if (k < 0 || (size_t)k >= n)
		return tq_err_set(err, TQ_EINVAL, "workspace: $TMPDIR is too long");
	return 0;
}

/* For a session's name that exists: take it over when its owner is gone
 * (removed), else 1: use a random name instead. */
static int take_over(const struct ws_spec *s, int bfd, const char *name, struct tq_err *err)
{
	int wfd = tq_openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	struct stat st;
	int state;

	if (wfd < 0)
		return errno == ENOENT ? 0 : 1;
	state = owner_state(s->q, wfd, s->home, 0, err);
	if (state != OWNER_GONE || s->q == NULL || fstat(wfd, &st) < 0) {
		tq_close(wfd);
		return 1;
	}
	tq_close(wfd);
	return remove_dir_if(bfd, name, st.st_dev, st.st_ino) < 0 ? 1 : 0;
}

/* The files and links of a new workspace, open as wfd. */
static int ws_fill(const struct ws_spec *s, int wfd, struct tq_err *err)
{
	char gemini[128];
	const cJSON *it;
	int rc;

	snprintf(gemini, sizeof(gemini), "{\"mcpServers\":{},\"general\":{\"maxAttempts\":%d}}\n",
		 TQ_WORKSPACE_GEMINI_ATTEMPTS);
	if (s->bare)
		return write_str(wfd, TQ_WORKSPACE_OWNER, s->owner, err);
	if ((rc = write_str(wfd, TQ_WORKSPACE_OWNER, s->owner, err)) < 0 ||
	    (rc = write_str(wfd, "prompt.md", s->prompt ? s->prompt : "", err)) < 0 ||
	    (rc = write_str(wfd, ".mcp.json", mcp_empty, err)) < 0 ||
	    (rc = write_str(wfd, "opencode.json", opencode_empty, err)) < 0)
		return rc;
	if (mkdirat(wfd, ".gemini", 0700) < 0)
		return tq_err_sys(err, "workspace: mkdir .gemini");
	if ((rc = write_str(wfd, ".gemini/settings.json", gemini, err)) < 0)
		return rc;
	if (mkdirat(wfd, ".cursor", 0700) < 0)
		return tq_err_sys(err, "workspace: mkdir .cursor");
	if ((rc = write_str(wfd, ".cursor/mcp.json", mcp_empty, err)) < 0)
		return rc;
	cJSON_ArrayForEach(it, s->sources) {
		if (symlinkat(it->valuestring, wfd, it->string) < 0)
			return tq_err_sys(err, "workspace: link source \"%s\"", it->string);
	}
	return 0;
}

/*
 * Make a workspace: path (n bytes) receives its absolute path, *dev and *ino
 * its identity. On failure nothing is left behind and path is "".
 */
static int ws_create(const struct ws_spec *s, char *path, size_t n, dev_t *dev, ino_t *ino,
		     struct tq_err *err)
{
	char base[PATH_MAX], name[64], u[UUID_LEN + 1];
	struct stat st;
	int bfd = -1, wfd = -1, rc, made = 0;

	path[0] = '\0';
	if ((rc = ws_base(s->home, base, sizeof(base), err)) < 0)
		return rc;
	if ((bfd = tq_open(base, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return tq_err_sys(err, "workspace: open %s", base);
	for (int tries = 0; tries < 4 && !made; tries++) {
		int random_name = s->session_key == NULL || tries > 0;

		if (random_name)
			uuid_random(u);
		else
			uuid_of_session(s->home, s->session_key, u);
		snprintf(name, sizeof(name), TQ_WORKSPACE_PREFIX "%s", u);
		if (!random_name && take_over(s, bfd, name, err) != 0)
			continue;
		if (mkdirat(bfd, name, 0700) == 0)
			made = 1;
		else if (errno != EEXIST) {
			rc = tq_err_sys(err, "workspace: mkdir %s/%s", base, name);
			goto out;
		}
	}
	if (!made) {
		rc = tq_err_set(err, TQ_EIO, "workspace: no free name in %s", base);
		goto out;
	}
	if ((rc = snprintf(path, n, "%s/%s", base, name)) < 0 || (size_t)rc >= n) {
		rc = tq_err_set(err, TQ_EINVAL, "workspace: path longer than %zu bytes", n - 1);
		unlinkat(bfd, name, AT_REMOVEDIR);
		goto out;
	}
	if ((wfd = tq_openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0 ||
	    fstat(wfd, &st) < 0) {
		rc = tq_err_sys(err, "workspace: open %s", path);
		unlinkat(bfd, name, AT_REMOVEDIR);
		goto out;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
	if ((rc = ws_fill(s, wfd, err)) < 0)
		remove_dir_if(bfd, name, st.st_dev, st.st_ino);
out:
	if (rc < 0)
		path[0] = '\0';
	else
		rc = 0;
	tq_close(wfd);
	tq_close(bfd);
	return rc;
}

/* The owner file's JSON for a task, or for an interactive process. */
static char *owner_json(const char *home, int64_t task, int attempt, pid_t pid, int64_t start)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o == NULL)
		return NULL;
	if (pid > 0) {
		cJSON_AddNumberToObject(o, "pid", pid);
		cJSON_AddNumberToObject(o, "start", (double)start);
	} else {
		cJSON_AddNumberToObject(o, "task", (double)task);
		cJSON_AddNumberToObject(o, "attempt", attempt);
	}
	if (cJSON_AddStringToObject(o, "home", home) != NULL)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* ------------------------------------------------------------------ */
/* Queued agent tasks                                                 */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL && s[1] ? s + 1 : p;
}

/* The parser of t's profile; when the profile is gone from the config (or
 * the config broke since the submit: the task still runs), the agent's or
 * the program's name if it is one of the known CLIs. */
static void pick_parser(const struct tq_task *t, char *buf, size_t n)
{
	struct tq_profiles *ps = NULL;
	const struct tq_profile *p;
	const char *name = NULL;

	if (tq_profiles_load(&ps, NULL) == 0 && (p = tq_profiles_find(ps, t->agent)) != NULL)
		name = p->parser;
	else if (tq_registry_find(t->agent) != NULL)
		name = t->agent;
	else if (tq_registry_find(base_name(t->argv[0])) != NULL)
		name = base_name(t->argv[0]);
	strlcpy(buf, tq_registry_find(name) != NULL ? name : "", n); /* not "none" */
	tq_profiles_free(ps);
}

/* ------------------------------------------------------------------ */
/* The agents' own retries (issue 17.3)                               */

/* Read a whole small file (at most max bytes) into a malloc'd string;
 * NULL when it cannot be read. */
static char *slurp(const char *path, size_t max)
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

/*
 * The string value of a top-level key of a TOML file (before its first
 * table header): `key = "value"` or `key = 'value'`, comments and blank
 * lines skipped. Enough for codex's config.toml, whose model_provider and
 * model are plain strings; anything else is "not found" (NULL). malloc'd.
 */
static char *toml_top_string(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *line = p, *nl = strchr(p, '\n'), *v;
		size_t n;

		p = nl != NULL ? nl + 1 : NULL;
		line += strspn(line, " \t");
		if (*line == '[')
			return NULL; /* the first table: no more top-level keys */
		if (strncmp(line, key, klen) != 0)
			continue;
		v = line + klen;
		v += strspn(v, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		if (*v != '"' && *v != '\'')
			return NULL;
		n = strcspn(v + 1, *v == '"' ? "\"\\\n" : "'\n");
		if (v[1 + n] != *v)
			return NULL; /* escapes or a multi-line string: not ours to read */
		return strndup(v + 1, n);
	}
	return NULL;
}

/* The user's codex home as the task sees it: $CODEX_HOME, else ~/.codex. */
static int codex_home(const struct tq_env *env, char *buf, size_t n)
{
	const char *ch = tq_env_get(env, "CODEX_HOME"), *home = tq_env_get(env, "HOME");
	int k;

	if (ch != NULL && ch[0] == '/')
		k = snprintf(buf, n, "%s", ch);
	else if (home != NULL && home[0] == '/')
		k = snprintf(buf, n, "%s/.codex", home);
	else
		return -1;
	return k > 0 && (size_t)k < n ? 0 : -1;
}

/* Providers codex 0.169 will not let a config redefine ("Built-in providers
 * cannot be overridden"): their retries cannot be capped. */
static int codex_builtin_provider(const char *p)
{
	static const char *const builtin[] = { "openai", "oss", "ollama", "lmstudio", NULL };

	for (size_t i = 0; builtin[i] != NULL; i++)
		if (strcmp(p, builtin[i]) == 0)
			return 1;
	return 0;
}

/* argv with extra inserted after its first element, into ar->argv. */
static int argv_insert(struct tq_agent_run *ar, char *const *argv, size_t argc,
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
 * codex: its provider's request_max_retries and stream_max_retries to 0
 * (30 requests for a 503 by default), by `-c` after the program name (a
 * global option, before the subcommand; a later -c of the user's wins).
 * The provider is the config's model_provider; the built-in "openai" (the
 * default) cannot be capped.
 */
int tq_agent_cap_codex(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], a[192], b[192], *text, *prov;
	char *const *argv = ar->argv != NULL ? ar->argv : t->argv;
	size_t argc = ar->argv != NULL ? ar->argc : t->argc;
	char *extra[4];
	int rc = 0;

	(void)q;
	if (codex_home(env, dir, sizeof(dir)) < 0 ||
	    snprintf(path, sizeof(path), "%s/config.toml", dir) >= (int)sizeof(path) ||
	    (text = slurp(path, TQ_AGENT_CONFIG_MAX)) == NULL)
		return 0; /* no config: the built-in openai provider */
	prov = toml_top_string(text, "model_provider");
	free(text);
	if (prov == NULL || codex_builtin_provider(prov) ||
	    strspn(prov, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
	    strlen(prov) || strlen(prov) > 100) {
		free(prov);
		return 0;
	}
	snprintf(a, sizeof(a), "model_providers.%s.request_max_retries=%d", prov,
		 TQ_AGENT_CODEX_RETRIES);
	snprintf(b, sizeof(b), "model_providers.%s.stream_max_retries=%d", prov,
		 TQ_AGENT_CODEX_RETRIES);
	extra[0] = "-c";
	extra[1] = a;
	extra[2] = "-c";
	extra[3] = b;
	rc = argv_insert(ar, argv, argc, extra, 4, err);
	free(prov);
	return rc;
}

/* Strip // and / * * / comments outside strings (gemini's settings files
 * may hold them: it reads them with strip-json-comments), in place. */
static void strip_json_comments(char *s)
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

/* The user's gemini settings with general.maxAttempts set, as JSON text
 * (malloc'd), or NULL when they cannot be read as JSON (then no cap: a
 * settings file taskq cannot merge is not replaced). */
static char *gemini_settings(const char *user_dir)
{
	char path[PATH_MAX + 32], *text, *out = NULL;
	cJSON *j, *gen;

	if (snprintf(path, sizeof(path), "%s/settings.json", user_dir) >= (int)sizeof(path))
		return NULL;
	text = slurp(path, TQ_AGENT_CONFIG_MAX);
	if (text == NULL && errno != ENOENT)
		return NULL;
	if (text != NULL)
		strip_json_comments(text);
	j = text != NULL ? cJSON_Parse(text) : cJSON_CreateObject();
	free(text);
	if (!cJSON_IsObject(j))
		goto out;
	gen = cJSON_GetObjectItemCaseSensitive(j, "general");
	if (gen == NULL)
		gen = cJSON_AddObjectToObject(j, "general");
	if (!cJSON_IsObject(gen))
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(gen, "maxAttempts");
	if (cJSON_AddNumberToObject(gen, "maxAttempts", TQ_AGENT_GEMINI_ATTEMPTS) != NULL)
		out = cJSON_PrintUnformatted(j);
out:
	cJSON_Delete(j);
	return out;
}

/* What gemini may create at the top of ~/.gemini on a first run: linked
 * even before they exist, so its writes (which follow a symlink) land in
 * the user's own directory, not in the overlay removed after the run. */
static const char *const gemini_files[] = { "projects.json", "installation_id", "user_id",
					    "state.json", "google_accounts.json", NULL };

/*
 * A private copy of one of the user's config directories in which taskq
 * changed one file, for a CLI pointed at it (GEMINI_CLI_HOME, CODEX_HOME):
 * the directory name made in dfd (dir's descriptor, 0700), file written
 * there with text, and a symlink to every other entry of user (the user's
 * own directory), so that the CLI reads taskq's file and everything else
 * (sessions, login, history) stays the user's, written through the links.
 * user/keep (a directory the CLI keeps its sessions in) is made first when
 * missing, and each name of ahead (NULL-terminated, may be NULL) is linked
 * even before it exists: what the CLI creates there on a first run must
 * outlive the copy. what names the purpose in errors ("codex home: link
 * PATH"). On failure what was made is left for the run's cleanup (it is
 * inside the run's own directory).
 */
static int overlay_dir(int dfd, const char *dir, const char *name, const char *user,
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
	if ((rc = write_str(fd, file, text, err)) < 0)
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

/*
 * gemini: general.maxAttempts 1 (10 by default: 9 requests in 184 s for a
 * 429). Its system settings file would do, but gemini 0.61 reads one only
 * when root owns it and every directory above it; so the user's own
 * ~/.gemini is overlaid instead: GEMINI_CLI_HOME names a private directory
 * (dir, removed after the run) whose .gemini holds the user's settings.json
 * with maxAttempts set and a symlink to every other entry of the user's
 * ~/.gemini (sessions, credentials, history stay the user's); ~/.agents
 * likewise. The user's files are not touched, except that ~/.gemini and
 * its tmp/ (where sessions live) are made when missing.
 */
static int cap_gemini(const struct tq_env *env, int dfd, const char *dir,
		      struct tq_env *out_env, struct tq_err *err)
{
	const char *home = tq_env_get(env, "GEMINI_CLI_HOME");
	char user[PATH_MAX], agents[PATH_MAX], *settings = NULL, *kv = NULL;
	int rc = 0;

	if (home == NULL || home[0] != '/')
		home = tq_env_get(env, "HOME");
	if (home == NULL || home[0] != '/' ||
	    snprintf(user, sizeof(user), "%s/.gemini", home) >= (int)sizeof(user) ||
	    snprintf(agents, sizeof(agents), "%s/.agents", home) >= (int)sizeof(agents))
		return 0;
	if ((settings = gemini_settings(user)) == NULL)
		return 0;
	/* sessions must outlive the overlay: ~/.gemini/tmp */
	if ((rc = overlay_dir(dfd, dir, ".gemini", user, "tmp", gemini_files, "settings.json",
			      settings, "gemini retries", err)) < 0)
		goto out;
	if (access(agents, F_OK) == 0 && symlinkat(agents, dfd, ".agents") < 0) {
		rc = tq_err_sys(err, "gemini retries: link %s", agents);
		goto out;
	}
	if (asprintf(&kv, "GEMINI_CLI_HOME=%s", dir) < 0) {
		kv = NULL;
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	rc = tq_env_set(out_env, kv, err);
out:
	free(settings);
	free(kv);
	return rc;
}

/* The key a TOML table header names first ("[mcp_servers.x]" and
 * "[ \"mcp_servers\" . x ]" both give mcp_servers), into buf; 0 if line
 * is no header. */
static int toml_header_key(const char *line, char *buf, size_t n)
{
	const char *p = line + strspn(line, " \t");
	size_t len;

	if (*p != '[')
		return 0;
	p += p[1] == '[' ? 2 : 1;
	p += strspn(p, " \t");
	if (*p == '"' || *p == '\'') {
		len = strcspn(p + 1, *p == '"' ? "\"" : "'");
		p++;
	} else {
		len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");
	}
	if (len >= n)
		len = n - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return 1;
}

/* A key/value line whose key starts with the key mcp_servers
 * ("mcp_servers = {...}", "mcp_servers.x.command = ..."). */
static int toml_mcp_key(const char *line)
{
	const char *p = line + strspn(line, " \t");

	if (*p == '"' || *p == '\'')
		p++;
	if (strncmp(p, "mcp_servers", 11) != 0)
		return 0;
	p += 11;
	if (*p == '"' || *p == '\'')
		p++;
	p += strspn(p, " \t");
	return *p == '.' || *p == '=';
}

/* Bracket depth change of a line's value outside strings, and whether it
 * opens or closes a multi-line string (an odd number of """ or '''). */
static int toml_depth(const char *line, int *ml_toggle)
{
	int depth = 0, in = 0;
	char q = 0;

	*ml_toggle = 0;
	for (const char *p = line; *p != '\0' && *p != '\n'; p++) {
		if ((strncmp(p, "\"\"\"", 3) == 0 || strncmp(p, "'''", 3) == 0)) {
			*ml_toggle ^= 1;
			p += 2;
			continue;
		}
		if (in) {
			if (*p == '\\' && q == '"' && p[1] != '\0')
				p++;
			else if (*p == q)
				in = 0;
		} else if (*p == '"' || *p == '\'') {
			in = 1;
			q = *p;
		} else if (*p == '#') {
			break;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if (*p == ']' || *p == '}') {
			depth--;
		}
	}
	return depth;
}

/*
 * A codex config.toml without its MCP servers: every [mcp_servers...] table
 * (and [[...]] array of tables) and every mcp_servers key of the root
 * table, with the lines their values continue on, left out; the rest kept
 * byte for byte. malloc'd; NULL when out of memory.
 */
static char *toml_without_mcp(const char *text)
{
	size_t n = strlen(text), w = 0;
	char *out = malloc(n + 1), key[64];
	const char *p = text;
	int skip_table = 0, root = 1, ml = 0, skip_value = 0, depth = 0;

	if (out == NULL)
		return NULL;
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) + 1 : strlen(p);
		int drop, tog, d;

		if (ml || skip_value) {
			/* inside a value that began on an earlier line */
			drop = skip_value || skip_table;
			d = toml_depth(p, &tog);
			if (tog)
				ml = !ml;
			if (skip_value && !ml && (depth += d) <= 0)
				skip_value = 0;
		} else if (toml_header_key(p, key, sizeof(key))) {
			skip_table = strcmp(key, "mcp_servers") == 0;
			root = 0;
			drop = skip_table;
		} else {
			drop = skip_table || (root && toml_mcp_key(p));
			d = toml_depth(p, &tog);
			if (tog)
				ml = 1;
			if (drop && (d > 0 || tog)) {
				skip_value = 1;
				depth = d;
			}
		}
		if (!drop) {
			memcpy(out + w, p, len);
			w += len;
		}
		p += len;
	}
	out[w] = '\0';
	return out;
}

/*
 * codex --isolate: the user's MCP servers hidden (codex 0.169 ignores
 * `-c mcp_servers={}`: a server of ~/.codex/config.toml starts all the
 * same). CODEX_HOME names a private copy of the user's codex home in the
 * workspace dir (TQ_WORKSPACE_CODEX_HOME: in the workspace, whose path is
 * the same for every task of a --session, because codex records a
 * session's file by its path under CODEX_HOME and looks for it there to
 * resume):
 * config.toml without its MCP servers (its provider, model, projects and
 * the rest kept), and every other entry (auth.json, sessions, the state
 * databases, skills) a symlink to the user's, so that login, sessions and
 * --resume stay the user's (codex writes auth.json through the link, and
 * its lock beside the real file). Nothing to do when the user's config
 * names no MCP server.
 */
static int isolate_codex(const struct tq_env *env, int dfd, const char *dir,
			 struct tq_env *out_env, struct tq_err *err)
{
	char user[PATH_MAX], path[PATH_MAX + 16], *text = NULL, *kept = NULL, *kv = NULL;
	int rc = 0;

	if (codex_home(env, user, sizeof(user)) < 0 ||
	    snprintf(path, sizeof(path), "%s/config.toml", user) >= (int)sizeof(path) ||
	    (text = slurp(path, TQ_AGENT_CONFIG_MAX)) == NULL || strstr(text, "mcp_servers") == NULL)
		goto out;
	if ((kept = toml_without_mcp(text)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	/* sessions must outlive the copy: ~/.codex/sessions */
	if ((rc = overlay_dir(dfd, dir, TQ_WORKSPACE_CODEX_HOME, user, "sessions", NULL,
			      "config.toml", kept, "codex home", err)) < 0)
		goto out;
	if (asprintf(&kv, "CODEX_HOME=%s/" TQ_WORKSPACE_CODEX_HOME, dir) < 0) {
		kv = NULL;
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	rc = tq_env_set(out_env, kv, err);
out:
	free(text);
	free(kept);
	free(kv);
	if (rc < 0)
		tq_err_prefix(err, "hiding your MCP servers from codex");
	return rc;
}

/* The private directory of a run (its overlays), made on first need: a
 * workspace with only its owner file, so that the sweep removes one a
 * crash left behind. */
static int aux_dir(struct tq_queue *q, const struct tq_task *t, struct tq_agent_run *ar,
		   int *dfd, struct tq_err *err)
{
	struct ws_spec ws = { .q = q, .home = tq_queue_home(q), .bare = 1 };
	char *owner = owner_json(ws.home, t->id, t->attempt, 0, 0);
	int rc;

	if (owner == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	ws.owner = owner;
	rc = ws_create(&ws, ar->aux, sizeof(ar->aux), &ar->aux_dev, &ar->aux_ino, err);
	free(owner);
	if (rc < 0)
		return rc;
	if ((*dfd = tq_open(ar->aux, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "open %s", ar->aux);
	return 0;
}

/* claude: CLAUDE_CODE_MAX_RETRIES=0 for a plain command unless its
 * environment sets it. */
int tq_agent_cap_claude(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
			struct tq_agent_run *ar, struct tq_err *err)
{
	int rc = 0;

	(void)q;
	(void)ar;
	/* an ask task has it from its profile's env, unless the user --unset
	 * it: that choice stands */
	if (t->agent == NULL && tq_env_get(env, "CLAUDE_CODE_MAX_RETRIES") == NULL)
		rc = tq_env_set(env, "CLAUDE_CODE_MAX_RETRIES=0", err);
	if (rc < 0)
		tq_err_prefix(err, "capping the agent's own retries");
	return rc;
}

/* gemini: its settings overlaid in the run's private directory. */
int tq_agent_cap_gemini(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
			struct tq_agent_run *ar, struct tq_err *err)
{
	int rc, dfd = -1;

	if ((rc = aux_dir(q, t, ar, &dfd, err)) == 0)
		rc = cap_gemini(env, dfd, ar->aux, env, err);
	tq_close(dfd);
	if (rc < 0)
		tq_err_prefix(err, "capping the agent's own retries");
	return rc;
}

/* codex in an isolated workspace: its CODEX_HOME without MCP servers. */
int tq_agent_isolate_codex(struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err)
{
	int rc, dfd;

	if ((dfd = tq_open(ar->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "open %s", ar->workspace);
	rc = isolate_codex(env, dfd, ar->workspace, env, err);
	tq_close(dfd);
	return rc;
}

/*
 * Cap the agent CLI's own retries (taskq's retries and group pauses are in
 * charge) for every run of a CLI taskq recognises (def: the registry's
 * cap_retries; opencode has no setting, 5 retries of its own), then in an
 * isolated workspace keep the user's MCP servers from it (isolate). Each
 * says what failed.
 */
static int cap_retries(struct tq_queue *q, const struct tq_task *t,
		       const struct tq_agent_def *def, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	int rc = 0;

	if (def->cap_retries != NULL)
		rc = def->cap_retries(q, t, env, ar, err);
	if (rc == 0 && def->isolate != NULL && ar->workspace[0] != '\0')
		rc = def->isolate(env, ar, err);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The model a CLI's own config names (issue 17.9)                    */

/*
 * Codex and OpenCode print no model. When the command line names none
 * (tq_agent_model looks there first), the one the run uses is in the CLI's
 * config, read here at spawn time as the task's environment and directory
 * point at it, so a result can name it. Measured with codex 0.169 and
 * opencode 1.18 against the mock (the model of the request it sent):
 * tests/integration/test_ask_real_clis.sh.
 */

/* The value of option name (with a value: "NAME V", "NAME=V") last given
 * in argv before "--", or NULL. alias: a short form ("-p"), or NULL. */
static const char *opt_value(char *const *v, size_t n, const char *name, const char *alias)
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

/* codex's `-c model=V` / `--config model=V` (the last one): V is TOML, and
 * a bare word is taken as a string, as codex does. malloc'd, or NULL. */
static char *codex_cli_model(char *const *v, size_t n)
{
	const char *val = NULL;

	for (size_t i = 1; i < n; i++) {
		const char *kv = NULL, *p;

		if (strcmp(v[i], "--") == 0)
			break;
		if ((strcmp(v[i], "-c") == 0 || strcmp(v[i], "--config") == 0) && i + 1 < n)
			kv = v[++i];
		else if (strncmp(v[i], "--config=", 9) == 0)
			kv = v[i] + 9;
		if (kv == NULL)
			continue;
		p = kv + strspn(kv, " \t");
		if (strncmp(p, "model", 5) != 0)
			continue;
		p += 5;
		p += strspn(p, " \t");
		if (*p == '=')
			val = p + 1;
	}
	if (val == NULL)
		return NULL;
	val += strspn(val, " \t");
	if (*val == '"' || *val == '\'') {
		size_t k = strcspn(val + 1, *val == '"' ? "\"\\" : "'");

		return val[1 + k] == *val && k > 0 ? strndup(val + 1, k) : NULL;
	}
	return *val != '\0' ? strndup(val, strcspn(val, " \t")) : NULL;
}

/* A top-level string of the TOML file dir/name, malloc'd, or NULL. */
static char *toml_file_string(const char *dir, const char *name, const char *key)
{
	char path[PATH_MAX];
	char *text, *v;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    (text = slurp(path, TQ_AGENT_CONFIG_MAX)) == NULL)
		return NULL;
	v = toml_top_string(text, key);
	free(text);
	return v;
}

/*
 * codex 0.169: `-c model=V` on the command line, else the model of the
 * profile --profile/-p names ($CODEX_HOME/NAME.config.toml: 0.169 refuses
 * the older `profile = ` key and [profiles.NAME] tables), else config.toml's.
 */
char *tq_agent_model_codex(char *const *v, size_t n, const struct tq_env *env, const char *cwd)
{
	char dir[PATH_MAX], file[NAME_MAX + 1];
	const char *prof = opt_value(v, n, "--profile", "-p");
	char *m = codex_cli_model(v, n);

	(void)cwd;
	if (m != NULL || codex_home(env, dir, sizeof(dir)) < 0)
		return m;
	if (prof != NULL && prof[0] != '\0' && strchr(prof, '/') == NULL &&
	    snprintf(file, sizeof(file), "%s.config.toml", prof) < (int)sizeof(file) &&
	    (m = toml_file_string(dir, file, "model")) != NULL)
		return m;
	return toml_file_string(dir, "config.toml", "model");
}

/* The model a parsed opencode config names for agent (its
 * agent.AGENT.model) or for every agent ("model"), as asked by top. */
static const char *oc_model_of(const cJSON *j, const char *agent, int top)
{
	const cJSON *m;

	if (top)
		m = cJSON_GetObjectItemCaseSensitive(j, "model");
	else
		m = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "agent"),
							 agent), "model");
	return cJSON_IsString(m) && m->valuestring[0] != '\0' ? m->valuestring : NULL;
}

/* One opencode config layer: JSON text (comments allowed) or, when path is
 * not NULL, the file. 1 with *out (malloc'd) when it names the model asked
 * for; 0 when not, or it cannot be read. */
static int oc_layer(const char *path, const char *text, const char *agent, int top, char **out)
{
	char *buf = path != NULL ? slurp(path, TQ_AGENT_CONFIG_MAX) :
		    text != NULL ? strdup(text) : NULL;
	cJSON *j;
	const char *m;

	if (buf == NULL)
		return 0;
	strip_json_comments(buf);
	j = cJSON_Parse(buf);
	free(buf);
	if ((m = oc_model_of(j, agent, top)) != NULL)
		*out = strdup(m);
	cJSON_Delete(j);
	return m != NULL;
}

/* In dir/sub (sub "" or ".opencode"): opencode.json, then opencode.jsonc. */
static int oc_dir(const char *dir, const char *sub, const char *agent, int top, char **out)
{
	static const char *const names[] = { "opencode.json", "opencode.jsonc" };
	char path[PATH_MAX];

	for (size_t i = 0; i < 2; i++)
		if (snprintf(path, sizeof(path), "%s%s%s/%s", dir, *sub ? "/" : "", sub,
			     names[i]) < (int)sizeof(path) &&
		    oc_layer(path, NULL, agent, top, out))
			return 1;
	return 0;
}

/* The project's layers from cwd up to its git root (a directory holding
 * .git), or up to / outside a repository, as opencode 1.18 searches: the
 * .opencode directories first (they are merged last), then opencode.json,
 * the nearest first in each. */
static int oc_project(const char *cwd, const char *agent, int top, char **out)
{
	static const char *const subs[] = { ".opencode", "" };
	char dir[PATH_MAX], git[PATH_MAX + 8];

	for (size_t s = 0; s < 2; s++) {
		if (strlcpy(dir, cwd, sizeof(dir)) >= sizeof(dir) || dir[0] != '/')
			return 0;
		for (;;) {
			char *slash;

			if (oc_dir(dir, subs[s], agent, top, out))
				return 1;
			snprintf(git, sizeof(git), "%s/.git", dir);
			if (access(git, F_OK) == 0 || (slash = strrchr(dir, '/')) == NULL ||
			    dir[1] == '\0')
				break;
			slash[slash == dir ? 1 : 0] = '\0';
		}
	}
	return 0;
}

/*
 * opencode 1.18, highest first: $OPENCODE_CONFIG_CONTENT, the project's
 * files (oc_project; not with $OPENCODE_DISABLE_PROJECT_CONFIG), the file
 * $OPENCODE_CONFIG names, the global ($XDG_CONFIG_HOME, else
 * ~/.config)/opencode/{opencode.json,opencode.jsonc,config.json}. The
 * agent it runs (--agent, else "build") may have a model of its own in
 * any layer (agent.NAME.model), which wins over "model" in every one.
 */
char *tq_agent_model_opencode(char *const *v, size_t n, const struct tq_env *env,
			      const char *cwd)
{
	const char *agent = opt_value(v, n, "--agent", NULL);
	const char *xdg = tq_env_get(env, "XDG_CONFIG_HOME"), *home = tq_env_get(env, "HOME");
	const char *file = tq_env_get(env, "OPENCODE_CONFIG");
	int project = tq_env_get(env, "OPENCODE_DISABLE_PROJECT_CONFIG") == NULL;
	char global[PATH_MAX], path[PATH_MAX + 32];
	char *m = NULL;

	if (agent == NULL || agent[0] == '\0')
		agent = "build";
	global[0] = '\0';
	if (xdg != NULL && xdg[0] == '/')
		snprintf(global, sizeof(global), "%s/opencode", xdg);
	else if (home != NULL && home[0] == '/')
		snprintf(global, sizeof(global), "%s/.config/opencode", home);
	for (int top = 0; top < 2; top++) {
		if (oc_layer(NULL, tq_env_get(env, "OPENCODE_CONFIG_CONTENT"), agent, top, &m) ||
		    (project && cwd != NULL && oc_project(cwd, agent, top, &m)) ||
		    (file != NULL && file[0] != '\0' && oc_layer(file, NULL, agent, top, &m)) ||
		    (global[0] != '\0' && oc_dir(global, "", agent, top, &m)))
			return m;
		if (global[0] != '\0' &&
		    snprintf(path, sizeof(path), "%s/config.json", global) < (int)sizeof(path) &&
		    oc_layer(path, NULL, agent, top, &m))
			return m;
	}
	return NULL;
}

/* ar->conf_model for a run of the CLI def (argv: what runs). */
static void conf_model(const struct tq_agent_def *def, char *const *v, size_t n,
		       const struct tq_env *env, struct tq_agent_run *ar)
{
	free(ar->conf_model);
	ar->conf_model = NULL;
	if (def->conf_model != NULL)
		ar->conf_model = def->conf_model(v, n, env, ar->cwd);
}

/* The stored agent session id goes into argv (--resume ID): only one of
 * the agent's own form (a store written by an older taskq, or by hand, may
 * hold anything, "--dangerously-skip-permissions" included). */
static int check_session(const char *parser, const char *sid, struct tq_err *err)
{
	char why[64], shown[4 * 40 + 1];

	if (tq_result_session_check(parser[0] ? parser : NULL, sid, why, sizeof(why)) == 0)
		return 0;
	strvisx(shown, sid, strnlen(sid, 40), VIS_CSTYLE | VIS_DQ | VIS_NL | VIS_TAB | VIS_OCTAL);
	return tq_err_set(err, TQ_EINVAL,
			  "agent session id \"%s%s\" of the session refused (%s); the "
			  "session cannot continue", shown, strlen(sid) > 40 ? "..." : "", why);
}

int tq_agent_prepare(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		     struct tq_agent_run *ar, struct tq_err *err)
{
	struct tq_placeholders v = { 0 };
	struct ws_spec ws = { .q = q, .home = tq_queue_home(q), .prompt = t->prompt };
	const struct tq_agent_def *def;
	char *sid = NULL, *owner = NULL, *pwd = NULL, idbuf[32];
	char pfile[PATH_MAX + 16], mcp[PATH_MAX + 16];
	cJSON *sources = NULL;
	int rc = 0;

	ar->cwd = t->cwd;
	if (t->agent == NULL) {
		/* a plain command that runs an agent CLI (`taskq submit --
		 * gemini ...`), recognised by its program's name */
		def = tq_registry_find(base_name(t->argv[0]));
		if (def == NULL)
			return 0;
		if ((rc = cap_retries(q, t, def, env, ar, err)) == 0)
			conf_model(def, ar->argv != NULL ? ar->argv : t->argv,
				   ar->argv != NULL ? ar->argc : t->argc, env, ar);
		return rc;
	}
	pick_parser(t, ar->parser, sizeof(ar->parser));
	if (t->session != NULL && (rc = tq_queue_session_get(q, t->session, &sid, err)) < 0)
		goto out;
	if (sid != NULL && (rc = check_session(ar->parser, sid, err)) < 0)
		goto out;
	if (t->isolate) {
		if ((rc = parse_sources(t->sources_json, &sources, err)) < 0)
			goto out;
		if ((owner = owner_json(ws.home, t->id, t->attempt, 0, 0)) == NULL) {
			rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
			goto out;
		}
		ws.session_key = t->session;
		ws.owner = owner;
		ws.sources = sources;
		rc = ws_create(&ws, ar->workspace, sizeof(ar->workspace), &ar->ws_dev,
			       &ar->ws_ino, err);
		if (rc < 0)
			goto out;
		ar->cwd = ar->workspace;
		snprintf(pfile, sizeof(pfile), "%s/prompt.md", ar->workspace);
		snprintf(mcp, sizeof(mcp), "%s/.mcp.json", ar->workspace);
		v.prompt_file = pfile;
		v.mcp_config = mcp;
		/* a program that trusts $PWD must see where it really is */
		if (asprintf(&pwd, "PWD=%s", ar->workspace) < 0 ||
		    (rc = tq_env_set(env, pwd, err)) < 0) {
			rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
			goto out;
		}
	}
	snprintf(idbuf, sizeof(idbuf), "%lld", (long long)t->id);
	v.prompt = t->prompt;
	v.workdir = ar->cwd;
	v.session_id = sid;
	v.task_id = idbuf;
	v.model = t->model;
	rc = tq_profile_expand(t->argv, t->argc, &v, &ar->argv, &ar->argc, err);
	if (rc < 0)
		tq_err_prefix(err, "command template");
	else if ((def = tq_registry_find(ar->parser)) != NULL &&
		 (rc = cap_retries(q, t, def, env, ar, err)) == 0)
		conf_model(def, ar->argv, ar->argc, env, ar);
out:
	free(sid);
	free(owner);
	free(pwd);
	cJSON_Delete(sources);
	return rc;
}

const char *tq_agent_model(const struct tq_task *t, const struct tq_agent_run *ar)
{
	char *const *v = ar != NULL && ar->argv != NULL ? ar->argv : t->argv;
	size_t n = ar != NULL && ar->argv != NULL ? ar->argc : t->argc;

	if (t->model != NULL && t->model[0] != '\0')
		return t->model;
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i], "--") == 0)
			break; /* the prompt and what follows are not options */
		if ((strcmp(v[i], "-m") == 0 || strcmp(v[i], "--model") == 0) && i + 1 < n)
			return v[i + 1][0] != '\0' ? v[i + 1] : NULL;
		if (strncmp(v[i], "--model=", 8) == 0 && v[i][8] != '\0')
			return v[i] + 8;
	}
	return ar != NULL ? ar->conf_model : NULL;
}

void tq_agent_cleanup(struct tq_agent_run *ar)
{
	tq_profile_argv_free(ar->argv);
	ar->argv = NULL;
	ar->argc = 0;
	if (ar->workspace[0] != '\0')
		workspace_remove(ar->workspace, ar->ws_dev, ar->ws_ino);
	ar->workspace[0] = '\0';
	if (ar->aux[0] != '\0')
		workspace_remove(ar->aux, ar->aux_dev, ar->aux_ino);
	ar->aux[0] = '\0';
	free(ar->conf_model);
	ar->conf_model = NULL;
}

/* ------------------------------------------------------------------ */
/* The sweep                                                          */

/* Sweep one directory. need_home: shared with other state directories. */
static int sweep_dir(struct tq_queue *q, const char *home, const char *dir, int need_home,
		     int *removed, struct tq_err *err)
{
	int dfd = tq_open(dir, O_RDONLY | O_DIRECTORY, 0), rc = 0;
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return 0; /* no such directory: nothing to sweep */
	if ((d = fdopendir(dfd)) == NULL) {
		tq_close(dfd);
		return 0;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		struct stat st;
		int wfd, state;

		/* a removal a crash cut short (left an hour, so as never to race
		 * one under way) */
		if (!need_home && strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX)) == 0) {
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    tq_now_ms() - (int64_t)st.st_ctim.tv_sec * 1000 > TQ_WORKSPACE_ORPHAN_MS)
				rm_at(dirfd(d), e->d_name, 0);
			continue;
		}
		if (!is_workspace_name(e->d_name))
			continue;
		wfd = tq_openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (wfd < 0)
			continue;
		state = owner_state(q, wfd, home, need_home, err);
		if (state == OWNER_GONE && fstat(wfd, &st) == 0 &&
		    remove_dir_if(dirfd(d), e->d_name, st.st_dev, st.st_ino) == 0 &&
		    removed != NULL)
			(*removed)++;
		tq_close(wfd);
		if (state < 0)
			rc = state;
	}
	closedir(d);
	return rc;
}

int tq_workspace_sweep(struct tq_queue *q, const char *home, int *removed,
		       struct tq_err *err)
{
	char work[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	int n = 0, rc;

	if (removed != NULL)
		*removed = 0;
	if (snprintf(work, sizeof(work), "%s/work", home) >= (int)sizeof(work))
		return tq_err_set(err, TQ_EINVAL, "workspace sweep: path too long");
	rc = sweep_dir(q, home, work, 0, &n, err);
	if (tmp == NULL || tmp[0] != '/')
		tmp = "/tmp";
	if (rc == 0 && strcmp(tmp, work) != 0)
		rc = sweep_dir(q, home, tmp, 1, &n, err);
	if (removed != NULL)
		*removed = n;
	return rc;
}

/* ------------------------------------------------------------------ */
/* --interactive                                                      */

/* The agent in the foreground, while we wait for it. */
struct foreground {
	pid_t pid;
	int status;
	int done;                  /* reaped: its pid is no longer ours */
};

static void fg_child(pid_t pid, int status, void *arg)
{
	struct foreground *f = arg;

	if (pid == f->pid) {
		f->status = status;
		f->done = 1;
	}
}

static void fg_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct foreground *f = arg;

	/* INT/QUIT: the terminal sent them to the whole foreground group, the
	 * agent included; passing them on would make one ^C two (two ^C end an
	 * interactive claude). TERM and HUP are passed on. */
	if ((si->ssi_signo == SIGTERM || si->ssi_signo == SIGHUP) && !f->done)
		kill(f->pid, (int)si->ssi_signo);
}

/*
 * Run argv in the foreground and wait: stdio, session and process group are
 * ours (the spawn's flags: spawn.h), cwd its workspace. The terminal's
 * SIGINT/SIGQUIT reach the agent by themselves (it is in the foreground
 * group); we ignore them meanwhile, and pass SIGTERM and SIGHUP on. The
 * wait is the event loop (loop.h) with no descriptor and no deadline.
 */
static int run_foreground(char *const *argv, char *const *envp, const char *cwd, int *status,
			  struct tq_err *err)
{
	static const int sigs[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD };
	struct tq_child c = TQ_CHILD_INIT;
	struct foreground f = { .pid = -1 };
	struct tq_loop l = { .on_child = fg_child, .on_signal = fg_signal, .arg = &f };
	struct tq_loop drain = TQ_LOOP_INIT;
	sigset_t old, deflt;
	int rc;

	sigemptyset(&deflt);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&deflt, sigs[i]);
	sigaddset(&deflt, SIGPIPE);
	c.argv = argv;
	c.envp = envp;
	c.cwd = cwd;
	c.in = TQ_SPAWN_STDIO_INHERIT;
	c.flags = TQ_SPAWN_KEEP_SESSION;
	c.sigdefault = &deflt;
	/* block first: a signal between the spawn and the wait is not lost */
	if ((l.sigfd = tq_loop_sigfd_open(sigs, sizeof(sigs) / sizeof(sigs[0]), &old, err)) < 0)
		return l.sigfd;
	if ((rc = tq_spawn_start(&c, err)) < 0) {
		tq_loop_sigfd_close(l.sigfd, &old);
		return rc;
	}
	f.pid = c.pid;
	/* until it is reaped; a failed turn (poll out of memory) is tried
	 * again, as there is nothing else to do */
	while (!f.done)
		tq_loop_wait(&l, NULL, NULL, 0, TQ_LOOP_NEVER, NULL);
	/* a last ^C that came with the exit is not ours to die of: read, and
	 * dropped, before the mask is put back */
	drain.sigfd = l.sigfd;
	tq_loop_signals(&drain, NULL);
	tq_loop_sigfd_close(l.sigfd, &old);
	*status = tq_proc_exit_code(f.status);
	return 0;
}

int tq_agent_interactive(const struct tq_agent_interactive *in, int *status,
			 struct tq_err *err)
{
	struct ws_spec ws = { .q = in->q, .home = in->home, .session_key = in->session_key,
			      .prompt = in->prompt };
	struct tq_placeholders v = { 0 };
	struct tq_env env = TQ_ENV_INIT;
	char path[PATH_MAX], pfile[PATH_MAX + 16], mcp[PATH_MAX + 16];
	char *owner = NULL, *pwd = NULL;
	char **argv = NULL;
	cJSON *sources = NULL;
	int64_t start = 0;
	size_t argc = 0;
	dev_t dev = 0;
	ino_t ino = 0;
	int rc;

	path[0] = '\0';
	*status = 0;
	if ((rc = parse_sources(in->sources_json, &sources, err)) < 0)
		return rc;
	tq_proc_start_time(getpid(), &start, NULL);
	if ((owner = owner_json(in->home, 0, 0, getpid(), start)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
		goto out;
	}
	ws.owner = owner;
	ws.sources = sources;
	if ((rc = ws_create(&ws, path, sizeof(path), &dev, &ino, err)) < 0)
		goto out;
	snprintf(pfile, sizeof(pfile), "%s/prompt.md", path);
	snprintf(mcp, sizeof(mcp), "%s/.mcp.json", path);
	v = (struct tq_placeholders){ .prompt = in->prompt, .prompt_file = pfile,
				      .mcp_config = mcp, .workdir = path,
				      .session_id = in->session_id, .model = in->model };
	if ((rc = tq_profile_expand(in->argv, in->argc, &v, &argv, &argc, err)) < 0) {
		tq_err_prefix(err, "interactive command template");
		goto out;
	}
	if ((rc = tq_scrub_env(&env, in->envp, NULL, err)) < 0)
		goto out;
	if (asprintf(&pwd, "PWD=%s", path) < 0) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = tq_env_set(&env, pwd, err)) < 0)
		goto out;
	rc = run_foreground(argv, env.vars, path, status, err);
out:
	if (path[0] != '\0')
		workspace_remove(path, dev, ino);
	tq_profile_argv_free(argv);
	tq_env_release(&env);
	cJSON_Delete(sources);
	free(owner);
	free(pwd);
	return rc;
}
