/*
 * endrec.h - end records: the outcome of an attempt kept in a file when the
 * store cannot take it.
 *
 * Once a task's process has exited, its outcome must never be lost (nor
 * turned into `lost` by a recovery). When the worker cannot write the end
 * (the database is locked past the busy timeout, the disk is full), it
 * keeps everything tq_queue_finish needs in HOME/ends/TASK.ATTEMPT: written
 * to a temporary name, fsynced, renamed, the directory fsynced, mode 0600.
 * The record alone lets any process write the true end later, fenced by
 * task and attempt exactly as the worker's own finish is: the worker while
 * it retries, the supervisor's recovery of an expired lease or a dead
 * worker, a supervisor started later. The record is removed only after
 * the end is committed; a record whose attempt is already recorded is
 * simply removed.
 *
 * The format is text, binary-safe (strings are length-prefixed), and ends
 * with a checksum line over every byte before it: a record that is
 * truncated, damaged or of an unknown version is refused with TQ_ECORRUPT
 * and a message saying what is wrong, never trusted. See endrec.c.
 *
 * Nothing here touches the database; the CLI uses it to say that a task
 * that still reads `running` has ended and its end is being recorded.
 */
#ifndef TQ_ENDREC_H
#define TQ_ENDREC_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

#define TQ_ENDREC_DIR "ends"               /* in the state directory */
#define TQ_ENDREC_MAX (32 * 1024 * 1024)   /* bytes of one record */
#define TQ_ENDREC_RESERVE (64 * 1024)      /* room held for one on a full disk */

/*
 * An end record as read back. f points into the strings below (and at res
 * when has_result); everything is owned by the struct and freed by
 * tq_endrec_release.
 */
struct tq_endrec {
	struct tq_finish f;
	struct tq_result res;
	char *reason;
	char *pause_group;
	char *result;
	char *subtype;
	char *agent_session;
	char *model;
};

/* Free what r owns and zero it (a zeroed struct is fine). */
void tq_endrec_release(struct tq_endrec *r);

/*
 * Keep f (with f->result, if not NULL) durably as HOME/ends/TASK.ATTEMPT,
 * replacing an older record of the same attempt: the directory is created
 * (0700) if needed, the record written under a temporary name, fsynced,
 * renamed into place, and the directory fsynced, so after a return of 0 the
 * record survives a crash of any process and a power loss. Returns 0, or
 * TQ_ENOSPC, TQ_EIO, TQ_EPERM, TQ_EINVAL (a string longer than
 * TQ_ENDREC_MAX) with err naming the path and the call; nothing is left
 * behind on failure.
 */
int tq_endrec_write(const char *home, const struct tq_finish *f, struct tq_err *err);

/*
 * Room held for one record on the state directory's filesystem, for a
 * full disk (the very case in which the store refuses an end): an unnamed
 * file (O_TMPFILE) in HOME/ends of TQ_ENDREC_RESERVE bytes, really
 * allocated. HOME/ends is created (0700) if needed, so keeping a record
 * never needs a new directory either. *fd gets the file (the caller's;
 * its room goes back when it is closed or its process dies), -1 on failure
 * (TQ_ENOSPC, or TQ_EIO where the filesystem has no O_TMPFILE).
 */
int tq_endrec_reserve(const char *home, int *fd, struct tq_err *err);

/*
 * tq_endrec_write, and when that fails for want of room (TQ_ENOSPC) and
 * *reserve is a reserve (tq_endrec_reserve), the record is written into
 * the reserve's room instead and takes the record's name: the reserve is
 * used up (closed, *reserve -1), whether that worked or not. A record that
 * does not fit in the reserve goes without its agent result.
 */
int tq_endrec_keep(const char *home, const struct tq_finish *f, int *reserve,
		   struct tq_err *err);

/*
 * Read and check the record of (task, attempt) into r (zeroed first; release
 * it also after a failure). TQ_ENOTFOUND when there is none; TQ_ECORRUPT
 * when it is truncated, damaged (checksum), of another version, or names
 * another task or attempt than its file name, with err saying which.
 */
int tq_endrec_read(const char *home, int64_t task, int attempt, struct tq_endrec *r,
		   struct tq_err *err);

/* Remove the record of (task, attempt); none there is not an error. */
int tq_endrec_remove(const char *home, int64_t task, int attempt, struct tq_err *err);

/*
 * Move a record that could not be trusted out of the way, to
 * HOME/ends/TASK.ATTEMPT.damaged (kept for a person to look at; never read
 * again).
 */
int tq_endrec_set_aside(const char *home, int64_t task, int attempt, struct tq_err *err);

/* 1 if a record of (task, attempt) exists, else 0. Reads nothing. */
int tq_endrec_exists(const char *home, int64_t task, int attempt);

/* One record's name: which attempt it is the end of. */
struct tq_endrec_id {
	int64_t task;
	int attempt;
};

/*
 * The records in HOME/ends (names of the form TASK.ATTEMPT only; temporary
 * and set-aside files are skipped), at most max of them. *list is malloc'd
 * (NULL when there are none, or no directory).
 */
int tq_endrec_list(const char *home, size_t max, struct tq_endrec_id **list, size_t *n,
		   struct tq_err *err);

#endif
