/*
 * cgroup.h - a cgroup v2 group for a task's processes, where the machine
 * delegates one to us: the kernel's own list of a task's processes, which no
 * setsid, double fork or cleared environment leaves, and one write that
 * kills them all (cgroup.kill).
 *
 * Where: under the cgroup the calling process is in (/proc/self/cgroup,
 * "0::PATH", on the cgroup2 mount found in /proc/self/mountinfo), and only
 * when that cgroup belongs to our uid and we may write it: a systemd unit
 * with Delegate=yes, a `systemd-run --user --scope -p Delegate=yes`, or
 * root's own. A worker keeps one group for its attempts, one at a time,
 * emptied and seen empty between two (tq_cgroup_empty), named
 *
 *     taskq.<dev>.<ino>.w<pid>.<start>
 *
 * after the worker (its pid and start time, as its record file): a group
 * made, opened and removed an attempt cost 7 system calls and ~100 us of
 * CPU here (mkdir 47, rmdir 26, the opens and reads 32 us), 4-5 % of all
 * the CPU of a drain of `true` tasks.
 * A group that took a kill (an attempt left processes) is removed and made
 * anew for the next attempt: on Linux 6.18 here every child cloned into a
 * group after its cgroup.kill was SIGKILLed at birth (the kill's sequence
 * number is compared with the parent's group's, not the new one's). Where
 * the group would not empty (a process the kill cannot end), the worker
 * goes on with a group per attempt, named
 *
 *     taskq.<dev>.<ino>.<task>.<attempt>
 *
 * (<dev>.<ino>: the state directory's, so two queues sharing a cgroup never
 * touch each other's groups). Both sit directly in that cgroup; a worker's
 * is removed when it stops, an attempt's when it ends, and what a crash
 * left by recovery or the housekeeping (tq_cgroup_sweep). No controller is ever enabled (we need
 * none), so cgroup v2's rule that a group with controllers for its children
 * holds no processes never applies: the worker stays where it is, beside
 * its tasks' groups.
 *
 * The task's process is started in its group (clone3 with
 * CLONE_INTO_CGROUP), or joins it before it execs, and so before it can
 * fork (spawn.h, tq_child.cgroup_fd); nothing it starts is ever outside.
 *
 * Not here: which path an attempt uses and the record recovery reads
 * (contain.h), spawning (spawn.c).
 */
#ifndef TQ_CGROUP_H
#define TQ_CGROUP_H

#include <limits.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* "0" here forces the process-tree record even where a cgroup could be had
 * (to test that path, or to keep taskq out of a cgroup tree you manage);
 * unset or any other value: use a cgroup when the machine allows. */
#define TQ_CGROUP_VAR "TASKQ_CGROUP"
/* How long to wait for a killed group to empty before giving up on it
 * (the next housekeeping tries again). */
#define TQ_CGROUP_EMPTY_WAIT_MS 5000
/* Task groups a task may nest inside its own group: deeper is not removed. */
#define TQ_CGROUP_DEPTH_MAX 32
/* Name prefix of every group taskq makes. */
#define TQ_CGROUP_PREFIX "taskq."

/* Where this process may make task groups, found once (tq_cgroup_probe). */
struct tq_cgroup_base {
	int usable;                 /* 1: attempts get a group under dir */
	int fd;                     /* dir, held open; -1 when !usable */
	char dir[PATH_MAX];         /* our cgroup, as a directory */
	char prefix[64];            /* "taskq.<dev>.<ino>." of the state directory */
	char why[TQ_ERR_MAX];       /* !usable: why not, for people */
};

/*
 * Find out whether attempts can have cgroups here, for the state directory
 * home: honours TASKQ_CGROUP=0, finds the cgroup2 mount and our cgroup,
 * checks its owner and mode, and makes and removes a probe group in it.
 * Never fails: b->usable says, b->why says why not. Returns b->usable.
 * Release with tq_cgroup_base_release.
 */
int tq_cgroup_probe(struct tq_cgroup_base *b, const char *home);

/* Close what b holds; b is unusable after. Safe twice. */
void tq_cgroup_base_release(struct tq_cgroup_base *b);

/* Mark b unusable, with why (printf-style) for people. */
void tq_cgroup_unusable(struct tq_cgroup_base *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The path of (task, attempt)'s group under b into buf: 0, or -1 when it
 * does not fit in n bytes. */
int tq_cgroup_path(const struct tq_cgroup_base *b, int64_t task, int attempt,
	char *buf, size_t n);

/* The path of the group worker (pid, start) keeps under b, likewise. */
int tq_cgroup_worker_path(const struct tq_cgroup_base *b, pid_t pid, int64_t start,
	char *buf, size_t n);

/* The group of one attempt, made by tq_cgroup_create. */
struct tq_cgroup {
	char path[PATH_MAX];
	char name[96];              /* in the base's directory */
	int basefd;                 /* the base's, borrowed */
	int dir_fd;                 /* its directory: where a child is started */
	int events_fd;              /* its cgroup.events */
	int killed;                 /* a kill was written to it (tq_cgroup_kill_group) */
};

#define TQ_CGROUP_INIT { "", "", -1, -1, -1, 0 }

/*
 * Make the group of (task, attempt) under b (one left by an earlier run of
 * the same attempt number is emptied and made again) and open its
 * directory, which the task's process is started in (tq_child.cgroup_fd). Returns 0; TQ_EINVAL if b is not usable; TQ_EIO,
 * TQ_EPERM... with err set, and then nothing is left made.
 */
int tq_cgroup_create(const struct tq_cgroup_base *b, int64_t task, int attempt,
	struct tq_cgroup *cg, struct tq_err *err);

/* The same for the group worker (pid, start) keeps for its attempts. */
int tq_cgroup_create_worker(const struct tq_cgroup_base *b, pid_t pid, int64_t start,
	struct tq_cgroup *cg, struct tq_err *err);

/*
 * Empty cg's group for the next attempt, and keep it: kill what is still in
 * it and wait for it to empty (TQ_CGROUP_EMPTY_WAIT_MS at most); one read
 * of its cgroup.events when it is empty already. *killed (may be NULL) gets
 * how many processes it still held. Groups a task made inside stay until
 * the group goes (tq_cgroup_end). Returns 0 when empty; TQ_EBUSY when it
 * did not empty in time; other TQ_E* with err set.
 */
int tq_cgroup_empty(struct tq_cgroup *cg, size_t *killed, struct tq_err *err);

/*
 * SIGKILL whatever is still in cg's group (as tq_cgroup_kill), without
 * waiting. Returns 0 or a TQ_E* code with err set.
 */
int tq_cgroup_kill_group(struct tq_cgroup *cg, struct tq_err *err);

/*
 * The end of an attempt's group: kill what is still in it, wait for it to
 * empty (TQ_CGROUP_EMPTY_WAIT_MS at most), remove it, and close what cg
 * holds. *killed (may be NULL) gets how many processes it still held.
 * Returns 0 (also for a cg never made, and a second time); TQ_EBUSY when it
 * did not empty in time (then it stays, for the supervisor's housekeeping);
 * other TQ_E* with err set.
 */
int tq_cgroup_end(struct tq_cgroup *cg, size_t *killed, struct tq_err *err);

/*
 * SIGKILL every process in the group at path and its subgroups: one write
 * of "1" to cgroup.kill (Linux 5.14), else tq_cgroup_kill_procs. Nothing to
 * do (0) when the group is already empty or gone. Does not wait.
 * Returns 0, or a TQ_E* code with err set.
 */
int tq_cgroup_kill(const char *path, struct tq_err *err);

/*
 * The fallback for kernels without cgroup.kill: freeze the group where
 * cgroup.freeze exists, then SIGKILL each pid its cgroup.procs (and its
 * subgroups') lists, through a pidfd and after checking in /proc/PID/cgroup
 * that the process is still a member, until none is listed.
 * *killed (may be NULL) gets how many. Returns 0 or a TQ_E* code.
 */
int tq_cgroup_kill_procs(const char *path, size_t *killed, struct tq_err *err);

/*
 * The end of a group: kill what is in it (tq_cgroup_kill), wait until
 * cgroup.events says "populated 0" (TQ_CGROUP_EMPTY_WAIT_MS at most), and
 * remove it with its subgroups. *killed (may be NULL) gets how many
 * processes were still in it. A group already gone is success. Returns 0;
 * TQ_EBUSY if it did not empty in time (it is left for a later try);
 * TQ_EINVAL if path is not a taskq group on a cgroup2 file system (nothing
 * done: recovery reads paths back from files); other TQ_E* with err set.
 */
int tq_cgroup_destroy(const char *path, size_t *killed, struct tq_err *err);

/*
 * Groups of b's state directory in b->dir that a crash left: an attempt's
 * whose attempt live() says has ended, a worker's that keep_worker() says
 * is not to be kept, destroyed (emptied, removed). live(task, attempt, arg)
 * returns 1 for an attempt that still runs; keep_worker(pid, start, arg) 1
 * for a worker that runs, or whose record still names an attempt that does
 * (recovery's to end). *removed (may be NULL) gets how many groups were
 * removed. Returns 0 or a TQ_E* code with err set (the rest is still
 * tried).
 */
int tq_cgroup_sweep(const struct tq_cgroup_base *b,
	int (*live)(int64_t task, int attempt, void *arg),
	int (*keep_worker)(pid_t pid, int64_t start, void *arg), void *arg,
	size_t *removed, struct tq_err *err);

#endif
