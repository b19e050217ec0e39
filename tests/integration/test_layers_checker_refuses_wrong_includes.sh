#!/usr/bin/env bash
# test_layers_checker_refuses_wrong_includes.sh - tools/layers.py, the check
# the build runs before it compiles anything (top meson.build), accepts the
# real tree and refuses, one line each naming the file, the include and the
# rule, an include planted in a copy of src/: one upward (src/queue/
# including cli/), a "../" one, one of the store backend's private headers
# (src/queue/sqlite/) from outside src/queue/ (src/cli/, a unit test of
# another folder), a *_int.h of another folder, a bare name of another
# folder's header and a path through src/. Includes of src/queue/'s private
# headers from inside it and from its unit tests (test_queue*.c) pass. A
# folder of src/ that is not a layer of the build is refused. And the build runs it: every compile of src/ waits for it.
. "$(dirname "$0")/lib.sh"

: "${TASKQ_LAYERS:?TASKQ_LAYERS must list the layers (tests/meson.build)}"
: "${TASKQ_BUILDDIR:?TASKQ_BUILDDIR must name the build dir (tests/meson.build)}"
read -ra layers <<<"$TASKQ_LAYERS"
read -ra generated <<<"${TASKQ_GENERATED:-}"
order=$(printf ' < %s' "${layers[@]}")
order=${order# < }

# layers_check ROOT: the check as the build runs it, on ROOT's src/ tests/
# bench/; output in $TQ_OUT (both streams), status in $TQ_RC
layers_check() {
	TQ_RC=0
	"$TQ_PYTHON" "$TASKQ_SRCDIR/tools/layers.py" --root "$1" \
		--generated "${generated[@]}" --layers "${layers[@]}" >"$TQ_OUT" 2>&1 ||
		TQ_RC=$?
}

tree=$TQ_TMP/tree
# fresh_tree: a copy of the real src/, and an empty tests/unit/
fresh_tree() {
	rm -rf -- "$tree"
	mkdir -p "$tree/tests/unit"
	cp -R -- "$TASKQ_SRCDIR/src" "$tree/src"
	# the SQLite backend's folder, whether or not the store has moved there
	mkdir -p "$tree/src/queue/sqlite"
	[ -e "$tree/src/queue/sqlite/stmt.h" ] ||
		printf '/* planted */\n' >"$tree/src/queue/sqlite/stmt.h"
}

# refused FILE INCLUDE RULE: FILE (relative to the copy), with INCLUDE
# planted on its line 2, makes the check fail with exactly the line
# "FILE:2: error: #include INCLUDE: RULE..." and the count
refused() {
	local file=$1 inc=$2 rule=$3 errors
	fresh_tree
	mkdir -p "$(dirname "$tree/$file")"
	printf '/* planted by %s */\n#include %s\n' "$TQ_TEST" "$inc" >"$tree/$file"
	layers_check "$tree"
	assert_eq 1 "$TQ_RC" "the check's status with $inc in $file"
	errors=$(grep -c ': error: ' "$TQ_OUT" || true)
	assert_eq 1 "$errors" "error lines for $inc in $file: $(cat "$TQ_OUT")"
	assert_contains "$(cat "$TQ_OUT")" "$file:2: error: #include $inc: $rule" \
		"the line for $inc in $file"
	assert_contains "$(cat "$TQ_OUT")" \
		"tools/layers.py: 1 error against the layers of src/ ($order)"
	sed -n '1p' "$TQ_OUT"
}

check "the real tree obeys the layers ($order)"
layers_check "$TASKQ_SRCDIR"
assert_eq 0 "$TQ_RC" "the check on the real tree: $(cat "$TQ_OUT")"
assert_eq "" "$(cat "$TQ_OUT")" "the check on the real tree says nothing"

check "a copy with nothing planted passes too"
fresh_tree
layers_check "$tree"
assert_eq 0 "$TQ_RC" "the check on the copy: $(cat "$TQ_OUT")"

check "an upward include is refused: src/queue/ including cli/"
refused src/queue/planted.c '"cli/cli.h"' \
	"upward: src/queue/ is below src/cli/ and includes only its own folder and those below it (the layers, lowest first: $order)"
refused src/common/planted.h '<worker/worker.h>' \
	"upward: src/common/ is below src/worker/"

check 'a "../" include is refused, with what to write instead'
refused src/worker/planted.c '"../common/sys.h"' \
	'a "../" or absolute include: write "common/sys.h" (a folder'"'"'s header is included as "FOLDER/x.h"'
refused src/queue/sqlite/planted.c '"../queue.h"' \
	'a "../" or absolute include: write "queue/queue.h"'
refused tests/unit/test_planted.c '"../../src/common/sys.h"' 'a "../" or absolute include'

check "the store backend's private headers are refused outside src/queue/"
refused src/worker/planted.c '"queue/sqlite/stmt.h"' \
	"private to src/queue/ (the store's backend under src/queue/sqlite/ sits behind queue.h): included from inside src/queue/ only"
refused src/cli/planted.c '"queue/sqlite/internal.h"' \
	"private to src/queue/ (the store's backend under src/queue/sqlite/ sits behind queue.h)"
refused tests/unit/test_planted.c '"queue/sqlite/stmt.h"' "private to src/queue/"
refused src/cli/planted.c '"worker/worker_int.h"' \
	"private to src/worker/ (internal.h and *_int.h are their folder's own): included from inside src/worker/ only"

check "another folder's header by its bare name, or through src/, is refused"
refused src/worker/planted.c '"queue.h"' \
	"no such header in src/worker; another folder's header is included as \"FOLDER/x.h\""
refused src/worker/planted.c '"src/queue/queue.h"' \
	'"src" is not a folder of src/'

check "a folder of src/ the build does not know is refused (it would not be built)"
fresh_tree
mkdir "$tree/src/planted"
printf 'int tq_planted(void);\n' >"$tree/src/planted/planted.h"
layers_check "$tree"
assert_eq 1 "$TQ_RC" "the check's status with src/planted/: $(cat "$TQ_OUT")"
assert_eq "src/planted/: error: not one of the layers the build knows ($order): name it in layer_order (the top meson.build), in its place, and give it a meson.build
tools/layers.py: 1 error against the layers of src/ ($order)" "$(cat "$TQ_OUT")"
sed -n 1p "$TQ_OUT"

check "a folder of layer_order the build was configured without says to reconfigure"
TQ_RC=0
"$TQ_PYTHON" "$TASKQ_SRCDIR/tools/layers.py" --root "$tree" --generated "${generated[@]}" \
	--order "${layers[@]}" planted --layers "${layers[@]}" >"$TQ_OUT" 2>&1 || TQ_RC=$?
assert_eq 1 "$TQ_RC" "the check's status: $(cat "$TQ_OUT")"
assert_contains "$(cat "$TQ_OUT")" "src/planted/: error: a layer this build was configured without (its meson.build came later): run meson setup --reconfigure on the build directory"
sed -n 1p "$TQ_OUT"

check "src/queue/'s private headers pass inside it and in its unit tests"
fresh_tree
printf '#include "queue/sqlite/stmt.h"\n' >"$tree/tests/unit/test_queue_planted.c"
printf '#include "sqlite/stmt.h"\n#include "queue/sqlite/stmt.h"\n#include "sqlite/internal.h"\n#include "common/sys.h"\n' \
	>"$tree/src/queue/planted.c"
printf '#include "stmt.h"\n#include "internal.h"\n#include "queue/queue.h"\n#include "queue/sqlite/internal.h"\n' \
	>"$tree/src/queue/sqlite/planted.c"
layers_check "$tree"
assert_eq 0 "$TQ_RC" "the check with src/queue/'s own includes: $(cat "$TQ_OUT")"

check "every compile of src/ in the build waits for the check"
ninja_file=$TASKQ_BUILDDIR/build.ninja
[ -f "$ninja_file" ] || fail "no $ninja_file"
"$TQ_PYTHON" - "$ninja_file" <<'PY' || fail "a compile of src/ does not wait for layers_checked.h"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read().replace("$\n", "")
n = 0
for line in text.splitlines():
    m = re.match(r"build (\S+\.o): c_COMPILER (\S+)(.*)", line)
    if not m or "/src/" not in "/" + m.group(2).lstrip("./"):
        continue
    n += 1
    order_only = m.group(3).split("||", 1)[1] if "||" in m.group(3) else ""
    if "layers_checked.h" not in order_only.split():
        sys.exit("%s compiles without waiting for layers_checked.h" % m.group(2))
if n < 50:
    sys.exit("only %d compiles of src/ found in build.ninja" % n)
print("%d compiles of src/ wait for the check" % n)
PY

echo "ok $TQ_TEST ($TQ_CHECKS checks)"
