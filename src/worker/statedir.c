/*
 * statedir.c - the state directory as a long-running process found it (see
 * statedir.h).
 *
 * Why by a held descriptor: after `rm -rf` of the directory and a new one
 * made at the same path, a name looked up by path is the new directory's;
 * the same name looked up in the directory we hold is ours, or nothing.
 */
#include "statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"

int tq_statedir_open(struct tq_statedir *sd, const char *path, struct tq_err *err)
{
	struct stat st;

	*sd = (struct tq_statedir)TQ_STATEDIR_INIT;
	if (strlcpy(sd->path, path, sizeof(sd->path)) >= sizeof(sd->path))
		return tq_err_set(err, TQ_EINVAL, "state directory path is too long");
	if ((sd->fd = tq_open(path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return tq_err_sys(err, "open %s", path);
	if (fstat(sd->fd, &st) < 0) {
		int rc = tq_err_sys(err, "stat %s", path);
		tq_statedir_close(sd);
		return rc;
	}
	sd->dev = st.st_dev;
	sd->ino = st.st_ino;
	return 0;
}

int tq_statedir_check(const struct tq_statedir *sd, struct tq_err *err)
{
	struct stat held, now;

	if (sd->fd < 0)
		return 0;
	/* Removed, though something else may have been made at the path
	 * since: a removed directory has no links. */
	if (fstat(sd->fd, &held) == 0 && held.st_nlink == 0)
		return tq_err_set(err, TQ_ENOTFOUND, "state directory %s was removed",
				  sd->path);
	if (stat(sd->path, &now) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return 0;
		return tq_err_set(err, TQ_ENOTFOUND, "state directory %s was removed",
				  sd->path);
	}
	if (!S_ISDIR(now.st_mode))
		return tq_err_set(err, TQ_ENOTFOUND, "state directory %s was replaced by a "
				  "file that is not a directory", sd->path);
	if (now.st_dev != sd->dev || now.st_ino != sd->ino)
		return tq_err_set(err, TQ_ESTALE, "state directory %s was replaced by another "
				  "directory", sd->path);
	return 0;
}

int tq_statedir_note_fd(int fd, struct tq_file_id *id)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	*id = (struct tq_file_id){ 1, st.st_dev, st.st_ino };
	return 0;
}

int tq_statedir_remove_own(const struct tq_statedir *sd, const char *name,
			   const struct tq_file_id *id)
{
	struct stat st;

	if (sd->fd < 0 || !id->set)
		return 1;
	if (fstatat(sd->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (st.st_dev != id->dev || st.st_ino != id->ino)
		return 1;
	if (unlinkat(sd->fd, name, 0) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

void tq_statedir_close(struct tq_statedir *sd)
{
	tq_close(sd->fd);
	sd->fd = -1;
}
