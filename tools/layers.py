#!/usr/bin/env python3
"""tools/layers.py - the include direction of src/, checked as a build step.

    layers.py --root DIR --layers common queue ... cli
              [--generated NAME...] [--tree DIR] [--stamp FILE --depfile FILE]

src/ is cut into folders in layers, lowest first (--layers, the order the top
meson.build names). A folder's code uses its own folder and the folders
before it, never one after it. The compiler enforces most of that: each
folder's library is compiled with -I BUILD/layers/FOLDER/, a directory
holding a symlink to each folder at or below it (--tree makes them), and
src/ itself is not on the include path, so an upward "cli/cli.h" from
src/queue is "No such file". What the compiler cannot see, and what would
otherwise only show as that bare "No such file", this checks first, so the
build stops with one line per offending include naming the file, the
include and the rule:

  upward     src/F/... includes "G/x.h" where G comes after F in the order
  "../"      an include with a ".." component (or an absolute path): it
             reaches any folder from anywhere, past the include path;
             another folder's header is included as "G/x.h"
  private    a folder's private headers are included from inside that
             folder only (and from its unit tests, tests/unit/test_F*.c):
             internal.h and *_int.h, and every header of a subfolder of
             src/queue/ (a store backend: sqlite/, later postgres/), which
             sits behind queue.h
  folder     a quoted include that is neither a header of the including
             file's own folder (or a subfolder of it), nor "G/x.h" for a
             folder G of src/, nor a generated header (--generated); for
             files outside src/, only the second and third

Scanned: every .c, .h and .def under ROOT/src, ROOT/tests and ROOT/bench (tests
and benchmarks sit above every layer; "../", the private headers and the
folder rule apply to them). Angle-bracket includes are system headers,
unless their first component names a folder of src/.

With --stamp, writes FILE (a header nothing includes: the libraries list it
among their sources, so every compile waits for this check) and --depfile
(every file and directory scanned, and the symlinks of the tree: ninja runs
the check again when one changes, a file is added, or the tree is gone).

Exit 0 when every include obeys, 1 (after one line per violation) when
not, 2 on bad arguments.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]*)[>"]')
SCANNED = ("src", "tests", "bench")
# the store's backends: every header under src/queue/<subfolder>/ is private
BACKEND_PARENT = "queue"


def is_private_name(name):
    return name == "internal.h" or name.endswith("_int.h")


def private_owner(rel):
    """The folder a header (path relative to src/) is private to, or None."""
    parts = rel.split("/")
    if len(parts) >= 2 and is_private_name(parts[-1]):
        return parts[0]
    if len(parts) >= 3 and parts[0] == BACKEND_PARENT:
        return parts[0]
    return None


def unit_test_of(rel, folder):
    """Is REL a unit test of FOLDER (tests/unit/test_FOLDER*.c), which may
    look inside it?"""
    return (rel.startswith("tests/unit/test_" + folder)
            and "/" not in rel[len("tests/unit/"):])


def walk(root):
    """Every .c/.h under ROOT's scanned folders, and the directories."""
    files, dirs = [], []
    for top in SCANNED:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for d, subdirs, names in os.walk(base):
            subdirs[:] = sorted(s for s in subdirs
                                if not s.startswith(".") and s != "corpus")
            dirs.append(d)
            for n in sorted(names):
                if n.endswith((".c", ".h", ".def")):
                    files.append(os.path.join(d, n))
    return files, dirs


def check_file(path, root, rank, generated, order_text):
    """One line per include of PATH that breaks a rule."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    src_rel = rel[4:] if rel.startswith("src/") else None
    folder = src_rel.split("/")[0] if src_rel and "/" in src_rel else None
    here = os.path.dirname(path)
    bad = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return ["%s: error: cannot read: %s" % (rel, e.strerror)]
    for no, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        quote, inc = m.groups()
        shown = ('"%s"' if quote == '"' else "<%s>") % inc
        where = "%s:%d: error: #include %s: " % (rel, no, shown)
        parts = inc.split("/")
        if quote == "<" and parts[0] not in rank:
            continue  # a system header
        if inc.startswith("/") or ".." in parts:
            fix = ""
            if ".." in parts and not inc.startswith("/"):
                target = os.path.normpath(os.path.join(here, inc))
                t_rel = os.path.relpath(target, os.path.join(root, "src"))
                if not t_rel.startswith("..") and "/" in t_rel.replace(os.sep, "/"):
                    fix = ': write "%s"' % t_rel.replace(os.sep, "/")
            bad.append(where + 'a "../" or absolute include%s (a folder\'s '
                       'header is included as "FOLDER/x.h", the layers\' '
                       "include path decides which)" % fix)
            continue
        local = quote == '"' and os.path.isfile(os.path.join(here, inc))
        if local:
            # own folder or a subfolder of it: private headers are fine
            # here, only files inside their folder reach them this way
            continue
        if len(parts) == 1:
            if inc in generated:
                continue
            if folder is None:
                continue  # tests/, bench/: their own -I (harness.h, ...)
            bad.append(where + "no such header in %s; another folder's "
                       'header is included as "FOLDER/x.h"'
                       % os.path.dirname(rel))
            continue
        if parts[0] not in rank:
            if folder is None:
                continue  # tests/, bench/: their own layout
            bad.append(where + '"%s" is not a folder of src/ (the layers: '
                       '%s); a folder\'s header is included as "FOLDER/x.h"'
                       % (parts[0], order_text))
            continue
        owner = private_owner(inc)
        if owner is not None and folder != owner and not unit_test_of(rel, owner):
            if is_private_name(parts[-1]):
                why = "internal.h and *_int.h are their folder's own"
            else:
                why = ("the store's backend under src/%s/%s/ sits behind "
                       "queue.h" % (owner, parts[1]))
            bad.append(where + "private to src/%s/ (%s): included from "
                       "inside src/%s/ only" % (owner, why, owner))
            continue
        if folder is not None and folder in rank and rank[parts[0]] > rank[folder]:
            bad.append(where + "upward: src/%s/ is below src/%s/ and includes "
                       "only its own folder and those below it (the layers, "
                       "lowest first: %s)" % (folder, parts[0], order_text))
    return bad


def make_tree(tree, root, layers):
    """TREE/L/F -> ROOT/src/F for each layer L and each F at or below it."""
    links = []
    for i, layer in enumerate(layers):
        d = os.path.join(tree, layer)
        os.makedirs(d, exist_ok=True)
        want = set(layers[: i + 1])
        for name in os.listdir(d):
            if name not in want:
                p = os.path.join(d, name)
                if os.path.islink(p):
                    os.unlink(p)
        for f in layers[: i + 1]:
            link = os.path.join(d, f)
            target = os.path.join(root, "src", f)
            if os.path.islink(link) and os.readlink(link) == target:
                links.append(link)
                continue
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
            links.append(link)
    return links


def dep_escape(p):
    return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("$", "$$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--layers", nargs="+", required=True)
    ap.add_argument("--generated", nargs="*", default=[])
    ap.add_argument("--tree")
    ap.add_argument("--stamp")
    ap.add_argument("--depfile")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    if bool(a.stamp) != bool(a.depfile):
        ap.error("--stamp and --depfile go together")
    rank = {name: i for i, name in enumerate(a.layers)}
    for name in a.layers:
        if not os.path.isdir(os.path.join(root, "src", name)):
            ap.error("--layers: no folder src/%s" % name)
    order_text = " < ".join(a.layers)
    files, dirs = walk(root)
    bad = []
    for path in files:
        bad.extend(check_file(path, root, rank, set(a.generated), order_text))
    links = make_tree(os.path.abspath(a.tree), root, a.layers) if a.tree else []
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        print("tools/layers.py: %d include%s against the layers of src/ (%s)"
              % (len(bad), "" if len(bad) == 1 else "s", order_text),
              file=sys.stderr)
        return 1
    if a.stamp:
        with open(a.depfile + ".tmp", "w", encoding="utf-8") as f:
            f.write(dep_escape(a.stamp) + ":")
            for p in dirs + files + links:
                f.write(" \\\n " + dep_escape(p))
            f.write("\n")
        os.replace(a.depfile + ".tmp", a.depfile)
        with open(a.stamp + ".tmp", "w", encoding="utf-8") as f:
            f.write("/* Written by tools/layers.py once every include of src/,"
                    " tests/ and bench/\n * obeyed the layers %s.\n"
                    " * Nothing includes it: the libraries list it so that"
                    " they compile after\n * the check. */\n" % order_text)
        os.replace(a.stamp + ".tmp", a.stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
