#!/usr/bin/env python3
"""tools/layers.py - the direction of src/'s layers, checked as build steps.

    layers.py --root DIR --layers common queue ... cli [--order NAME...]
              [--generated NAME...] [--tree DIR] [--stamp FILE --depfile FILE]
    layers.py --layers common queue ... cli --archives LIB.a... [--nm NM]
              [--stamp FILE]

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
  unknown    a folder of src/ that is not one of --layers (the build would
             not compile it: it has no meson.build, is not in layer_order,
             or is in --order but came after the build was configured:
             reconfigure), a .c or .h directly in src/

Scanned: every .c, .h and .def under ROOT/src, ROOT/tests and ROOT/bench (tests
and benchmarks sit above every layer; "../", the private headers and the
folder rule apply to them). Angle-bracket includes are system headers,
unless their first component names a folder of src/.

With --stamp, writes FILE (a header nothing includes: the libraries list it
among their sources, so every compile waits for this check) and --depfile
(every file and directory scanned, and the symlinks of the tree: ninja runs
the check again when one changes, a file is added, or the tree is gone).

With --archives (the folders' static libraries, one a layer in the same
order), the link instead: a symbol a library uses (nm: undefined in one of
its objects) that no library at or below it defines, but one above it
does, is a call upward, made without the upward include (a declaration
written by hand); the check names the object, the symbol, and the folder
and object defining it. The libraries are linked in a group, so the linker
itself would not refuse it. With --stamp, writes FILE when they all obey.

Exit 0 when every include (symbol) obeys, 1 (after one line per
violation) when not, 2 on bad arguments.
"""
import argparse
import os
import re
import subprocess
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
    """Every .c/.h/.def under ROOT's scanned folders, and the directories."""
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
            if len(parts) >= 3 and parts[0] == BACKEND_PARENT:
                why = ("the store's backend under src/%s/%s/ sits behind "
                       "queue.h" % (owner, parts[1]))
            else:
                why = "internal.h and *_int.h are their folder's own"
            bad.append(where + "private to src/%s/ (%s): included from "
                       "inside src/%s/ only, and from its unit tests "
                       "(tests/unit/test_%s*.c)" % (owner, why, owner, owner))
            continue
        if folder is not None and folder in rank and rank[parts[0]] > rank[folder]:
            bad.append(where + "upward: src/%s/ is below src/%s/ and includes "
                       "only its own folder and those below it (the layers, "
                       "lowest first: %s)" % (folder, parts[0], order_text))
    return bad


def unlayered(root, rank, order):
    """One line per folder of src/ the build does not know (it would not
    be built at all) and per source file outside every folder. ORDER: all
    the names the build's layer_order holds, folders or not yet."""
    bad = []
    src = os.path.join(root, "src")
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if name.startswith(".") or name in rank:
            continue
        if os.path.isdir(p) and name in order:
            bad.append("src/%s/: error: a layer this build was configured "
                       "without (its meson.build came later): run meson "
                       "setup --reconfigure on the build directory" % name)
        elif os.path.isdir(p):
            bad.append("src/%s/: error: not one of the layers the build knows "
                       "(%s): name it in layer_order (the top meson.build), "
                       "in its place, and give it a meson.build"
                       % (name, " < ".join(rank)))
        elif name.endswith((".c", ".h")):
            bad.append("src/%s: error: a source file outside every folder of "
                       "src/ (each folder is a layer)" % name)
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


def nm_symbols(nm, archive, which):
    """{symbol: object} of ARCHIVE's defined (which="defined") or
    undefined symbols."""
    flag = "--defined-only" if which == "defined" else "--undefined-only"
    r = subprocess.run([nm, "-A", flag, archive], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise OSError("%s %s: %s" % (nm, archive, r.stderr.strip()))
    syms = {}
    for line in r.stdout.splitlines():
        # "lib.a:obj.o:0000000000000000 T name" or "lib.a:obj.o:  U name"
        head, _, rest = line.rpartition(":")
        fields = rest.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        # global definitions only: a local (lower case) symbol is the
        # object's own
        if which == "defined" and not kind.isupper():
            continue
        # a thin archive's member is a path (BUILD/.../x.c.o): its name
        syms.setdefault(name, os.path.basename(head.partition(":")[2]))
    return syms


def check_symbols(layers, archives, nm):
    """One line per symbol a library takes from a library above it."""
    order_text = " < ".join(layers)
    defined = [nm_symbols(nm, a, "defined") for a in archives]
    bad = []
    for i, (layer, archive) in enumerate(zip(layers, archives)):
        below = set()
        for d in defined[: i + 1]:
            below.update(d)
        for sym, obj in sorted(nm_symbols(nm, archive, "undefined").items()):
            if sym in below:
                continue
            for j in range(i + 1, len(layers)):
                if sym in defined[j]:
                    bad.append("%s(%s): error: uses %s, defined in src/%s/ "
                               "(%s), a folder above src/%s/ (the layers, "
                               "lowest first: %s)"
                               % (os.path.basename(archive), obj, sym,
                                  layers[j], defined[j][sym], layer,
                                  order_text))
                    break
    return bad


def dep_escape(p):
    return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("$", "$$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root")
    ap.add_argument("--layers", nargs="+", required=True)
    ap.add_argument("--generated", nargs="*", default=[])
    ap.add_argument("--order", nargs="+",
                    help="every name of layer_order, a folder yet or not")
    ap.add_argument("--tree")
    ap.add_argument("--stamp")
    ap.add_argument("--depfile")
    ap.add_argument("--archives", nargs="+")
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()
    if a.archives:
        return main_symbols(ap, a)
    if not a.root:
        ap.error("--root (or --archives) is required")
    root = os.path.abspath(a.root)
    if bool(a.stamp) != bool(a.depfile):
        ap.error("--stamp and --depfile go together")
    rank = {name: i for i, name in enumerate(a.layers)}
    for name in a.layers:
        if not os.path.isdir(os.path.join(root, "src", name)):
            ap.error("--layers: no folder src/%s" % name)
    order_text = " < ".join(a.layers)
    files, dirs = walk(root)
    bad = unlayered(root, rank, a.order or a.layers)
    for path in files:
        bad.extend(check_file(path, root, rank, set(a.generated), order_text))
    links = make_tree(os.path.abspath(a.tree), root, a.layers) if a.tree else []
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        print("tools/layers.py: %d error%s against the layers of src/ (%s)"
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


def main_symbols(ap, a):
    if len(a.archives) != len(a.layers):
        ap.error("--archives: one a layer, in the order of --layers")
    try:
        bad = check_symbols(a.layers, a.archives, a.nm)
    except OSError as e:
        print("tools/layers.py: %s" % e, file=sys.stderr)
        return 1
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        print("tools/layers.py: %d symbol%s taken from a folder above "
              "(the layers: %s)" % (len(bad), "" if len(bad) == 1 else "s",
                                    " < ".join(a.layers)), file=sys.stderr)
        return 1
    if a.stamp:
        with open(a.stamp + ".tmp", "w", encoding="utf-8") as f:
            f.write("every library of src/ uses only itself and those below "
                    "it: %s\n" % " < ".join(a.layers))
        os.replace(a.stamp + ".tmp", a.stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
