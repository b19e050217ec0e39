# lib.sh - helpers for taskq's integration tests (bash). Source it first:
#
#     . "$(dirname "$0")/lib.sh"
#
# Each test gets its own temporary directory holding TASKQ_HOME (the state
# directory) and HOME, removed on exit by a trap that first stops every
# process the test started with tq_bg (TERM to its process group, KILL after
# a deadline), then every process left that belongs to the test, found by
# its environment (a supervisor a submit autostarted, a task whose
# supervisor was KILLed in its grace: _tq_stop_test_procs), also when the
# test failed half-way. Waiting is always a poll with a deadline (wait_for), never a
# fixed sleep. A test says what it checks (check "..."), stops at the first
# failed assertion with a message on stderr, and exits non-zero.
#
# Environment from meson (tests/meson.build): TASKQ_BIN, the built binary;
# TASKQ_SRCDIR; TASKQ_FIXTURES.

set -euo pipefail

: "${TASKQ_BIN:?TASKQ_BIN must name the built taskq binary}"

TQ_TEST=$(basename "$0" .sh)

# The PostgreSQL pass (meson's NAME_pg tests; tests/run starts a throwaway
# cluster and sets TASKQ_TEST_PG): the store in a schema of this test's own
# there, dropped at the end; skipped (exit 77) without a database.
TQ_PG_SCHEMA=
if [ "${TASKQ_TEST_BACKEND:-}" = postgresql ]; then
	if [ -z "${TASKQ_TEST_PG:-}" ]; then
		echo "SKIP $TQ_TEST: TASKQ_TEST_PG names no PostgreSQL database"
		exit 77
	fi
	# not the pid alone: a test killed at its timeout leaves its schema,
	# and a later test may get its pid
	TQ_PG_SCHEMA="tq_it_$$_${RANDOM}${RANDOM}"
	psql -qX -v ON_ERROR_STOP=1 "$TASKQ_TEST_PG" -c "CREATE SCHEMA $TQ_PG_SCHEMA" \
		>/dev/null || exit 1
	case $TASKQ_TEST_PG in *\?*) tq_sep='&' ;; *) tq_sep='?' ;; esac
	export TASKQ_DB="$TASKQ_TEST_PG${tq_sep}options=-csearch_path%3D$TQ_PG_SCHEMA"
else
	unset TASKQ_DB
fi
TQ_TMP=$(mktemp -d "${TMPDIR:-/tmp}/taskq-it-XXXXXX")
TQ_PIDS=()
# Commands cleanup runs once the tracked processes are stopped and before
# the test's other processes are killed (lib_pg.sh stops its cluster).
TQ_CLEANUP_HOOKS=()
TQ_CHECKS=0

# A hermetic environment: nothing from the developer's own queue or home.
export TASKQ_HOME="$TQ_TMP/home"
export HOME="$TQ_TMP/user"
mkdir -p "$HOME"
unset XDG_STATE_HOME TASKQ_SCRUB_ENV NO_COLOR TASKQ_NODE
export LC_ALL=C.UTF-8

# The system python3 when there is one: a version manager's shim (pyenv)
# costs half a second a call, and the tests need only the standard library.
if [ -x /usr/bin/python3 ]; then TQ_PYTHON=/usr/bin/python3; else TQ_PYTHON=python3; fi

# The outputs of the last assert_exit / run.
TQ_OUT="$TQ_TMP/out"
TQ_ERR="$TQ_TMP/err"
TQ_RC=0

# ---------------------------------------------------------------------------
# Processes and cleanup

# Start "$@" in the background in its own session and process group, and
# remember it so cleanup stops it (and everything it started). The pid is
# in TQ_LAST_PID.
tq_bg() {
	setsid "$@" &
	TQ_LAST_PID=$!
	TQ_PIDS+=("$TQ_LAST_PID")
}

# Remember a pid started some other way.
tq_track() {
	TQ_PIDS+=("$1")
}

# Signal a process's group (it leads one when started by tq_bg), or the
# process alone.
_tq_signal() {
	kill "-$1" -- "-$2" 2>/dev/null || kill "-$1" "$2" 2>/dev/null || true
}

# Alive, and not a zombie waiting for us to reap it.
_tq_alive() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}

# Print the pids of live processes that belong to this test: started with
# its HOME or a state directory inside TQ_TMP (supervisors, workers, and
# what a test started, through TASKQ_HOME or HOME), or a task of one
# (TASKQ_TASK_HOME). Found by environment, as tests/run finds stragglers by
# TASKQ_TESTRUN_MARK, because a task leads its own session and an
# autostarted supervisor is nobody's child: neither is in reach of a pid or
# a process group the test knows. Not this shell; env -u keeps the marks
# out of grep's own environment, so grep does not find itself.
_tq_test_procs() {
	local p dir real
	local -a pats=()
	real=$(cd "$TQ_TMP" 2>/dev/null && pwd -P) || real=$TQ_TMP
	for dir in "$TQ_TMP" "$real"; do
		pats+=(-e "TASKQ_HOME=$dir/" -e "TASKQ_TASK_HOME=$dir/" -e "HOME=$dir/")
	done
	env -u HOME -u TASKQ_HOME -u TASKQ_TASK_HOME \
		grep -lzsF "${pats[@]}" /proc/[0-9]*/environ 2>/dev/null |
		while IFS=/ read -r _ _ p _; do
			[[ $p == "$$" || $p == "$BASHPID" ]] || echo "$p"
		done
	# grep fails for a process that went while it read: not our failure
	return 0
}

# Stop every process of the test that is still alive once its tracked
# ones had their chance to exit (a supervisor KILLed in the middle of its
# grace leaves its tasks behind, each in its own session): SIGKILL, with
# the process group of each group leader among them, until none is left,
# within TQ_CLEANUP_SECONDS (a supervisor may fork a worker meanwhile:
# each round finds the new ones).
TQ_CLEANUP_SECONDS=10
_tq_stop_test_procs() {
	local deadline pids p pgid mine
	deadline=$(($(_tq_now_ms) + TQ_CLEANUP_SECONDS * 1000))
	mine=$(ps -o pgid= -p $$ | tr -d ' ')
	while pids=$(_tq_test_procs) && [ -n "$pids" ]; do
		if [ "$(_tq_now_ms)" -ge "$deadline" ]; then
			echo "warning: $TQ_TEST: processes left alive after ${TQ_CLEANUP_SECONDS}s:" >&2
			# shellcheck disable=SC2086
			ps -o pid,ppid,pgid,stat,args -p "$(echo $pids | tr ' ' ,)" >&2
			return 1
		fi
		for p in $pids; do
			# a group leader takes its group along: a task's children
			# that cleared their environment are still in it
			pgid=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')
			[ "$pgid" = "$p" ] && [ "$pgid" != "$mine" ] && kill -KILL -- "-$p" 2>/dev/null
			kill -KILL "$p" 2>/dev/null
		done
		sleep 0.05
	done
	return 0
}

# Task cgroups of the test's state directory still there (a supervisor
# killed with its workers and not restarted): kill what they hold, remove
# them. taskq names them taskq.<dev>.<ino>.<task>.<attempt> (cgroup.h), in
# the cgroup of the supervisor, which is the test's.
_tq_cgroups_cleanup() {
	local id mnt root rel g
	id=$(stat -c '%d.%i' "$TASKQ_HOME" 2>/dev/null) || return 0
	read -r root mnt < <(awk '$0 ~ / - cgroup2 / { print $4, $5; exit }' /proc/self/mountinfo) || return 0
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	[ "$root" = / ] || rel=${rel#"$root"}
	for g in "$mnt${rel%/}"/taskq."$id".*; do
		[ -d "$g" ] || continue
		echo 1 >"$g/cgroup.kill" 2>/dev/null
		wait_for "grep -q 'populated 0' '$g/cgroup.events'" 5 2>/dev/null
		find "$g" -depth -type d -exec rmdir {} + 2>/dev/null
	done
}

_tq_cleanup() {
	local rc=$? pid hook
	set +e
	for pid in "${TQ_PIDS[@]}"; do
		_tq_signal TERM "$pid"
	done
	for pid in "${TQ_PIDS[@]}"; do
		wait_for "! _tq_alive $pid" 5 2>/dev/null
		# KILL the group even when its leader is gone: a straggler that
		# ignored TERM must not outlive the test
		_tq_signal KILL "$pid"
		wait "$pid" 2>/dev/null
	done
	for hook in "${TQ_CLEANUP_HOOKS[@]}"; do
		eval "$hook"
	done
	_tq_stop_test_procs
	_tq_cgroups_cleanup
	# Sanitizer reports of background processes (supervisor, workers) go to
	# their log, not to our exit status: any report fails the test.
	if [ -f "$TQ_TMP/serve.log" ] &&
		grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$TQ_TMP/serve.log"; then
		echo "FAIL: $TQ_TEST: sanitizer report from a background process:" >&2
		grep -E -A20 'AddressSanitizer|LeakSanitizer|runtime error:' "$TQ_TMP/serve.log" | head -40 >&2
		[ "$rc" -eq 0 ] && rc=1
	fi
	rm -rf "$TQ_TMP"
	[ -z "$TQ_PG_SCHEMA" ] ||
		psql -qX "$TASKQ_TEST_PG" -c "DROP SCHEMA IF EXISTS $TQ_PG_SCHEMA CASCADE" \
			>/dev/null 2>&1
	if [ "$rc" -eq 0 ]; then
		echo "PASS $TQ_TEST ($TQ_CHECKS checks)"
	else
		echo "FAIL $TQ_TEST (exit $rc)" >&2
	fi
	exit "$rc"
}
trap _tq_cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# Waiting

# Milliseconds on a clock that only moves forward for our purposes.
_tq_now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# wait_for 'COMMAND' SECONDS: evaluate COMMAND until it succeeds, polling
# every 20 ms, and fail (return 1, with a message) when the deadline passes.
wait_for() {
	local cond=$1 deadline
	deadline=$(($(_tq_now_ms) + ${2:-10} * 1000))
	while ! eval "$cond" >/dev/null 2>&1; do
		if [ "$(_tq_now_ms)" -ge "$deadline" ]; then
			echo "wait_for: timed out after ${2:-10}s: $cond" >&2
			return 1
		fi
		sleep 0.02
	done
}

# ---------------------------------------------------------------------------
# Assertions

# Say what the next assertions check.
check() {
	TQ_CHECKS=$((TQ_CHECKS + 1))
	echo "--- $*"
}

fail() {
	echo "FAIL: $TQ_TEST: $*" >&2
	exit 1
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
	if [ "$1" != "$2" ]; then
		fail "${3:-values differ}: expected [$1], got [$2]"
	fi
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains() {
	case "$1" in
	*"$2"*) ;;
	*) fail "${3:-missing text}: [$2] not in [$1]" ;;
	esac
}

# assert_not_contains HAYSTACK NEEDLE [WHAT]
assert_not_contains() {
	case "$1" in
	*"$2"*) fail "${3:-unexpected text}: [$2] found in [$1]" ;;
	esac
}

# run CMD...: run it, keeping stdout in $TQ_OUT, stderr in $TQ_ERR and the
# exit status in $TQ_RC, without stopping the test on failure.
run() {
	if "$@" >"$TQ_OUT" 2>"$TQ_ERR"; then TQ_RC=0; else TQ_RC=$?; fi
}

# assert_exit CODE CMD...: run CMD and require its exit status; its output
# stays in $TQ_OUT / $TQ_ERR (out / err print them).
assert_exit() {
	local want=$1
	shift
	run "$@"
	if [ "$TQ_RC" -ne "$want" ]; then
		fail "expected exit $want, got $TQ_RC from: $* ; stdout: [$(cat "$TQ_OUT")] stderr: [$(cat "$TQ_ERR")]"
	fi
}

out() { cat "$TQ_OUT"; }
err() { cat "$TQ_ERR"; }

# The last command wrote exactly one line to stderr (an error's whole form).
assert_one_line_error() {
	local n
	n=$(wc -l <"$TQ_ERR")
	assert_eq 1 "$n" "lines on stderr ($(err))"
	assert_contains "$(err)" "taskq: " "error prefix"
}

# ---------------------------------------------------------------------------
# taskq, its database, and JSON

tq() { "$TASKQ_BIN" "$@"; }

# True when TASKQ_BIN was built with AddressSanitizer (the build-asan run).
# Not "ldd | grep -q": under pipefail, grep's early exit can kill ldd with
# SIGPIPE and fail the pipeline, so the answer would depend on timing.
tq_is_sanitized() {
	case "$(ldd "$TASKQ_BIN" 2>/dev/null)" in
	*libasan*) return 0 ;;
	*) return 1 ;;
	esac
}

# Query the test's database with the sqlite3 shell.
tq_sql() {
	sqlite3 "$TASKQ_HOME/taskq.db" "$@"
}

# The bytes of the arguments as the store keeps argv ("a\0b\0"), in
# upper-case hex like sqlite's hex().
hex_args() {
	printf '%s\0' "$@" | od -An -v -tx1 | tr -d ' \n' | tr a-f A-F
}

# pyjson EXPR < FILE: evaluate a Python expression over the JSON document d
# (base64 and json are imported); prints str() of the result, or the JSON
# text of lists and dicts. Fails on input that is not JSON.
pyjson() {
	"$TQ_PYTHON" -c '
import base64, json, sys
d = json.load(sys.stdin)
r = eval(sys.argv[1])
print(json.dumps(r) if isinstance(r, (list, tuple, dict, bool)) or r is None else r)
' "$1"
}

# ---------------------------------------------------------------------------
# What was stored, read through the CLI's --json (issue 18)
#
# Tests read results as a user's script does, through `taskq ... --json`,
# never with SQL: the same suite then runs against any store backend.
# tq_sql is for the tests of the database itself (a damaged database, a
# migration), each use on a line marked "# SQL: the database itself (why)";
# test_no_sql_in_tests checks that no other test calls it.

# The test's own stderr, for a message from inside a redirected wait_for.
exec {TQ_STDERR_FD}>&2

# json_get [--in PATH] [--where KEY VALUE] [--each] [--null K1,K2...] PATH... < JSON
# The values at each PATH of the JSON document on stdin, on one line joined
# by '|' as sqlite3 joins columns. A PATH is keys and array indexes
# separated by '.' ("attempts.0.outcome", "tasks.queued"; -1 is the last
# item; "" the document itself). null prints as the empty string (as
# sqlite3 prints NULL), true and false as themselves, lists and objects as
# their JSON text. A key that is absent is an error -- a typo must not read
# as null -- unless it ends in '?' ("agent_session?": fields a document
# has only sometimes, as an attempt's result fields): then it prints empty.
# Such a path fails the whole test (TERM to the test's shell, also from a
# $(...) or a wait_for condition), and prints "<json_get: ...>" so that no
# comparison on the way can pass; input that is not JSON returns 1.
#   --in PATH          go to PATH first
#   --where KEY VALUE  there, an array: the first element whose KEY prints
#                      as VALUE; no line at all when none does
#   --each             there, an array: one line per element
#   --null K1,K2...    in what is picked, these keys read as null when absent
json_get() {
	"$TQ_PYTHON" -c '
import json, sys

def fail(msg, rc=3):
    print("<json_get: %s>" % msg)
    print("json_get: %s" % msg, file=sys.stderr)
    sys.exit(rc)

def get(v, path):
    for k in path.split(".") if path != "" else []:
        opt = k.endswith("?")
        k = k.rstrip("?")
        if isinstance(v, dict) and k in v:
            v = v[k]
        elif isinstance(v, list) and k.lstrip("-").isdigit() and -len(v) <= int(k) < len(v):
            v = v[int(k)]
        elif opt:
            return None
        else:
            fail("no %s in %s" % (k, json.dumps(v)[:200]))
    return v

def text(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)

args = sys.argv[1:]
at, where, each, nulls = "", None, False, []
while args and args[0] in ("--in", "--where", "--each", "--null"):
    if args[0] == "--in":
        at, args = args[1], args[2:]
    elif args[0] == "--where":
        where, args = (args[1], args[2]), args[3:]
    elif args[0] == "--null":
        nulls, args = args[1].split(","), args[2:]
    else:
        each, args = True, args[1:]
try:
    d = json.load(sys.stdin)
except ValueError as e:
    fail("not JSON: %s" % e, 1)
d = get(d, at)
items = [d]
if where is not None or each:
    if not isinstance(d, list):
        fail("not an array: %s" % json.dumps(d)[:200])
    items = d
    if where is not None:
        items = [x for x in d if text(get(x, where[0])) == where[1]][:1]
for x in items:
    if isinstance(x, dict):
        x = dict({k: None for k in nulls}, **x)
    print("|".join(text(get(x, p)) for p in args))
' "$@" && return 0
	local rc=$?
	if [ "$rc" -eq 3 ]; then
		echo "FAIL: $TQ_TEST: json_get $*: a path that names nothing" >&"$TQ_STDERR_FD"
		kill -TERM $$
	fi
	return "$rc"
}

# tq_json CMD... -- PATH...: run taskq CMD... (which prints JSON: put
# --json in it) and print json_get PATH... of its output. The last "--"
# separates the command from the paths. Fails (with taskq's stderr) when
# taskq does.
tq_json() {
	local -a cmd=() paths=()
	local i sep=0 j
	for ((i = $#; i > 0; i--)); do
		[ "${!i}" = -- ] && { sep=$i; break; }
	done
	[ "$sep" -gt 0 ] || { echo "<tq_json: no -- before the paths>"; return 1; }
	cmd=("${@:1:sep-1}")
	paths=("${@:sep+1}")
	j=$("$TASKQ_BIN" "${cmd[@]}") || return
	json_get "${paths[@]}" <<<"$j"
}

# task_field ID PATH...: fields of `taskq show ID --json` ("state",
# "reason", "group", "after", "attempts.-1.pid", ...).
task_field() {
	local id=$1
	shift
	tq_json show "$id" --json -- "$@"
}

# The fields show --json gives an attempt only when it has an agent's
# result: attempt_field and attempts_of read them as null without one, as
# the store holds them.
TQ_RESULT_FIELDS=result,is_error,subtype,agent_session,model,duration_ms,num_turns
TQ_RESULT_FIELDS+=,input_tokens,output_tokens,cache_read_tokens,cache_creation_tokens,cost_usd

# attempt_field ID N PATH...: fields of task ID's attempt N (its number;
# "last": the latest), from show --json; no line when it has none yet.
attempt_field() {
	local id=$1 n=$2 j
	shift 2
	j=$("$TASKQ_BIN" show "$id" --json) || return
	if [ "$n" = last ]; then
		json_get --in attempts --each --null "$TQ_RESULT_FIELDS" "$@" <<<"$j" | tail -n 1
	else
		json_get --in attempts --where attempt "$n" --null "$TQ_RESULT_FIELDS" "$@" <<<"$j"
	fi
}

# retry_wait ID N: how long task ID's attempt N was to wait for its retry
# (retry_at - ended_at, in ms); empty when it has no retry time.
# retry_gap ID N: how long after that retry time attempt N + 1 started (ms;
# negative: before it); empty when either is missing.
retry_wait() { _tq_attempt_diff "$1" "$2" retry_at "$2" ended_at; }
retry_gap() { _tq_attempt_diff "$1" $(($2 + 1)) started_at "$2" retry_at; }
_tq_attempt_diff() {
	local j
	j=$("$TASKQ_BIN" show "$1" --json) || return
	"$TQ_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
att = {a["attempt"]: a for a in d["attempts"]}
x = att.get(int(sys.argv[1]), {}).get(sys.argv[2])
y = att.get(int(sys.argv[3]), {}).get(sys.argv[4])
print("" if x is None or y is None else x - y)
' "${@:2}" <<<"$j"
}

# attempts_of ID PATH...: each attempt of task ID, oldest first, one line
# each ("failed|rate_limit" for attempts_of ID outcome category).
attempts_of() {
	local id=$1
	shift
	tq_json show "$id" --json -- --in attempts --each --null "$TQ_RESULT_FIELDS" "$@"
}

# attempt_count ID: how many attempts task ID has.
attempt_count() {
	local j
	j=$("$TASKQ_BIN" show "$1" --json) || return
	"$TQ_PYTHON" -c 'import json, sys; print(len(json.load(sys.stdin)["attempts"]))' <<<"$j"
}

# task_ids [LIST-OPTION...]: the ids of the tasks `taskq list` shows with
# those options (--batch B, --state S, --group G, ...), oldest first, one
# a line; every such task, not the 50 newest.
task_ids() {
	local j
	j=$("$TASKQ_BIN" list --json --limit 0 "$@") || return
	"$TQ_PYTHON" -c '
import json, sys
for t in reversed(json.load(sys.stdin)):
    print(t["id"])
' <<<"$j"
}

# task_count [LIST-OPTION...]: how many tasks those are (without options:
# every task, summed from status --json's counts by state).
task_count() {
	local j
	if [ "$#" -eq 0 ]; then
		j=$("$TASKQ_BIN" status --json) || return
		pyjson 'sum(d["tasks"].values())' <<<"$j"
		return
	fi
	j=$("$TASKQ_BIN" list --json --limit 0 "$@") || return
	"$TQ_PYTHON" -c 'import json, sys; print(len(json.load(sys.stdin)))' <<<"$j"
}

# group_field NAME PATH...: fields of group NAME in `taskq group list
# --json`; no line when there is no such group.
group_field() {
	local name=$1
	shift
	tq_json group list --json -- --where name "$name" "$@"
}

# task_env ID: the environment stored for task ID, one "K=V" per line, its
# exact bytes (show --json --show-env: nothing masked; env_base64 when a
# value is not UTF-8).
task_env() {
	local j
	j=$("$TASKQ_BIN" show "$1" --json --show-env) || return
	"$TQ_PYTHON" -c '
import base64, json, sys
d = json.load(sys.stdin)
env = [base64.b64decode(v) for v in d["env_base64"]] if "env_base64" in d \
    else [v.encode() for v in d["env"]]
for v in env:
    sys.stdout.buffer.write(v + b"\n")
' <<<"$j"
}

# task_argv_hex [--list] ID: task ID's argv as the store keeps it
# ("a\0b\0"), in upper-case hex, to compare with hex_args: every byte, from
# show --json (argv_base64 when an argument is not UTF-8); with --list, from
# its entry in list --json, which the store reads another way.
task_argv_hex() {
	local j
	if [ "$1" = --list ]; then
		j=$("$TASKQ_BIN" list --json --limit 0) || return
		shift
	else
		j=$("$TASKQ_BIN" show "$1" --json) || return
	fi
	"$TQ_PYTHON" -c '
import base64, json, sys
d = json.load(sys.stdin)
if isinstance(d, list):
    d = next(t for t in d if t["id"] == int(sys.argv[1]))
argv = [base64.b64decode(v) for v in d["argv_base64"]] if "argv_base64" in d \
    else [v.encode() for v in d["argv"]]
print(b"".join(a + b"\0" for a in argv).hex().upper())
' "$1" <<<"$j"
}

# ---------------------------------------------------------------------------
# json2's helpers (issue 18): whether a task is there, the workers that
# hold tasks, counts by state -- read through --json as the rest.

# task_exists ID: 1 when taskq show has task ID, 0 when it says there is no
# such task (as a count of its rows did); anything else fails the caller.
task_exists() {
	local e
	if e=$("$TASKQ_BIN" show "$1" --json 2>&1 >/dev/null); then
		echo 1
		return 0
	fi
	case $e in
	*"task $1: no such task"*) echo 0 ;;
	*)
		echo "<task_exists $1: $e>"
		return 1
		;;
	esac
}

# state_count STATE: how many tasks are in STATE (status --json's counts).
state_count() {
	tq_json status --json -- "tasks.$1"
}

# worker_field WID PATH...: fields of the worker whose id is WID (show
# --json's worker_id) in status --json's worker_list, which lists the
# workers not stopped; no line when it is not there.
worker_field() {
	local w=$1
	shift
	tq_json status --json -- --in worker_list --where id "$w" "$@"
}

# task_worker_pid ID: the pid of the worker task ID's lease names (its
# worker_id); nothing when it has none.
task_worker_pid() {
	local w
	w=$(task_field "$1" worker_id) || return
	[ -z "$w" ] || worker_field "$w" pid
}

# running_worker_pid ID: the pid of the worker that says it runs task ID
# (worker_list's task, from its heartbeat); nothing when none does.
running_worker_pid() {
	tq_json status --json -- --in worker_list --where task "$1" pid
}
