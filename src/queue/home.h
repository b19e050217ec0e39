/*
 * home.h - the state directory, the local node's: where it is and the
 * checks that make it taskq's and private. The sockets, ends/, procs/ and
 * the SQLite store's files live in it, whatever the store; a caller that
 * needs it keeps the path it resolved (the store does not hand it back).
 * No SQL, no store.
 */
#ifndef TQ_QUEUE_HOME_H
#define TQ_QUEUE_HOME_H

#include <stddef.h>
#include <sys/stat.h>

#include "common/err.h"

/* The SQLite store's database in a state directory. Named here because a
 * directory holding it is taskq's (tq_home_prepare takes it as its own). */
#define TQ_HOME_DB_NAME "taskq.db"

/*
 * Resolve the state directory: flag (--home) if not NULL, else $TASKQ_HOME,
 * else $XDG_STATE_HOME/taskq, else $HOME/.local/state/taskq. The result is
 * absolute and canonical: every symbolic link in it resolved (a path that
 * does not exist yet: its deepest existing ancestor), so every process that
 * resolves it names one path. Returns 0, TQ_EINVAL (no HOME, too long), or
 * TQ_EPERM when the state directory itself is a symbolic link owned by
 * someone other than you or root.
 */
int tq_home_resolve(const char *flag, char *buf, size_t n, struct tq_err *err);

/* Which of those chose the state directory, for messages: "--home",
 * "TASKQ_HOME", "XDG_STATE_HOME", "the default, ~/.local/state/taskq" (or
 * "none"). A static string. */
const char *tq_home_source(const char *flag);

/*
 * The checks opening the store makes of the state directory, creating
 * nothing: it exists, is a directory, is yours, no one else can write to
 * it, and its logs/ (if there) is a directory, not a symbolic link. Returns
 * 0, or TQ_ENOTFOUND, TQ_EINVAL, TQ_EPERM with the message tq_queue_open
 * would give.
 */
int tq_home_check(const char *home, struct tq_err *err);

/* Make a path canonical as tq_home_resolve does (an absolute one: its links
 * resolved) and check that it fits TQ_HOME_PATH_MAX. 0 or TQ_EINVAL,
 * TQ_EPERM. */
int tq_home_canonical(char *buf, size_t n, struct tq_err *err);

/* What tq_home_prepare made, for tq_home_unmake. */
enum { TQ_HOME_MADE_DIR = 1 << 0, TQ_HOME_MADE_LOGS = 1 << 1 };
/* tq_home_prepare's flags. */
enum { TQ_HOME_NOCREATE = 1 << 0 }; /* create nothing: TQ_ENOTFOUND */

/*
 * Create (unless TQ_HOME_NOCREATE) and check the state directory home, as
 * opening a store in it does: a directory owned by you, not writable by
 * group or others, whose logs/ is a directory and not a symbolic link. An
 * existing directory that is not taskq's (it holds no TQ_HOME_DB_NAME and
 * names taskq does not keep) is never changed. One readable by others is
 * made 0700 and said in *note (malloc'd, appended to), when note is not
 * NULL. *made (may be NULL) gets the TQ_HOME_MADE_* of what it created.
 */
int tq_home_prepare(const char *home, unsigned flags, int *made, char **note,
		    struct tq_err *err);

/* Take back what tq_home_prepare made (rmdir: only while empty, so never
 * what another process has put there since). */
void tq_home_unmake(const char *home, int made);

/*
 * This node's name, for what it registers in the store (its workers, their
 * attempts) and what its recovery may act on: $TASKQ_NODE when set (a test
 * runs two "nodes" on one machine and one state directory with it; issue
 * 20's --node), else the host name: a node is a machine, whichever state
 * directory or database it uses, and the host name is what a user reading
 * `status` knows it by (a node id kept in the state directory would make
 * two state directories of one machine two nodes, and would be lost with
 * the directory). 1 to TQ_NODE_MAX bytes of letters, digits, '.', '-' and
 * '_'. Returns 0, or TQ_EINVAL naming TASKQ_NODE when it is not such a
 * name, or the error of gethostname.
 */
#define TQ_NODE_VAR "TASKQ_NODE"
int tq_node_self(char *buf, size_t n, struct tq_err *err);

/* Take group and others' bits off path (lstat'ed as sb, yours), through an
 * fd opened O_NOFOLLOW. 1 when it changed the mode, else 0. */
int tq_home_tighten(const char *path, const struct stat *sb);

/* Append "WHAT PATH 0755 -> 0700" to *note (see tq_home_prepare). */
void tq_home_note_tightened(char **note, const char *what, const char *path, mode_t mode);

#endif
