#!/usr/bin/env bash
# test_layers_compiler_cannot_see_above.sh - in this build, each folder of
# src/ is compiled with an include path that holds only itself and the
# folders below it (BUILD/layers/FOLDER/, top meson.build), and none of the
# source tree: for every folder F, a file preprocessed with the include
# path of F's own compiles (from compile_commands.json) finds "G/x.h" of
# each folder G at or below F and gets "No such file" for each folder above
# it, and for "src/G/x.h". So an upward include fails to compile even where
# the check (tools/layers.py) would not look.
. "$(dirname "$0")/lib.sh"

: "${TASKQ_LAYERS:?TASKQ_LAYERS must list the layers (tests/meson.build)}"
: "${TASKQ_BUILDDIR:?TASKQ_BUILDDIR must name the build dir (tests/meson.build)}"
db=$TASKQ_BUILDDIR/compile_commands.json
[ -f "$db" ] || fail "no $db"

check "each folder's compiles see only it and the folders below it ($TASKQ_LAYERS)"
"$TQ_PYTHON" - "$db" "$TASKQ_SRCDIR" "$TASKQ_BUILDDIR" "$TQ_TMP" $TASKQ_LAYERS <<'PY' ||
import json, os, shlex, subprocess, sys

db, srcdir, builddir, tmp = (os.path.realpath(p) for p in sys.argv[1:5])
layers = sys.argv[5:]
src = os.path.join(srcdir, "src")
entries = json.load(open(db, encoding="utf-8"))

def fail(msg):
    sys.exit(msg)

def header_of(folder):
    """A public header of src/FOLDER/ (not internal.h, not *_int.h)."""
    for name in sorted(os.listdir(os.path.join(src, folder))):
        if name.endswith(".h") and name != "internal.h" and not name.endswith("_int.h"):
            return folder + "/" + name
    fail("src/%s/ has no public header" % folder)

# a compile of a .c of each folder, as the build runs it
per_folder = {}
for e in entries:
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, src)
    if rel.startswith("..") or "/" not in rel:
        continue
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    per_folder.setdefault(rel.split("/")[0], (e["directory"], args, rel))

probe = os.path.join(tmp, "probe.c")
for i, folder in enumerate(layers):
    if folder not in per_folder:
        fail("no compile of src/%s/ in %s" % (folder, db))
    directory, args, rel = per_folder[folder]
    # the compiler and its -I/-iquote/-isystem/-D/-std: what finds headers
    cmd, it = [args[0], "-E", "-o", os.devnull], iter(args[1:])
    for a in it:
        if a in ("-I", "-iquote", "-isystem", "-D"):
            a = a + next(it)
        if a.startswith(("-I", "-iquote", "-isystem")):
            flag = "-I" if a.startswith("-I") else ("-iquote" if a.startswith("-iquote") else "-isystem")
            path = os.path.realpath(os.path.join(directory, a[len(flag):]))
            if (path == srcdir or path.startswith(srcdir + os.sep)) and not (
                    path == builddir or path.startswith(builddir + os.sep)):
                fail("%s is compiled with %s: the source tree on the include path" % (rel, a))
            cmd.append(flag + path)
        elif a.startswith(("-D", "-std=")):
            cmd.append(a)
    want = os.path.join(builddir, "layers", folder)
    if "-I" + want not in cmd:
        fail("%s is compiled without -I%s" % (rel, want))
    for j, other in enumerate(layers):
        for inc in ([header_of(other)] + (["src/" + header_of(other)] if j == 0 else [])):
            with open(probe, "w", encoding="utf-8") as p:
                p.write('#include "%s"\n' % inc)
            r = subprocess.run(cmd + [probe], cwd=directory, capture_output=True, text=True)
            found = r.returncode == 0
            should = j <= i and not inc.startswith("src/")
            if found != should:
                fail('src/%s/ (as %s compiles): #include "%s" %s\n%s'
                     % (folder, rel, inc, "found" if found else "not found", r.stderr))
            if not found and "No such file" not in r.stderr:
                fail('src/%s/: #include "%s" failed otherwise:\n%s' % (folder, inc, r.stderr))
    above = [o for o in layers[i + 1:]]
    print("src/%s/: sees %s; not %s" % (folder, " ".join(layers[: i + 1]),
                                         " ".join(above) if above else "(top)"))
PY
	fail "the include paths do not follow the layers"

echo "ok $TQ_TEST ($TQ_CHECKS checks)"
