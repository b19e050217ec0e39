#!/usr/bin/env bash
# A state directory path longer than SQLite can open a database under (469
# bytes, after its links are resolved) is refused in one line naming the
# bound, exit 2, before anything is created; one of 469 bytes works. Before,
# the open failed after every directory of the path was made, with an error
# cut short by the path it quoted ("create: database /tmp/ddd...").
. "$(dirname "$0")/lib.sh"

# A path under $TQ_TMP/p of exactly $1 bytes (components of 100 bytes).
path_of() {
	local h="$TQ_TMP/p" seg
	seg=$(printf 'd%.0s' $(seq 1 100))
	while [ ${#h} -lt $(($1 - 101)) ]; do h="$h/$seg"; done
	while [ ${#h} -lt "$1" ]; do h="${h}e"; done
	echo "$h"
}

for n in 470 4000; do
	check "a $n-byte state directory: one line naming the bound, nothing created"
	h=$(path_of $n)
	assert_eq "$n" "${#h}"
	assert_exit 2 env TASKQ_HOME="$h" "$TASKQ_BIN" submit --no-start -- true
	assert_one_line_error
	assert_contains "$(err)" "state directory path is too long: $n bytes, at most 469"
	[ ! -e "$TQ_TMP/p" ] || fail "created $(find "$TQ_TMP/p" | wc -l) directories"
	assert_exit 2 env TASKQ_HOME="$h" "$TASKQ_BIN" list
	assert_one_line_error
	assert_contains "$(err)" "at most 469"
done

check "a 469-byte state directory works: submit, run, log"
h=$(path_of 469)
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" submit --no-start -- echo far
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" drain --workers 1
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" log 1
assert_eq far "$(out)"

check "through a link, the resolved path is what counts"
ln -s "$h" "$TQ_TMP/short"
assert_exit 0 env TASKQ_HOME="$TQ_TMP/short" "$TASKQ_BIN" log 1
assert_eq far "$(out)"
mkdir "$h/x"
chmod 700 "$h/x"
ln -s "$h/x" "$TQ_TMP/short2"
assert_exit 2 env TASKQ_HOME="$TQ_TMP/short2/ab" "$TASKQ_BIN" submit --no-start -- true
assert_contains "$(err)" "state directory path is too long: 474 bytes"
[ ! -e "$h/x/ab" ] || fail "created $h/x/ab"
