#!/usr/bin/env python3
"""architecture_doc.py - check that ARCHITECTURE.md names only what exists.

    architecture_doc.py SRCDIR [DOC]

SRCDIR is the source tree's root; DOC defaults to SRCDIR/ARCHITECTURE.md.
Prints one line per problem and exits 1 if there is any, else prints
"ok N names checked" and exits 0. test_architecture_doc.sh runs it on the
real document and on copies with a name planted wrong.

What it checks (the document's conventions, said at its top):
  - The module map (the section "## Module map"): a heading
    "### `src/FOLDER/`" per folder of src/ (every folder that holds a file,
    at any depth), and no heading for a folder that does not exist. Under a
    heading, each bullet starts with the files it describes in backticks
    ("- `spawn.h`, `spawn.c` - ..."): each must exist in that folder, and
    every .c and .h file of the folder must be on a bullet. A function a
    bullet names is defined or declared in one of the bullet's files, and
    when the bullet names a .c file, defined in one of its .c files.
  - The layer order: a backticked line "`common < queue < ...`" naming
    every top-level folder of src/, each once, in the order of the module
    map's headings, and the same as the build's (meson.build's layer_order).
  - Everywhere in the document, a backticked token:
      NAME()            a C function or function-like macro defined under
                        src/; written "FILE:NAME()", or followed at once by
                        a file ("`NAME()` (`FILE`" or "`NAME()`, `FILE`"),
                        defined or declared in that file (FILE: a path
                        under src/, or its end: "worker/runner.c",
                        "runner.c");
      tq_x, TQ_X, cli_x, struct tq_x   (no parentheses) a word of src/;
      a path (src/..., tests/..., contrib/..., a top-level file such as
                        rules.json)   a file or folder of the tree;
      x.c, x.h          a file of that name under src/ or tests/;
      dir/x.c           a file src/dir/x.c;
      taskq CMD ...     CMD a command of the CLI (a .name of a struct
                        cli_cmd in src/cli).
"""
import os
import re
import sys

CODE_EXT = (".c", ".h")
TOP_FILES = {"README.md", "ARCHITECTURE.md", "meson.build", "meson_options.txt",
             "schema.sql", "rules.json", "profiles.json", "agent-env.json", "bootstrap"}
TOP_DIRS = ("src/", "tests/", "contrib/", "bench/", "tools/", "migrations/", ".ci/")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def src_files(root):
    """{relative folder: set of file names} for every folder of src/ holding a file."""
    out = {}
    for d, dirs, files in os.walk(os.path.join(root, "src")):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        files = [f for f in files if not f.startswith(".")]
        if files:
            out[os.path.relpath(d, root) + "/"] = set(files)
    return out


def index_src(root):
    """Every function defined under src/ -> the files defining or declaring
    it (a .c file's definition, a header's prototype); every word of src/."""
    defs, where, words = set(), {}, set()
    # a line at column 0 holding NAME( : a definition when it does not end
    # with ';' (the code's style puts the return type and name on one line),
    # a prototype in a header either way
    fn_re = re.compile(r"^(?![\s#/*])(?:[^(=]*?[\s*])?([A-Za-z_]\w*)\s*\(")
    macro_re = re.compile(r"^#\s*define\s+([A-Za-z_]\w*)\(")
    for d, dirs, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if not f.endswith(CODE_EXT):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)
            text = read(os.path.join(d, f))
            words.update(re.findall(r"[A-Za-z_]\w*", text))
            for line in text.splitlines():
                m = macro_re.match(line)
                if m:
                    defs.add(m.group(1))
                    where.setdefault(m.group(1), set()).add(rel)
                    continue
                m = fn_re.match(line)
                if not m:
                    continue
                proto = line.rstrip().endswith(";")
                if not proto or (f.endswith(".h") and "static inline" in line):
                    defs.add(m.group(1))
                if not proto or f.endswith(".h"):
                    where.setdefault(m.group(1), set()).add(rel)
    return defs, where, words


def commands(root):
    names = set()
    cli = os.path.join(root, "src", "cli")
    for d, _, files in os.walk(cli):
        for f in files:
            if f.endswith(".c"):
                names.update(re.findall(r'\.name\s*=\s*"([a-z][a-z-]*)"', read(os.path.join(d, f))))
    return names


_names = {}


def file_somewhere(root, name):
    """Whether a file of that name is under src/ or tests/ (a bare x.c)."""
    if root not in _names:
        found = set()
        for top in ("src", "tests"):
            for d, dirs, files in os.walk(os.path.join(root, top), followlinks=True):
                dirs[:] = [x for x in dirs if x != "corpus"]
                found.update(f for f in files if f.endswith(CODE_EXT))
        _names[root] = found
    return name in _names[root]


def section(lines, title):
    """(start, end) line indexes of the "## title" section."""
    start = None
    for i, l in enumerate(lines):
        if start is None and l.strip() == "## " + title:
            start = i + 1
        elif start is not None and l.startswith("## "):
            return start, i
    return (start, len(lines)) if start is not None else (None, None)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    doc = sys.argv[2] if len(sys.argv) == 3 else os.path.join(root, "ARCHITECTURE.md")
    lines = read(doc).splitlines()
    problems = []
    checked = 0

    def bad(n, msg):
        problems.append(f"ARCHITECTURE.md:{n + 1}: {msg}")

    folders = src_files(root)
    defs, where_of, words = index_src(root)
    cmds = commands(root)

    # -- the module map -----------------------------------------------------
    start, end = section(lines, "Module map")
    mapped, order = {}, []
    bullet_files = {}  # a module map bullet's line -> the files it describes
    if start is None:
        problems.append("ARCHITECTURE.md: no \"## Module map\" section")
    else:
        cur = None
        for i in range(start, end):
            l = lines[i]
            m = re.match(r"^### `(src/[^`]*/)`", l)
            if m:
                cur = m.group(1)
                checked += 1
                if cur in mapped:
                    bad(i, f"{cur} has two headings in the module map")
                mapped[cur] = set()
                if not os.path.isdir(os.path.join(root, cur)):
                    bad(i, f"{cur}: no such folder")
                    cur = None
                elif cur.count("/") == 2:
                    order.append(cur[4:-1])
                continue
            if l.startswith("### "):
                cur = None
                continue
            m = re.match(r"^- ((?:`[^`]+`(?:, | and |/)?)+)", l)
            if cur is None or not m:
                continue
            names = re.findall(r"`([^`]+)`", m.group(1))
            for name in names:
                checked += 1
                mapped[cur].add(name)
                if not os.path.isfile(os.path.join(root, cur, name)):
                    bad(i, f"`{name}`: no such file in {cur}")
            bullet_files[i] = [cur + n for n in names]
        for folder in sorted(folders):
            if folder not in mapped:
                problems.append(f"ARCHITECTURE.md: the module map has no heading "
                                f"### `{folder}` (a folder of src/)")
                continue
            for f in sorted(folders[folder]):
                if f.endswith(CODE_EXT) and f not in mapped[folder]:
                    problems.append(f"ARCHITECTURE.md: the module map's {folder} does "
                                    f"not say what `{f}` owns")

    # -- the layer order ----------------------------------------------------
    tops = sorted(f[4:-1] for f in folders if f.count("/") == 2)
    layer = None
    for i, l in enumerate(lines):
        m = re.search(r"`((?:[a-z]+ < )+[a-z]+)`", l)
        if m:
            layer = (i, m.group(1).split(" < "))
            break
    if layer is None:
        problems.append("ARCHITECTURE.md: no layer order (`common < queue < ...`)")
    else:
        i, names = layer
        checked += 1
        for t in tops:
            if t not in names:
                bad(i, f"the layer order does not place src/{t}/")
        for t in names:
            if names.count(t) > 1:
                bad(i, f"the layer order names {t} twice")
        # the build's own order (meson.build's layer_order), when it has one
        mb = os.path.join(root, "meson.build")
        m = re.search(r"^layer_order\s*=\s*\[([^\]]*)\]", read(mb), re.M) \
            if os.path.isfile(mb) else None
        if m:
            built = re.findall(r"'([a-z]+)'", m.group(1))
            if built != names:
                bad(i, f"the layer order is not the build's (meson.build's layer_order: "
                    f"{' < '.join(built)})")
        if [n for n in names if n in order] != order:
            bad(i, "the module map's folders are not in the layer order: "
                f"{' < '.join(order)}")

    # -- every backticked name ----------------------------------------------
    in_fence = False
    for i, l in enumerate(lines):
        if l.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        spans = [(m.group(1), m.start(), m.end()) for m in re.finditer(r"`([^`]+)`", l)]
        for k, (t, _, t_end) in enumerate(spans):
            fm = re.fullmatch(r"(?:([A-Za-z0-9_./-]+\.[ch]):)?([A-Za-z_]\w*)\(\)", t)
            if fm:
                checked += 1
                name = fm.group(2)
                where = where_of.get(name, set())
                if name not in defs:
                    bad(i, f"`{t}`: no function {name} is defined under src/")
                    continue
                # the file it is attributed to: "file.c:name()", or the
                # token right after it, "`name()` (`file.c`" or ", `file.c`"
                at = fm.group(1)
                if at is None and k + 1 < len(spans):
                    nxt, n_start, _ = spans[k + 1]
                    if nxt.endswith(CODE_EXT) and re.fullmatch(r"\s*[(,]?\s*",
                                                               l[t_end:n_start]):
                        at = nxt
                if at is not None and not any(w == at or w.endswith("/" + at)
                                              for w in where):
                    bad(i, f"`{t}`: defined in {', '.join(sorted(where))}, not in {at}")
                elif at is None and i in bullet_files and \
                        not any(w in bullet_files[i] for w in where):
                    bad(i, f"`{t}`: defined in {', '.join(sorted(where))}, not in the "
                        f"files this line of the module map describes")
                elif at is None and i in bullet_files and \
                        any(f.endswith(".c") for f in bullet_files[i]):
                    # the line names a .c file: the function's definition is
                    # in one of its .c files, not only declared in its header
                    cdefs = {w for w in where if w.endswith(".c")}
                    if cdefs and not cdefs & set(bullet_files[i]):
                        bad(i, f"`{t}`: defined in {', '.join(sorted(cdefs))}, not in "
                            f"the .c files this line of the module map describes")
                continue
            wm = re.fullmatch(r"(?:struct |enum )?((?:tq|TQ|cli|CLI)_\w+)", t)
            if wm:
                checked += 1
                if wm.group(1) not in words:
                    bad(i, f"`{t}`: no such name under src/")
                continue
            cm = re.fullmatch(r"taskq(?: --?[a-z-]+(?: [A-Z]+)?)* ([a-z][a-z-]*)\b.*", t)
            if cm and t.startswith("taskq "):
                checked += 1
                if cm.group(1) not in cmds:
                    bad(i, f"`{t}`: taskq has no command {cm.group(1)}")
                continue
            if " " in t or "*" in t or "{" in t or "<" in t:
                continue
            path = t.split(":")[0]
            if path.startswith(TOP_DIRS) or path in TOP_FILES:
                checked += 1
                if not os.path.exists(os.path.join(root, path)):
                    bad(i, f"`{t}`: no such file or folder in the tree")
                continue
            if re.fullmatch(r"[A-Za-z0-9_.-]+\.[ch]", path):
                checked += 1
                if not file_somewhere(root, path):
                    bad(i, f"`{t}`: no such file under src/ or tests/")
            elif re.fullmatch(r"[A-Za-z0-9_./-]+\.[ch]", path):
                checked += 1
                if not os.path.isfile(os.path.join(root, "src", path)):
                    bad(i, f"`{t}`: no such file src/{path}")

    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s); ARCHITECTURE.md must name only what exists "
              "and map every folder and file of src/")
        return 1
    print(f"ok {checked} names checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
