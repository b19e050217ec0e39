#!/usr/bin/env python3
"""bench/syscounts.py - what one traced run cost, in counts that do not
depend on the machine's speed.

    syscounts.py [--skip-root] [--program NAME] TRACE PER

TRACE is the output of `strace -f -y -qq -o TRACE CMD` (every process CMD
started, each fd's path shown); PER is how many units (tasks, submits) the
run did. Prints one line per figure, "name value", each a count per unit
(two decimals):

  syscalls        every system call of the taskq processes (up to each
                  child's exec of another program: what spawning costs is
                  taskq's, what the task itself does after its exec is not)
  task_syscalls   the system calls of the programs taskq ran, after their exec
  wal_frames      pages written to the WAL (pwrite64 of a page to *-wal;
                  SQLite writes each frame's 24-byte header separately, not
                  counted)
  wal_room        writes of zeros ahead of the WAL's frames (the submit
                  socket's wal_make_room: 64 KiB each), not frames
  wal_grows       commits whose frames made the WAL file longer (an
                  fsync of the WAL after a write past the greatest end
                  written to it in the trace; such an fdatasync also
                  commits the file's size, ~2x the cost of one that does
                  not)
  db_pages        pages written to the database file (checkpoints)
  syncs           fsync + fdatasync, of any file
  wal_syncs       fsync + fdatasync of the WAL and the database file
  shm_locks       fcntl locks taken or released on *-shm (WAL-index locks)
  db_locks        fcntl locks on the database file
  db_preads       pread64 of the database file and the WAL
  sys_NAME        each system call's own count (taskq processes), for every
                  call made at least once per 10 units

--program NAME: taskq's binary (a basename matched against each execve;
default taskq): a process that execs anything else is a task from then on.
--skip-root: leave out the first process of the trace (bench/repeat, which
runs the commands counted), and what each of its children does before its
exec of the program (posix_spawn's own work in the child: resetting every
signal's disposition, 120-odd calls, is bench/repeat's, not the client's).
"""
import collections
import os
import re
import sys

LINE = re.compile(r'^(\d+)\s+(.*)$')
CALL = re.compile(r'^([a-z_0-9]+)\((.*)$')
RESUMED = re.compile(r'^<\.\.\. ([a-z_0-9]+) resumed>(.*)$')
FD_PATH = re.compile(r'^\d+<([^>]*)>')
RET = re.compile(r'\)\s+=\s+(-?\d+|\?)')
EXEC = re.compile(r'^"([^"]*)"')
PWRITE_AT = re.compile(r', (\d+), (\d+)\)\s+=\s+\d+$')
ZEROS = re.compile(r'^\d+<[^>]*>, "(\\0)+"(\.\.\.)?,')
WAL_END = {}                # WAL path -> the greatest end written to it
WAL_GREW = set()            # WAL paths written past that end since a sync


def main(argv):
    program, skip_root, args = "taskq", False, argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--skip-root":
            skip_root = True
            args = args[1:]
        elif args[0] == "--program" and len(args) > 1:
            program = args[1]
            args = args[2:]
        else:
            break
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, per = args[0], float(args[1])
    root = None
    pending = {}            # pid -> the first half of an unfinished call
    task = set()            # pids that exec'd another program
    started = set()         # --skip-root: pids that exec'd the program
    calls = collections.Counter()
    c = collections.Counter()
    with open(path, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, rest = int(m.group(1)), m.group(2)
            if root is None:
                root = pid
            if skip_root and pid == root:
                continue
            if skip_root and pid not in started:
                # a child of bench/repeat before its exec: not counted;
                # the exec of the program starts what is
                ex = CALL.match(rest)
                if not (ex and ex.group(1) == "execve"):
                    continue
                e = EXEC.match(ex.group(2))
                if not (e and os.path.basename(e.group(1)) == program):
                    continue
                started.add(pid)
            if rest.startswith("+++") or rest.startswith("---"):
                continue
            r = RESUMED.match(rest)
            if r:
                head = pending.pop(pid, None)
                if head is None:
                    continue
                name, args = head[0], head[1] + r.group(2)
            else:
                cm = CALL.match(rest)
                if not cm:
                    continue
                name, args = cm.group(1), cm.group(2)
                if args.endswith("<unfinished ...>"):
                    pending[pid] = (name, args[:-len("<unfinished ...>")])
                    # counted now, so a call that never returns (exit) counts
                    count(name, args, pid, task, calls, c, program, partial=True)
                    continue
            count(name, args, pid, task, calls, c, program, partial=False,
                  resumed=r is not None)
    out = {"syscalls": sum(calls.values()), "task_syscalls": c["task"]}
    for k in ("wal_frames", "wal_room", "wal_grows", "db_pages", "syncs",
              "wal_syncs", "shm_locks", "db_locks", "db_preads"):
        out[k] = c[k]
    for k, v in sorted(calls.items(), key=lambda kv: -kv[1]):
        if v * 10 >= per:
            out["sys_" + k] = v
    for k, v in out.items():
        print(f"{k} {v / per:.2f}")
    return 0


def count(name, args, pid, task, calls, c, program, partial, resumed=False):
    """One call: counted once, when its first half is seen (not resumed);
    sorted by file and result once its result is seen (not partial)."""
    if not resumed:
        if pid in task:
            c["task"] += 1
        else:
            calls[name] += 1
    if partial or pid in task:
        return
    fd = FD_PATH.match(args)
    fpath = fd.group(1) if fd else ""
    ret = RET.search(args)
    rv = ret.group(1) if ret else "?"
    if name == "execve":
        e = EXEC.match(args)
        if e and rv == "0" and os.path.basename(e.group(1)) != program:
            task.add(pid)
        return
    is_wal = fpath.endswith("-wal")
    is_db = fpath.endswith(".db")
    if name == "pwrite64" and is_wal:
        at = PWRITE_AT.search(args)
        if at:
            end = int(at.group(2)) + int(at.group(1))
            if end > WAL_END.get(fpath, 0):
                if fpath in WAL_END:
                    WAL_GREW.add(fpath)
                WAL_END[fpath] = end
    if name == "pwrite64" and rv.isdigit() and int(rv) >= 512:
        if is_wal and rv == "65536" and ZEROS.match(args):
            c["wal_room"] += 1
            WAL_GREW.discard(fpath)
        elif is_wal:
            c["wal_frames"] += 1
        elif is_db:
            c["db_pages"] += 1
    elif name in ("fsync", "fdatasync"):
        c["syncs"] += 1
        if is_wal or is_db:
            c["wal_syncs"] += 1
        if is_wal and fpath in WAL_GREW:
            WAL_GREW.discard(fpath)
            c["wal_grows"] += 1
    elif name == "fcntl" and "SETLK" in args:
        if fpath.endswith("-shm"):
            c["shm_locks"] += 1
        elif is_db:
            c["db_locks"] += 1
    elif name == "pread64" and (is_wal or is_db):
        c["db_preads"] += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
