# shellcheck shell=bash
# lib_rel.sh - helpers shared by the reliability tests (tests/reliability).
# Source after ../integration/lib.sh and lib_serve.sh.

# meson's exit status for a skipped test
rel_skip() {
	echo "SKIP $TQ_TEST: $*"
	exit 77
}

# 1 when TASKQ_BIN was built with AddressSanitizer (the build-asan run):
# tests that measure throughput run a smaller load there.
rel_is_asan() {
	# not "ldd | grep -q": under pipefail, grep's early exit makes ldd die
	# of SIGPIPE and the pipeline fail
	case "$(ldd "$TASKQ_BIN" 2>/dev/null)" in
	*libasan*) echo 1 ;;
	*) echo 0 ;;
	esac
}

# Pids of live (not zombie) processes whose environment holds "$1" (an
# exact NAME=VALUE entry): the processes of tasks submitted with that
# variable, however deep or detached they are.
rel_marked_procs() {
	local f p
	for f in /proc/[0-9]*/environ; do
		p=${f#/proc/}
		p=${p%/environ}
		[ "$p" = "$$" ] && continue
		if env -u REL_MARK grep -qzxsF -- "$1" "$f" 2>/dev/null && _tq_alive "$p"; then
			echo "$p"
		fi
	done
}

# Kill (SIGKILL) every live process carrying mark $1; used by cleanup so a
# failing test leaves nothing behind.
rel_kill_marked() {
	local p
	for p in $(rel_marked_procs "$1"); do
		kill -KILL "$p" 2>/dev/null || true
	done
}

# The sqlite3 shell's verdict on the test's database.
rel_integrity() {
	sqlite3 "$TASKQ_HOME/taskq.db" 'PRAGMA integrity_check' # SQL: the database itself (its own integrity check)
}

# A digest of everything stored about the tasks and their attempts, read
# through show --json (every byte of argv, name and cwd, with their
# *_base64 copies where they are not UTF-8): equal before and after means
# nothing was lost or changed.
rel_digest() {
	local id
	for id in $(task_ids); do
		"$TASKQ_BIN" show "$id" --json
	done | "$TQ_PYTHON" -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    exact = lambda k: d.get(k + "_base64", d[k])
    print(d["id"], d["state"], exact("name"), exact("argv"), exact("cwd"), d["attempt"],
          d["outcome"] or "")
    for a in d["attempts"]:
        print(d["id"], a["attempt"], a["outcome"] or "")
' | md5sum
}

# The last command (see lib.sh's run/assert_exit) failed the documented way
# for a runtime error: exit 1, one line on stderr, which names the problem
# (every word of "$@" appears in it).
assert_runtime_error() {
	local w
	[ "$TQ_RC" -eq 1 ] || fail "expected exit 1, got $TQ_RC; stderr: [$(err)]"
	assert_one_line_error
	for w in "$@"; do
		assert_contains "$(err)" "$w" "the error names the problem"
	done
}
