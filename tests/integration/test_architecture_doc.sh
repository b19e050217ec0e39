#!/usr/bin/env bash
# test_architecture_doc.sh - ARCHITECTURE.md stays true to the tree (issue
# 18): every function, name, file, path and command it writes in backticks
# exists (a function in the file it is attributed to), its module map has a
# heading for every folder of src/ and a bullet for every .c and .h file,
# and its layer order places every top-level folder of src/, in the map's
# order. The checks are architecture_doc.py's (beside this file; its top
# says them in full). A rename, a move or a new file that leaves the
# document behind fails here, with the line to change.
#
# Then the check is shown to find what it looks for: each kind of wrong
# name is planted in a copy of the document (or a folder and a file in a
# copy of src/), and the check must fail on it, naming it.
. "$(dirname "$0")/lib.sh"

CHECK="$(dirname "$0")/architecture_doc.py"
DOC="$TASKQ_SRCDIR/ARCHITECTURE.md"

check "ARCHITECTURE.md names only what exists and maps every folder and file of src/"
[ -f "$DOC" ] || fail "no ARCHITECTURE.md at the top of the tree"
if ! "$TQ_PYTHON" "$CHECK" "$TASKQ_SRCDIR" >"$TQ_OUT" 2>&1; then
	cat "$TQ_OUT" >&2
	fail "ARCHITECTURE.md is out of date with the tree (the lines above say what to change)"
fi
grep -qE '^ok [0-9]+ names checked$' "$TQ_OUT" || fail "the check said: $(cat "$TQ_OUT")"
n=$(sed -n 's/^ok \([0-9]*\) names checked$/\1/p' "$TQ_OUT")
[ "$n" -ge 200 ] || fail "only $n names checked: the document lost its map or its path"

# A copy of the tree to plant wrong names in: src/ and the document.
ROOT="$TQ_TMP/tree"
mkdir -p "$ROOT"
cp -r "$TASKQ_SRCDIR/src" "$ROOT/src"
for f in ARCHITECTURE.md README.md meson.build rules.json profiles.json agent-env.json schema.sql; do
	cp "$TASKQ_SRCDIR/$f" "$ROOT/$f"
done
for d in tests contrib tools migrations bench; do
	ln -s "$TASKQ_SRCDIR/$d" "$ROOT/$d"
done
"$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1 || {
	cat "$TQ_OUT" >&2
	fail "the copy of the tree does not pass as the tree does"
}

# plant KIND EXPECT: write a copy of the document with one wrong name of
# KIND (mutate.py below prints what it planted), check it, and require a
# failure whose output holds EXPECT (the planted name, or the folder).
cat >"$TQ_TMP/mutate.py" <<'PY'
import re, sys
kind, src, dst = sys.argv[1:4]
doc = open(src, encoding="utf-8").read()
map_at = doc.index("## Module map")
path_at = doc.index("## A task's path")

def sub_first(pattern, repl, start=0):
    global doc
    m = re.compile(pattern, re.M).search(doc, start)
    if m is None:
        sys.exit(f"nothing to plant a {kind} in: {pattern}")
    new = m.expand(repl)
    doc = doc[:m.start()] + new + doc[m.end():]
    return m, new

if kind == "function":
    m, _ = sub_first(r"`(tq_\w+)\(\)`", r"`\1_planted()`", path_at)
    said = m.group(1) + "_planted"
elif kind == "attribution":
    # a function attributed to a file it is not in
    m, _ = sub_first(r"`(tq_\w+)\(\)` \(`((?!common/err\.c)[\w/]+\.c)`",
                     r"`\1()` (`common/err.c`", path_at)
    said = m.group(1) + "()"
elif kind == "heading":
    m, _ = sub_first(r"^### `(src/[^`]+/)`\n", "", map_at)
    said = m.group(1)
elif kind == "bullet":
    m, _ = sub_first(r"^- `([^`]+)`.*\n", "", map_at)
    said = m.group(1)
elif kind == "file":
    m, _ = sub_first(r"`(\w+)\.c`", r"`\1_planted.c`", path_at)
    said = m.group(1) + "_planted.c"
elif kind == "path":
    m, _ = sub_first(r"`(tests/[\w/.-]+)`", r"`\1_planted`", path_at)
    said = m.group(1) + "_planted"
elif kind == "command":
    m, _ = sub_first(r"`taskq ([a-z]+)", r"`taskq \1planted", path_at)
    said = "command " + m.group(1) + "planted"
elif kind == "layer":
    m, _ = sub_first(r"`common < (\w+) < ", r"`common < ")
    said = "src/" + m.group(1) + "/"
elif kind == "owner":
    # a function said to be in the files of a module map bullet it is not in:
    # the first bullet's function swapped for the next bullet's
    bullets = [m for m in re.finditer(r"^- `.*`(tq_\w+)\(\)`.*$", doc[map_at:path_at], re.M)]
    if len(bullets) < 2:
        sys.exit("nothing to plant an owner in")
    a, b = bullets[0], bullets[1]
    line = a.group(0).replace("`%s()`" % a.group(1), "`%s()`" % b.group(1), 1)
    doc = doc[:map_at + a.start()] + line + doc[map_at + a.end():]
    said = "`%s()`: defined in" % b.group(1)
elif kind == "name":
    m, _ = sub_first(r"`(TQ_[A-Z]+)`", r"`\1_PLANTED`")
    said = m.group(1) + "_PLANTED"
else:
    sys.exit("unknown kind " + kind)
open(dst, "w", encoding="utf-8").write(doc)
print(said)
PY

plant() {
	local kind=$1 said
	check "the check fails on a planted wrong $kind"
	cp "$DOC" "$ROOT/ARCHITECTURE.md"
	said=$("$TQ_PYTHON" "$TQ_TMP/mutate.py" "$kind" "$DOC" "$ROOT/ARCHITECTURE.md") ||
		fail "could not plant a $kind: $said"
	if "$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1; then
		fail "a planted $kind ($said) passed the check"
	fi
	assert_contains "$(cat "$TQ_OUT")" "$said" "the failure names the planted $kind"
	echo "planted $said: $(grep -F -- "$said" "$TQ_OUT" | head -n 1)"
}
for kind in function attribution owner heading bullet file path command layer name; do
	plant "$kind"
done
cp "$DOC" "$ROOT/ARCHITECTURE.md"

check "the check fails when the build's layer order is not the document's"
cp "$TASKQ_SRCDIR/meson.build" "$ROOT/meson.build"
grep -q "^layer_order = \[.*'ipc', 'proc'" "$ROOT/meson.build" || fail "no layer_order in meson.build"
sed -i "s/^\(layer_order = \[.*\)'ipc', 'proc'/\1'proc', 'ipc'/" "$ROOT/meson.build"
if "$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1; then
	fail "a build with proc below ipc passed the check"
fi
assert_contains "$(cat "$TQ_OUT")" "the layer order is not the build's" "the failure says so"
cp "$TASKQ_SRCDIR/meson.build" "$ROOT/meson.build"

check "the check fails on a folder of src/ that the module map does not have"
mkdir "$ROOT/src/planted"
echo 'int tq_planted(void);' >"$ROOT/src/planted/planted.h"
if "$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1; then
	fail "a new folder src/planted/ passed the check"
fi
assert_contains "$(cat "$TQ_OUT")" "src/planted/" "the failure names the folder"
assert_contains "$(cat "$TQ_OUT")" "the layer order does not place src/planted/" \
	"the layer order misses it too"
rm -r "$ROOT/src/planted"

check "the check fails on a file of src/ that the module map does not have"
echo 'int tq_planted(void);' >"$ROOT/src/common/planted.h"
if "$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1; then
	fail "a new file src/common/planted.h passed the check"
fi
assert_contains "$(cat "$TQ_OUT")" "planted.h" "the failure names the file"
rm "$ROOT/src/common/planted.h"

check "the check fails on a function that no longer exists"
# the first function of the path, renamed in the copy of src/ only
fn=$(sed -n '/^## A task.s path/,$p' "$DOC" | grep -o '`tq_[a-z_]*()`' | head -n 1 | tr -d '`()')
[ -n "$fn" ] || fail "no function in the path section"
grep -rlw -- "$fn" "$ROOT/src" | xargs sed -i "s/\b$fn\b/${fn}_renamed/g"
if "$TQ_PYTHON" "$CHECK" "$ROOT" >"$TQ_OUT" 2>&1; then
	fail "renaming $fn in src/ passed the check"
fi
assert_contains "$(cat "$TQ_OUT")" "no function $fn is defined" "the failure names $fn"
