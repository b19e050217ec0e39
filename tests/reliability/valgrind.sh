#!/usr/bin/env bash
# valgrind.sh TEST - run integration test tests/integration/TEST.sh with
# every taskq command it runs under valgrind memcheck (valgrind-taskq in
# place of TASKQ_BIN), and fail if the test fails or any process reported
# an invalid access, a use of uninitialised memory or a leak. Registered in
# tests/reliability/meson.build for the CLI's integration tests in the
# normal (not sanitized) build; skipped when valgrind is missing.
#
# How we know it catches what it checks (tried on a copy of the tree in
# /tmp): a leak added to main() (an unfreed strdup) was reported as
# "definitely lost" in each of test_home's 13 taskq processes, and the test
# failed although test_home itself passed.
set -uo pipefail
test=$1
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
: "${TASKQ_BIN:?TASKQ_BIN must name the built taskq binary}"
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP valgrind $test: valgrind is not installed (Debian: apt-get install valgrind)"
	exit 77
fi
if [[ $(ldd "$TASKQ_BIN" 2>/dev/null) == *libasan* ]]; then
	echo "SKIP valgrind $test: $TASKQ_BIN is built with ASan (valgrind needs the normal build)"
	exit 77
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/taskq-vg-XXXXXX")
trap 'rm -rf "$logs"' EXIT
export TASKQ_VG_REAL=$TASKQ_BIN TASKQ_VG_LOGS=$logs
export TASKQ_BIN=$here/valgrind-taskq
start=$SECONDS
bash "$here/../integration/$test.sh"
rc=$?
n=$(find "$logs" -name 'vg.*.log' | wc -l)
bad=$(find "$logs" -name 'vg.*.log' -size +0 | sort)
echo "valgrind $test: $n taskq processes checked in $((SECONDS - start))s"
if [ -n "$bad" ]; then
	echo "FAIL valgrind $test: memcheck reported errors in $(echo "$bad" | wc -l) processes:" >&2
	for f in $(echo "$bad" | head -3); do
		echo "--- $f" >&2
		head -60 "$f" >&2
	done
	exit 1
fi
[ "$rc" -eq 0 ] || echo "FAIL valgrind $test: the test itself failed (exit $rc) under valgrind" >&2
exit "$rc"
