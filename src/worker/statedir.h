/*
 * statedir.h - the state directory as a long-running process found it.
 *
 * A supervisor holds its state directory open and compares it, now and
 * then, with what the path names: when the directory was removed (rm -rf)
 * or another one now has its path (removed and made again, renamed aside),
 * it is no longer the supervisor of anything a user can reach, and stops.
 * And it removes only the files it made itself (the same file, by device
 * and inode, as when it made it), through the directory it holds: never
 * those of a supervisor that started in a new directory of the same path.
 */
#ifndef TQ_STATEDIR_H
#define TQ_STATEDIR_H

#include <limits.h>
#include <sys/types.h>

#include "common/err.h"

struct tq_statedir {
	int fd;                  /* the directory, held open */
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];
};

#define TQ_STATEDIR_INIT { -1, 0, 0, "" }

/* A file's identity, to remove it later only if it is still that file. */
struct tq_file_id {
	int set;
	dev_t dev;
	ino_t ino;
};

#define TQ_FILE_ID_INIT { 0, 0, 0 }

/*
 * Open the directory at path and note its identity. Returns 0, or a TQ_E*
 * code with err set (sd->fd stays -1).
 */
int tq_statedir_open(struct tq_statedir *sd, const char *path, struct tq_err *err);

/*
 * Is the path still the directory we hold? 0 if so; TQ_ENOTFOUND when
 * nothing (or no directory) is there, or the one we hold was removed;
 * TQ_ESTALE when another directory has the path; err says which, in words.
 * An error of stat itself other than ENOENT (EACCES, EIO) is 0: not proof
 * that the directory went.
 */
int tq_statedir_check(const struct tq_statedir *sd, struct tq_err *err);

/* Note the identity of the open file fd (one we just made). 0 or -1. */
int tq_statedir_note_fd(int fd, struct tq_file_id *id);

/*
 * Remove name from the directory we hold if it is still the file id
 * names. Returns 0 when removed or already gone, 1 when another file now
 * has the name (left alone), -1 with errno on failure.
 */
int tq_statedir_remove_own(const struct tq_statedir *sd, const char *name,
	const struct tq_file_id *id);

/* Close the directory. Safe twice. */
void tq_statedir_close(struct tq_statedir *sd);

#endif
