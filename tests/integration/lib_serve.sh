# lib_serve.sh - helpers for tests that run a supervisor. Source after lib.sh.

# Start a foreground supervisor (tracked, so cleanup stops it) and wait until
# it holds its lock and its workers have registered.
serve_start() {
	local workers=${1:-2}
	shift || true
	tq_bg "$TASKQ_BIN" serve --foreground --workers "$workers" --lease 1s "$@" \
		2>>"$TQ_TMP/serve.log"
	SERVE_PID=$TQ_LAST_PID
	wait_for "[ \"\$(live_workers)\" -ge $workers ]" 20 ||
		fail "supervisor did not start: $(cat "$TQ_TMP/serve.log")"
}

# The pids of the workers the store lists (not marked stopped: taskq status
# --json's worker_list), one a line; none before there is a database.
worker_pids() {
	local j
	j=$("$TASKQ_BIN" status --json 2>/dev/null) || return 0
	json_get --in worker_list --each pid <<<"$j"
}

# Workers whose process is alive.
live_workers() {
	local n=0 pid
	for pid in $(worker_pids); do
		_tq_alive "$pid" && n=$((n + 1))
	done
	echo "$n"
}

# The state of task ID (nothing when there is no such task). Read from show
# --json, whose object begins {"id":N,"state":"S", without python: the one
# helper every wait polls.
state_of() {
	local j
	j=$("$TASKQ_BIN" show "$1" --json 2>/dev/null) || return 0
	[[ $j =~ ^\{\"id\":[0-9]+,\"state\":\"([a-z_]+)\" ]] && echo "${BASH_REMATCH[1]}"
	return 0
}
outcome_of() { task_field "$1" outcome; }

# wait_state ID STATE [SECONDS]
wait_state() {
	wait_for "[ \"\$(state_of $1)\" = $2 ]" "${3:-20}" ||
		fail "task $1: expected state $2, it is $(state_of "$1") ($(task_field "$1" reason))"
}

# The pid of task ID's current attempt, once it has one.
# A running task's process is stored up to 50 ms after its spawn (the worker
# writes it with the task's end when the task ends sooner), so a task seen
# running may not have its pid yet: wait for it then, with a deadline.
task_pid() {
	local j p deadline
	deadline=$(($(_tq_now_ms) + 10000))
	while :; do
		j=$("$TASKQ_BIN" show "$1" --json) || return
		p=$(pyjson 'next((a["pid"] for a in d["attempts"] if a["attempt"] == d["attempt"] and a["pid"]), "" if d["state"] == "running" else "-")' <<<"$j")
		if [ "$p" = - ]; then return 0; fi
		if [ -n "$p" ] || [ "$(_tq_now_ms)" -ge "$deadline" ]; then
			printf '%s\n' "$p"
			return 0
		fi
		sleep 0.02
	done
}

# submit_id ARGS...: submit and print the id.
submit_id() {
	"$TASKQ_BIN" submit "$@"
}

# The bytes of task ID's output, rebuilt from its log records (tag, bytes,
# newline; lowercase tags had a newline in the output), for checks that
# do not go through `taskq log`'s printer. A store that keeps the output
# itself (PostgreSQL: TASKQ_DB) has no file: its records come from `taskq
# log --json` (each line's exact bytes, text_base64 when they are not
# UTF-8, and whether a newline followed).
log_bytes() {
	if [ -n "${TASKQ_DB:-}" ]; then
		"$TASKQ_BIN" log "$1" --offset 0 --json | "$TQ_PYTHON" -c '
import base64, json, sys
out = sys.stdout.buffer
for line in sys.stdin:
    r = json.loads(line)
    b = base64.b64decode(r["text_base64"]) if "text_base64" in r else r["text"].encode()
    out.write(b + (b"" if r.get("newline") is False else b"\n"))
'
		return
	fi
	"$TQ_PYTHON" -c '
import sys
data = open(sys.argv[1], "rb").read()
out = sys.stdout.buffer
for rec in data.split(b"\n")[:-1]:
    if rec[:1] in (b"o", b"e"):
        out.write(rec[1:] + b"\n")
    elif rec[:1] in (b"O", b"E"):
        out.write(rec[1:])
' "$TASKQ_HOME/logs/$1.log"
}

# hold_lock [NAME]: another connection (python's sqlite3) takes the write
# lock of the test's database (BEGIN IMMEDIATE) and holds it until
# release_lock NAME, at most 90 s; $TQ_TMP/NAME.held exists while it is
# held. NAME defaults to "lock".
hold_lock() {
	local base="$TQ_TMP/${1:-lock}"
	"$TQ_PYTHON" - "$TASKQ_HOME/taskq.db" "$base" <<'PY' &
import os, sqlite3, sys, time
db, base = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, isolation_level=None, timeout=30) # SQL: the database itself (another connection holds its write lock)
c.execute("BEGIN IMMEDIATE")
open(base + ".held", "w").close()
end = time.monotonic() + 90
while not os.path.exists(base + ".release") and time.monotonic() < end:
    time.sleep(0.02)
c.execute("ROLLBACK")
os.unlink(base + ".held")
PY
	tq_track $!
	wait_for "[ -e '$base.held' ]" 30 || fail "could not take the write lock"
}

release_lock() {
	local base="$TQ_TMP/${1:-lock}"
	touch "$base.release"
	wait_for "[ ! -e '$base.held' ]" 30 || fail "lock not released"
}
