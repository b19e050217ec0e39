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

# Every task's show --json, oldest first, as one JSON array, without its
# environment (env, env_base64: most of its bytes, which no check here
# reads): what a test of thousands of tasks checks their attempts in. Read
# by taskq show ID... (xargs keeps each call within the argument limit): a
# show a task would cost a process start each, 2,200 of them ~16 s on this
# 2-core machine, 440 ~12 s in the sanitizer build.
rel_shows() {
	task_ids | xargs -r "$TASKQ_BIN" show --json | "$TQ_PYTHON" -c '
import json, sys
drop = ("env", "env_base64")
# (dumps: dump encodes in python, three times slower)
sys.stdout.write(json.dumps([{k: v for k, v in json.loads(l).items() if k not in drop}
                             for l in sys.stdin]))
'
}

# A digest of everything stored about the tasks and their attempts, read
# through show --json (every byte of argv, name and cwd, with their
# *_base64 copies where they are not UTF-8): equal before and after means
# nothing was lost or changed.
rel_digest() {
	rel_shows | "$TQ_PYTHON" -c '
import json, sys
for d in json.load(sys.stdin):
    exact = lambda k: d.get(k + "_base64", d[k])
    print(d["id"], d["state"], exact("name"), exact("argv"), exact("cwd"), d["attempt"],
          d["outcome"] or "")
    for a in d["attempts"]:
        print(d["id"], a["attempt"], a["outcome"] or "")
' | md5sum
}

# rel_count_not STATE...: how many tasks are in none of these states, from
# status --json's counts by state. Read in bash, not python: a loop that
# polls it on a loaded machine pays what taskq status costs (~3 ms of CPU),
# not a python start (~25 ms) besides. Fails when status does (printing
# nothing) or its counts do not read as counts (printing "<rel_count_not:
# ...>", which no comparison takes).
rel_count_not() {
	local j kv n=0 s
	j=$("$TASKQ_BIN" status --json) || return
	[[ $j =~ \"tasks\":\{([^}]*)\} ]] || { echo "<rel_count_not: no tasks in status --json>"; return 1; }
	IFS=, read -ra kv <<<"${BASH_REMATCH[1]}"
	for s in "${kv[@]}"; do
		[[ $s =~ ^\"([a-z_]+)\":([0-9]+)$ ]] || { echo "<rel_count_not: $s>"; return 1; }
		[[ " $* " == *" ${BASH_REMATCH[1]} "* ]] || n=$((n + BASH_REMATCH[2]))
	done
	echo "$n"
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
