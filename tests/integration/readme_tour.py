#!/usr/bin/env python3
"""readme_tour.py - run the README's console examples and compare their output.

    readme_tour.py TASKQ_BIN README.md            check: exit 1 on a difference
    readme_tour.py TASKQ_BIN README.md --write    rewrite the blocks with what
                                                  the binary printed

A console block is checked when the line before it (blank lines aside) is an
HTML comment `<!-- tour: SESSION [unordered] -->`; other blocks are left
alone. The blocks of one SESSION run in order, in one fresh directory made by
that session's setup below (SETUPS), as `$ COMMAND` lines through bash, in a
small environment (env -i style: PATH, HOME, LANG, TASKQ_HOME,
TASKQ_AUTOSTART), from DIR/project, with stdout and stderr on one pipe in the
order written. `$?` in a command is the previous command's exit status.

Output is compared after normalising what changes from run to run (times,
durations, pids, ids of agent sessions, the temporary directory, which reads
/tmp/demo in the README) and collapsing runs of blanks, so that column widths
do not matter. A line `...` in the README stands for any number of lines.
`unordered`: each command's lines are compared as a sorted list, and which
worker printed them is not compared (the interleaved logs of two workers).
`settle`: a command whose output does not match yet is run again, for up
to SETTLE_S seconds, until it does (a read such as `taskq status` while the
workers a supervisor just started register); mark only blocks of reads so.

The session "nodes" needs a PostgreSQL store: TASKQ_DB from the
environment (the PostgreSQL pass sets it, a schema of the test's own), else
its blocks are skipped. With --only SESSION, only that session's blocks run.

Every process a session starts is stopped at its end (`taskq shutdown --now`,
then any process whose environment names the session's state directory).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SHOWN_ROOT = "/tmp/demo"          # what the README shows for the directory
CMD_TIMEOUT = 120                 # seconds a command may take
SETTLE_S = 30                     # seconds a `settle` block's command may take to match

SANITIZER_VAR = re.compile(r'^\s*"(ASAN|UBSAN|LSAN)_OPTIONS=')
ENV_COUNT = re.compile(r"^(environment:\s+)(\d+) variables")
MARK = re.compile(r"^<!--\s*tour:\s*([\w-]+)((?:\s+\w+)*)\s*-->\s*$")

NORMS = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?"), "<TIME>"),
    (re.compile(r"\b\d{13}\b"), "<MS>"),                     # epoch ms in JSON
    (re.compile(r'"(\w+_(?:ms|at))":\d+'), r'"\1":<N>'),       # "runtime_ms":17
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<UUID>"),
    (re.compile(r"\b(pid|pids|PID) \d+"), r"\1 <N>"),
    (re.compile(r"\(pid \d+\)"), "(pid <N>)"),
    (re.compile(r"\bwarm process \d+"), "warm process <N>"),    # sessions close
    (re.compile(r"\bon node [\w.-]+"), "on node <NODE>"),       # the host's name
    (re.compile(r"\b\d+(\.\d+)?(ms|us|s)\b"), "<DUR>"),       # 17ms 1.5s
    (re.compile(r"\b\d+m\d\ds\b"), "<DUR>"),                  # 3m05s
    (re.compile(r"\$\d+\.\d+"), "$<COST>"),
    # how a machine contains task processes (a cgroup where one is
    # delegated, else a record): the README shows one, any matches
    (re.compile(r"contained by (cgroup v2|process-tree record) \(.*\)"),
     "contained by <CONTAINMENT>"),
    (re.compile(r"[ \t]+"), " "),
]


WORKER = re.compile(r"\b(worker|worker id) \d+")


def norm(line, root, unordered=False):
    line = line.replace(root, SHOWN_ROOT)
    for rx, rep in NORMS:
        line = rx.sub(rep, line)
    if unordered:             # which worker ran which task is not fixed
        line = WORKER.sub(r"\1 <N>", line)
    return line.strip()


def parse(readme):
    """[(session, opts, start, end)]: the marked blocks' line ranges (the
    lines between the fences)."""
    lines = readme.split("\n")
    blocks = []
    pending = None
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            pending = (m.group(1), m.group(2).split())
        elif lines[i].startswith("```console"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if pending:
                blocks.append((pending[0], pending[1], i + 1, j))
            pending = None
            i = j
        elif lines[i].strip() and pending and not lines[i].startswith("<!--"):
            pending = None
        i += 1
    return lines, blocks


def commands(block_lines):
    """[(command, [expected output lines])] of one block."""
    out = []
    for line in block_lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    for _, exp in out:            # the blank line between commands is layout
        while exp and exp[-1] == "":
            exp.pop()
    return out


# ---------------------------------------------------------------------------
# Sessions: what each needs before its first block.

def setup_serve(d, env):
    env["TASKQ_AUTOSTART"] = "1"   # as a user has it: submit starts one


def setup_demo(d, env):
    with open(os.path.join(d, "project", "words.txt"), "w") as f:
        f.write("pear\napple\nfig\npear\n")


def fake_agent(d, name, args):
    """bin/NAME: the fake agent (tests/fixtures/fakeagent) as NAME, with
    its fake options in NAME.args beside it."""
    fixtures = os.environ.get("TASKQ_FIXTURES") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
    link = os.path.join(d, "bin", name)
    os.symlink(os.path.abspath(os.path.join(fixtures, "fakeagent")), link)
    with open(link + ".args", "w") as f:
        f.write(args + "\n")


def setup_agents(d, env):
    # `claude`: Claude Code's stream-json 429 result twice, then a success.
    fake_agent(d, "claude", "--mode rate_limit --fail-times 2 --key-order real "
               "--state-file " + os.path.join(d, "claude.count"))


def setup_batch(d, env):
    setup_serve(d, env)
    with open(os.path.join(d, "project", "nightly.jsonl"), "w") as f:
        f.write('{"cmd":["sh","-c","echo reviewing a.c"],"name":"review a.c"}\n'
                '{"cmd":["sh","-c","echo reviewing b.c; exit 3"],"name":"review b.c"}\n'
                '{"shell":"echo reviewing c.c","name":"review c.c","priority":5}\n')


def setup_ask(d, env):
    setup_serve(d, env)
    fake_agent(d, "claude", "--key-order real")
    with open(os.path.join(d, "project", "README.md"), "w") as f:
        f.write("# demo\n")


class Skip(Exception):
    """A session this environment cannot run (its blocks are left alone)."""


def setup_nodes(d, env):
    # two nodes on one machine, each its state directory and TASKQ_NODE
    # (the README's commands set them), one PostgreSQL store
    db = os.environ.get("TASKQ_DB", "")
    if "://" not in db and "=" not in db:
        raise Skip("no PostgreSQL store (TASKQ_DB): the PostgreSQL pass runs it")
    env["TASKQ_DB"] = db


SETUPS = {"demo": setup_demo, "agents": setup_agents, "ask": setup_ask,
          "batch": setup_batch, "serve": setup_serve, "nodes": setup_nodes}


class Session:
    def __init__(self, name, taskq):
        self.name = name
        self.root = tempfile.mkdtemp(prefix="taskq-tour-")
        for sub in ("bin", "project"):
            os.mkdir(os.path.join(self.root, sub))
        os.symlink(os.path.abspath(taskq), os.path.join(self.root, "bin", "taskq"))
        self.env = {
            "PATH": os.path.join(self.root, "bin") + ":/usr/bin:/bin",
            "HOME": self.root,
            "LANG": "C.UTF-8",
            "TASKQ_HOME": os.path.join(self.root, "state"),
            "TASKQ_AUTOSTART": "0",
        }
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                self.env[k] = os.environ[k]
        self.rc = 0
        try:
            SETUPS[name](self.root, self.env)
        except Skip:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def run(self, cmd):
        """The output lines of cmd, stdout and stderr as written."""
        p = subprocess.run(["bash", "-c", "(exit %d); %s" % (self.rc, cmd)],
                           cwd=os.path.join(self.root, "project"), env=self.env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=CMD_TIMEOUT)
        self.rc = p.returncode
        text = p.stdout.decode("utf-8", "replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = [l.replace(self.root, SHOWN_ROOT) for l in lines]
        # A sanitizer build's own variables are not the README's business:
        # drop them from what `show` lists, and from its count.
        sans = [l for l in lines if SANITIZER_VAR.match(l)]
        if sans:
            lines = [l for l in lines if not SANITIZER_VAR.match(l)]
            lines = [ENV_COUNT.sub(lambda m: "%s%d variables" % (
                m.group(1), int(m.group(2)) - len(sans)), l) for l in lines]
        return lines

    def close(self):
        # every state directory of the session: TASKQ_HOME, and those its
        # commands named under its root (the nodes' ~/n1, ~/n2)
        for home in [self.env["TASKQ_HOME"]] + [
                os.path.join(self.root, e) for e in sorted(os.listdir(self.root))
                if os.path.exists(os.path.join(self.root, e, "serve.pid"))]:
            subprocess.run(["bash", "-c", "taskq shutdown --now >/dev/null 2>&1"],
                           cwd=self.root, env=dict(self.env, TASKQ_HOME=home),
                           timeout=CMD_TIMEOUT)
        mark = ("TASKQ_HOME=" + self.root + "/").encode()
        home_mark = ("TASKQ_TASK_HOME=" + self.root + "/").encode()
        deadline = time.monotonic() + 10
        while True:
            left = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    with open("/proc/%s/environ" % pid, "rb") as f:
                        envs = f.read().split(b"\0")
                except OSError:
                    continue
                if any(e.startswith(mark) or e.startswith(home_mark) for e in envs):
                    left.append(int(pid))
            if not left or time.monotonic() > deadline:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)


def match(expected, actual, root, unordered):
    """Whether the actual lines fit the expected ones ('...' matches any
    run of lines), compared normalised."""
    exp = [norm(l, SHOWN_ROOT, unordered) for l in expected]
    act = [norm(l, root, unordered) for l in actual]
    if unordered:
        return sorted(e for e in exp if e != "...") == sorted(act) if "..." not in exp \
            else set(e for e in exp if e != "...") <= set(act)
    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(exp):
            r = j == len(act)
        elif exp[i] == "...":
            r = any(m(i + 1, k) for k in range(j, len(act) + 1))
        else:
            r = j < len(act) and exp[i] == act[j] and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r
    return m(0, 0)


def rewrite(expected, actual):
    """The README's new output for a command: what it printed, keeping an
    elision ('...') the README had after the same leading lines."""
    if "..." not in expected or expected == ["..."]:
        return actual
    head = expected.index("...")
    tail = len(expected) - head - 1
    if len(actual) <= head + tail:
        return actual
    return actual[:head] + ["..."] + (actual[len(actual) - tail:] if tail else [])


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: readme_tour.py TASKQ_BIN README.md [--write]")
    taskq, path = sys.argv[1], sys.argv[2]
    write = "--write" in sys.argv[3:]
    only = None
    if "--only" in sys.argv[3:-1]:
        only = sys.argv[sys.argv.index("--only") + 1]
    lines, blocks = parse(open(path, encoding="utf-8").read())
    if not blocks:
        sys.exit("readme_tour: no <!-- tour: ... --> block in " + path)
    sessions = {}
    skipped = set()
    failures = 0
    new_lines = list(lines)
    edits = []
    try:
        for name, opts, start, end in blocks:
            if name not in SETUPS:
                sys.exit("readme_tour: %s:%d: unknown session %r" % (path, start, name))
            if (only and name != only) or name in skipped:
                continue
            try:
                s = sessions.get(name) or sessions.setdefault(name, Session(name, taskq))
            except Skip as e:
                print("skip %s: %s" % (name, e))
                skipped.add(name)
                continue
            body = []
            for cmd, exp in commands(lines[start:end]):
                act = s.run(cmd)
                ok = match(exp, act, SHOWN_ROOT, "unordered" in opts)
                deadline = time.monotonic() + SETTLE_S
                while not ok and "settle" in opts and time.monotonic() < deadline:
                    time.sleep(0.2)
                    act = s.run(cmd)
                    ok = match(exp, act, SHOWN_ROOT, "unordered" in opts)
                print("%s %s: $ %s" % ("ok  " if ok else "DIFF", name, cmd))
                if not ok:
                    failures += 1
                    print("  README:")
                    for l in exp:
                        print("    | " + l)
                    print("  taskq printed (exit %d):" % s.rc)
                    for l in act:
                        print("    | " + l)
                body.append("$ " + cmd)
                body.extend(exp if ok and not write else rewrite(exp, act))
                body.append("")
            while body and body[-1] == "":
                body.pop()
            edits.append((start, end, body))
    finally:
        for s in sessions.values():
            s.close()
    if write:
        for start, end, body in reversed(edits):
            new_lines[start:end] = body
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(new_lines))
        print("readme_tour: rewrote %d blocks of %s" % (len(edits), path))
        return 0
    print("readme_tour: %d commands differ" % failures if failures else
          "readme_tour: every example matches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
