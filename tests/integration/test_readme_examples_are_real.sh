#!/usr/bin/env bash
# test_readme_examples_are_real.sh - the README's console examples are what
# the built binary prints.
#
# Every console block of README.md marked `<!-- tour: SESSION -->` is run
# by readme_tour.py (beside this file; it says how) in a fresh directory,
# command by command, and its output compared with the README's after
# normalising times, durations and pids. A behaviour change that alters
# an example fails here until the README says what the binary does; to
# refresh the examples from a build:
#
#     python3 tests/integration/readme_tour.py build/src/cli/taskq README.md --write
#
# then read the diff: it is what users will see.
#
# The examples of two nodes on one PostgreSQL store (session "nodes") run
# in the PostgreSQL pass (readme_examples_are_real_pg), at the schema lib.sh
# makes, and only they: the others are the SQLite pass's. To refresh them,
# TASKQ_DB=URL and `--only nodes` with --write.
. "$(dirname "$0")/lib.sh"

only=()
[ -n "${TASKQ_DB:-}" ] && only=(--only nodes)
check "every marked example of README.md is the binary's real output"
if ! "$TQ_PYTHON" "$(dirname "$0")/readme_tour.py" "$TASKQ_BIN" \
	"$TASKQ_SRCDIR/README.md" "${only[@]}" >"$TQ_OUT" 2>&1; then
	grep -v '^ok ' "$TQ_OUT" >&2
	fail "README examples differ from what taskq prints (refresh: readme_tour.py --write)"
fi
grep -q '^ok  ' "$TQ_OUT" || fail "readme_tour ran no example"
