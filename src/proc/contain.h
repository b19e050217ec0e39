/*
 * contain.h - knowing every process of a task attempt the way the kernel
 * does, so that nothing the task started outlives it, even when its worker
 * and the supervisor die together and a descendant has left the task's
 * session and cleared its environment (which the marks of proc.h, found in
 * environments, cannot reach).
 *
 * Two ways, and the machine decides which (tq_cgroup_probe, once per
 * process):
 *
 *   cgroup  a cgroup v2 group (cgroup.h), the worker's, kept for its
 *           attempts and seen empty between two (or one per attempt, once
 *           the worker's would not empty): the task's process is started in
 *           it, and all it ever starts stays in it. The end of the attempt,
 *           or its recovery, is one cgroup.kill.
 *   tree    where no cgroup is delegated to us: the attempt's process tree,
 *           pid and start time of every descendant of the worker (it runs
 *           one task; as a subreaper it keeps every orphan of it), which the
 *           worker writes at the spawn and then keeps current (below).
 *           Recovery stops each process it names that is still that process,
 *           then their children, and kills them all.
 *
 * Either way the worker keeps the record in a file of its own in the state
 * directory, HOME/procs/w<pid>.<start> (0600; made when the worker starts,
 * removed when it stops; "taskq-procs 2 idle" while it runs nothing, never
 * empty, so that it keeps its block and a record that fits is written even
 * on a full disk):
 *
 *     taskq-procs 2 <task> <attempt> <seq> cgroup    taskq-procs 2 ... tree
 *     /sys/fs/cgroup/.../taskq....                   <pid> <start time>
 *     end <seq>                                      ...
 *                                                    end <seq>
 *
 * rewritten in place (one pwrite, never cut: a reader stops at the end
 * line, or after "idle", and what a longer record before left beyond it is
 * never read; sequence numbers never repeat in a file) when it changes,
 * and marked idle again once the attempt's processes are gone. In place,
 * not a new file renamed over the old: a new inode an attempt is what made
 * a record cost most on a busy ext4 (measured: inode allocation was 40% of a `true`
 * task's CPU there, with the two files of its log; a third per attempt cost
 * a third more). A worker killed in the middle of a write longer than a
 * page can leave a new head on an old tail (the kernel checks for a fatal
 * signal between pages, not within one); the sequence number in the head
 * and in the "end" line tells, and such a record is refused (recovery then
 * has the marks). Recovery (tq_contain_recover) finds an attempt's record
 * among the files, kills what it names and removes the dead worker's file;
 * the supervisor's housekeeping (tq_contain_sweep) does the same for files
 * of dead workers whose attempt no longer runs, and for groups whose
 * attempt ended (a crash between the end and the removal). The file is not
 * synced: it matters while the machine runs; after a reboot its processes
 * are gone anyway.
 *
 * The tree's cadence: a task's tree changes most just after it starts (a
 * shell starts its pipeline, an agent its tool processes), so the worker
 * looks again TQ_CONTAIN_SCAN_MIN_MS after the spawn and then at doubling
 * intervals up to TQ_CONTAIN_SCAN_MAX_MS, back to the shortest whenever the
 * tree changed. A look costs a few /proc reads per process (tens of
 * microseconds for a tree of ten); the file is rewritten only when the tree
 * changed. What a double crash can miss is a process started within the
 * last interval whose parent also exited within it; the marks of proc.h
 * still cover those that kept their environment.
 */
#ifndef TQ_CONTAIN_H
#define TQ_CONTAIN_H

#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "common/err.h"
#include "proc.h"

/* The directory of the records, inside the state directory. */
#define TQ_CONTAIN_DIR "procs"
#define TQ_CONTAIN_SCAN_MIN_MS 10
#define TQ_CONTAIN_SCAN_MAX_MS 1000
/* Largest record we write or read back: every pid of a full tree, or a
 * path, with the head and the end. */
#define TQ_CONTAIN_RECORD_MAX (TQ_PROC_TREE_MAX * 48 + PATH_MAX + 128)
#define TQ_CONTAIN_NEVER INT64_MAX

enum tq_contain_kind {
	TQ_CONTAIN_NONE = 0,         /* not begun, or ended */
	TQ_CONTAIN_CGROUP,
	TQ_CONTAIN_RECORD,           /* the process tree */
};

/* A worker's record file, HOME/procs/w<pid>.<start>, and the group it
 * keeps for its attempts. */
struct tq_contain_file {
	int dirfd;                   /* HOME/procs */
	int fd;                      /* the file, read-write; -1: none */
	char name[48];
	struct tq_cgroup cg;         /* the worker's group, once made */
	int cg_state;                /* 0: none yet; 1: made; -1: a group per attempt */
};

#define TQ_CONTAIN_FILE_INIT { -1, -1, "", TQ_CGROUP_INIT, 0 }

/* One attempt's containment, kept by the worker that runs it. */
struct tq_contain {
	enum tq_contain_kind kind;
	struct tq_contain_file *file; /* the worker's, borrowed; NULL: none */
	int fd;                      /* its record file; -1: none */
	int64_t task;
	int attempt;
	uint64_t seq;                /* of the last record written */
	struct tq_cgroup cg;         /* cgroup: a group of its own, or unused */
	int kept;                    /* cgroup: in file->cg, the worker's */
	struct tq_proc_id *ids;      /* tree: as last written */
	size_t nids;
	int64_t next_scan;           /* tree: mono ms, or TQ_CONTAIN_NEVER */
	int64_t every;               /* tree: the current interval */
	int filed;                   /* the file holds this attempt's record */
	int failed;                  /* a write failed (said once) */
};

#define TQ_CONTAIN_INIT { TQ_CONTAIN_NONE, NULL, -1, 0, 0, 0, TQ_CGROUP_INIT, 0, NULL, 0, \
	TQ_CONTAIN_NEVER, 0, 0, 0 }

/*
 * Make HOME/procs (0700) if needed and open it (O_DIRECTORY | O_NOFOLLOW:
 * a symlink there is refused). Returns the fd, or a TQ_E* code.
 */
int tq_contain_dir(const char *home, struct tq_err *err);

/*
 * Make the calling worker's record file, idle, in HOME/procs. Returns 0,
 * or a TQ_E* code with err set (f stays closed: its tasks then run without
 * a record, and recovery has the marks).
 */
int tq_contain_file_open(struct tq_contain_file *f, const char *home, struct tq_err *err);

/* The worker stops with nothing running: remove its file and its group.
 * Safe twice. */
void tq_contain_file_close(struct tq_contain_file *f);

/*
 * Begin the containment of (task, attempt), before the spawn: with a usable
 * b, write the record naming its group, then make the group if it is not
 * made (the worker's, kept in f between attempts; or the attempt's own)
 * (give tq_contain_cgroup_fd to the child); otherwise, or if either fails,
 * the tree (its record is written at tq_contain_spawned). f is the
 * worker's (tq_contain_file_open), whose fd may be -1: no record file
 * (recovery then has the marks). Returns 0; or a TQ_E* code with err set
 * when the cgroup could not be had or the record not written: a note for
 * the log, c is still in use (on the tree).
 */
int tq_contain_begin(struct tq_contain *c, const struct tq_cgroup_base *b,
	struct tq_contain_file *f, int64_t task, int attempt, struct tq_err *err);

/* The group's directory for tq_child.cgroup_fd, or -1. */
int tq_contain_cgroup_fd(const struct tq_contain *c);

/*
 * The spawn could not put the child into its group (tq_child.join_failed):
 * drop the group, go on with the tree, and mark b unusable (with why) so
 * that this worker's later attempts do not try again. Spawn again with no
 * cgroup_fd. Returns 0.
 */
int tq_contain_join_failed(struct tq_contain *c, struct tq_cgroup_base *b,
	const struct tq_err *why);

/* The task's process (pid, start time) runs, at monotonic time now: the
 * tree's first record is written and its first look scheduled. */
void tq_contain_spawned(struct tq_contain *c, pid_t pid, int64_t start, int64_t now);

/* When the next look at the tree is due (mono ms), or TQ_CONTAIN_NEVER. */
int64_t tq_contain_deadline(const struct tq_contain *c);

/*
 * At or after the deadline: look at the tree again and rewrite the record
 * if it changed. Returns 0, or a TQ_E* code with err set the first time a
 * write fails (later failures are quiet; the old record stays).
 */
int tq_contain_tick(struct tq_contain *c, int64_t now, struct tq_err *err);

/*
 * The task's main process has exited: SIGKILL whatever is left in its
 * group at once (cgroup; the tree has nothing to add to the caller's
 * sweep). Call before tq_proc_sweep, which then reaps them.
 * Returns 0 or a TQ_E* code with err set.
 */
int tq_contain_kill(struct tq_contain *c, struct tq_err *err);

/*
 * After the sweep: wait for the group to empty (and remove an attempt's
 * own; the worker's stays for its next attempt), mark the record file
 * idle, free what c holds; c is TQ_CONTAIN_NONE after, and a second call
 * does nothing. *killed (may be NULL) gets the processes the group still
 * held. Returns 0 or a TQ_E* code with err set (a group that would not go
 * keeps its record, for the supervisor's housekeeping; the worker's that
 * would not empty is left until the worker stops, and its later attempts
 * get a group each).
 */
int tq_contain_end(struct tq_contain *c, size_t *killed, struct tq_err *err);

/*
 * Recovery of an attempt whose worker is gone: find its record among the
 * files in dirfd (HOME/procs), kill what it names (its group, or its tree,
 * checked by start time), remove the group, and remove the file if its
 * worker is dead. *kind (may be NULL) gets which the record named, *killed
 * (may be NULL) how many processes were killed. Returns 0; TQ_ENOTFOUND
 * when no file holds its record; other TQ_E* with err set.
 */
int tq_contain_recover(int dirfd, int64_t task, int attempt,
	enum tq_contain_kind *kind, size_t *killed, struct tq_err *err);

/*
 * Housekeeping. The files of dead workers in dirfd (may be -1): one that is
 * empty or does not parse is removed; one whose attempt live(task,
 * attempt, arg) says no longer runs is recovered and removed; one whose
 * attempt still runs is left to that attempt's recovery. And every group
 * of b (may be NULL) whose attempt no longer runs. *n (may be NULL) gets
 * how many records and groups of ended attempts were cleaned up, *killed
 * (may be NULL) how many processes were killed. Returns 0 or the last
 * TQ_E* code met (the rest is still done).
 */
int tq_contain_sweep(int dirfd, const struct tq_cgroup_base *b,
	int (*live)(int64_t task, int attempt, void *arg), void *arg,
	size_t *n, size_t *killed, struct tq_err *err);

/* "cgroup v2 (PATH)" or "process-tree record (WHY)": what attempts get
 * here, for status and the log. */
void tq_contain_describe(const struct tq_cgroup_base *b, char *buf, size_t n);

#endif
