/*
 * workspace.c - the isolated workspace of an agent task (agent.h): made
 * with its files and the task's sources, removed after the run, swept when
 * a crash left one behind; also a run's private directory (the same kind of
 * directory with only its owner file), which an agent's overlays go in.
 *
 * Workspaces are made and removed through directory descriptors with
 * O_NOFOLLOW, never by following a path twice: a source is a symlink into
 * the user's files, and removal must unlink that link, never what it points
 * to. A workspace is removed by first renaming it aside and checking that
 * the renamed directory is the one we meant (device and inode): the next
 * task of a session may already have created a new one under the same name.
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <cjson/cJSON.h>

#include "common/sys.h"
#include "proc/proc.h"
#include "agent_int.h"
#include "registry.h"

#define OWNER_MAX 4096             /* bytes of a .taskq-task file */
#define UUID_LEN 36
#define TRASH_PREFIX ".taskq-gone-"

#define MCP_EMPTY "{\"mcpServers\":{}}\n"

/*
 * The files every workspace holds besides the owner file, the prompt, the
 * agents' own (their registry entries' ws_files) and the sources: the
 * empty MCP config {mcp_config} names (profile.h; the same file is where a
 * CLI that reads a project's MCP servers from .mcp.json finds none), and
 * the same under .cursor/ for Cursor's CLI, which taskq does not know by
 * name. No two files of these and the agents' share a first component
 * (test_registry), so each DIR is made once.
 */
static const struct tq_agent_file ws_common[] = {
	{ TQ_WORKSPACE_MCP, MCP_EMPTY },
	{ ".cursor/mcp.json", MCP_EMPTY },
	{ NULL, NULL },
};

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
void tq_workspace_remove(const char *path, dev_t dev, ino_t ino)
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

/* Whether path's first component ("DIR" of "DIR/NAME", else path) is
 * name. */
static int first_is(const char *path, const char *name)
{
	size_t k = strcspn(path, "/");

	return strlen(name) == k && strncmp(path, name, k) == 0;
}

/* One of files (a {NULL}-ended list, or NULL) is name or under it. */
static int in_files(const struct tq_agent_file *files, const char *name)
{
	for (const struct tq_agent_file *f = files; f != NULL && f->path != NULL; f++)
		if (first_is(f->path, name))
			return 1;
	return 0;
}

/* What a workspace holds besides the sources, or what an agent's run may
 * make there: a source may not take these names. */
static int reserved(const char *name)
{
	const struct tq_agent_def *d;

	if (strcmp(name, TQ_WORKSPACE_OWNER) == 0 || strcmp(name, TQ_WORKSPACE_PROMPT) == 0 ||
	    in_files(ws_common, name))
		return 1;
	for (size_t i = 0; (d = tq_registry_at(i)) != NULL; i++) {
		if (in_files(d->ws_files, name))
			return 1;
		for (const char *const *n = d->ws_names; n != NULL && *n != NULL; n++)
			if (strcmp(name, *n) == 0)
				return 1;
	}
	return 0;
}

int tq_workspace_check_source(const char *name, const char *path, struct tq_err *err)
{
	struct stat st;

	if (*name == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0 || strlen(name) > NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "source \"%s\": the name must be a plain "
				  "file name (no '/')", name);
	if (reserved(name))
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
int tq_workspace_sources(const char *json, cJSON **out, struct tq_err *err)
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

int tq_workspace_write(int dfd, const char *name, const char *text, struct tq_err *err)
{
	return write_file(dfd, name, text, strlen(text), err);
}

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
static int take_over(const struct tq_ws_spec *s, int bfd, const char *name, struct tq_err *err)
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

/* files (a {NULL}-ended list, or NULL) into the workspace open as wfd; a
 * file "DIR/NAME" makes DIR first. */
static int write_files(int wfd, const struct tq_agent_file *files, struct tq_err *err)
{
	char dir[NAME_MAX + 1];
	int rc;

	for (const struct tq_agent_file *f = files; f != NULL && f->path != NULL; f++) {
		size_t k = strcspn(f->path, "/");

		if (f->path[k] == '/') {
			if (k >= sizeof(dir))
				return tq_err_set(err, TQ_EINVAL, "workspace: %s: name too long",
						  f->path);
			memcpy(dir, f->path, k);
			dir[k] = '\0';
			if (mkdirat(wfd, dir, 0700) < 0)
				return tq_err_sys(err, "workspace: mkdir %s", dir);
		}
		if ((rc = tq_workspace_write(wfd, f->path, f->text, err)) < 0)
			return rc;
	}
	return 0;
}

/* The files and links of a new workspace, open as wfd: every agent's files
 * whatever the task runs (a profile of the user's may run any CLI). */
static int ws_fill(const struct tq_ws_spec *s, int wfd, struct tq_err *err)
{
	const struct tq_agent_def *d;
	const cJSON *it;
	int rc;

	if (s->bare)
		return tq_workspace_write(wfd, TQ_WORKSPACE_OWNER, s->owner, err);
	if ((rc = tq_workspace_write(wfd, TQ_WORKSPACE_OWNER, s->owner, err)) < 0 ||
	    (rc = tq_workspace_write(wfd, TQ_WORKSPACE_PROMPT, s->prompt ? s->prompt : "",
				     err)) < 0 ||
	    (rc = write_files(wfd, ws_common, err)) < 0)
		return rc;
	for (size_t i = 0; (d = tq_registry_at(i)) != NULL; i++)
		if ((rc = write_files(wfd, d->ws_files, err)) < 0)
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
int tq_workspace_create(const struct tq_ws_spec *s, char *path, size_t n, dev_t *dev,
			ino_t *ino, struct tq_err *err)
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
char *tq_workspace_owner(const char *home, int64_t task, int attempt, pid_t pid, int64_t start)
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

/* The private directory of a run (its overlays), made on first need: a
 * workspace with only its owner file, so that the sweep removes one a
 * crash left behind. */
int tq_workspace_aux(struct tq_queue *q, const struct tq_task *t, struct tq_agent_run *ar,
		     int *dfd, struct tq_err *err)
{
	struct tq_ws_spec ws = { .q = q, .home = ar->home, .bare = 1 };
	char *owner = tq_workspace_owner(ws.home, t->id, t->attempt, 0, 0);
	int rc;

	if (owner == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	ws.owner = owner;
	rc = tq_workspace_create(&ws, ar->aux, sizeof(ar->aux), &ar->aux_dev, &ar->aux_ino, err);
	free(owner);
	if (rc < 0)
		return rc;
	if ((*dfd = tq_open(ar->aux, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "open %s", ar->aux);
	return 0;
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
