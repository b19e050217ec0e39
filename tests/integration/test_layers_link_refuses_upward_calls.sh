#!/usr/bin/env bash
# test_layers_link_refuses_upward_calls.sh - the folders' libraries are
# linked as a group, so a call upward written without the include (the
# callee declared by hand) would link; the build's second check
# (tools/layers.py --archives, top meson.build: layers_linked.txt) refuses
# it: in two libraries built here, the lower one calling a function only
# the upper one defines is refused with one line naming the object, the
# symbol, and the folder and object that define it, and the same call
# downward passes. The build's own libraries pass, in the layers' order.
. "$(dirname "$0")/lib.sh"

: "${TASKQ_LAYERS:?TASKQ_LAYERS must list the layers (tests/meson.build)}"
: "${TASKQ_BUILDDIR:?TASKQ_BUILDDIR must name the build dir (tests/meson.build)}"
read -ra layers <<<"$TASKQ_LAYERS"
cc=${CC:-cc}
command -v "$cc" >/dev/null || fail "no C compiler ($cc)"

# symbols_check LAYER... -- ARCHIVE...: output in $TQ_OUT, status in $TQ_RC
symbols_check() {
	local l=() a=()
	while [ "$1" != -- ]; do l+=("$1"); shift; done
	shift
	a=("$@")
	TQ_RC=0
	"$TQ_PYTHON" "$TASKQ_SRCDIR/tools/layers.py" --layers "${l[@]}" \
		--archives "${a[@]}" >"$TQ_OUT" 2>&1 || TQ_RC=$?
}

cd "$TQ_TMP" || exit 1
# low.c calls tq_up, which up.c defines; down.c calls tq_low
printf 'int tq_up(void);\nint tq_low(void);\nint tq_low(void) { return tq_up(); }\n' >low.c
printf 'int tq_up(void);\nint tq_up(void) { return 1; }\n' >up.c
printf 'int tq_low(void);\nint tq_down(void);\nint tq_down(void) { return tq_low(); }\n' >down.c
for f in low up down; do
	"$cc" -c -o "$f.o" "$f.c" || fail "could not compile $f.c"
done
ar rcs libtaskq_low.a low.o && ar rcs libtaskq_up.a up.o && ar rcs libtaskq_top.a up.o down.o ||
	fail "could not make the archives"

check "a library calling a function of a library above it is refused"
symbols_check low up -- libtaskq_low.a libtaskq_up.a
assert_eq 1 "$TQ_RC" "the check's status: $(cat "$TQ_OUT")"
assert_eq "libtaskq_low.a(low.o): error: uses tq_up, defined in src/up/ (up.o), a folder above src/low/ (the layers, lowest first: low < up)
tools/layers.py: 1 symbol taken from a folder above (the layers: low < up)" "$(cat "$TQ_OUT")"
cat "$TQ_OUT"

check "in the other order they pass; a call downward is never refused"
symbols_check up low -- libtaskq_up.a libtaskq_low.a
assert_eq 0 "$TQ_RC" "up < low: $(cat "$TQ_OUT")"
symbols_check low top -- libtaskq_low.a libtaskq_top.a
assert_eq 1 "$TQ_RC" "low < top, low calling tq_up of top: $(cat "$TQ_OUT")"
assert_contains "$(cat "$TQ_OUT")" "libtaskq_low.a(low.o): error: uses tq_up, defined in src/top/ (up.o)"
assert_eq 1 "$(grep -c ': error: ' "$TQ_OUT")" "only tq_up is refused, not down.o's call of tq_low: $(cat "$TQ_OUT")"

check "the build's libraries pass (${layers[*]})"
archives=()
for l in "${layers[@]}"; do
	a=$TASKQ_BUILDDIR/src/$l/libtaskq_$l.a
	[ -f "$a" ] || fail "no library $a"
	archives+=("$a")
done
symbols_check "${layers[@]}" -- "${archives[@]}"
assert_eq 0 "$TQ_RC" "the build's libraries: $(cat "$TQ_OUT")"
[ -f "$TASKQ_BUILDDIR/layers_linked.txt" ] || fail "the build did not run the check (no layers_linked.txt)"

echo "ok $TQ_TEST ($TQ_CHECKS checks)"
