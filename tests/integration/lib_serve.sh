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

# Workers whose process is alive.
live_workers() {
	local n=0 pid
	for pid in $(tq_sql "select pid from workers where stopped_at is null" 2>/dev/null); do
		_tq_alive "$pid" && n=$((n + 1))
	done
	echo "$n"
}

state_of() { tq_sql "select state from tasks where id = $1"; }
outcome_of() { tq_sql "select coalesce(outcome,'') from tasks where id = $1"; }

# wait_state ID STATE [SECONDS]
wait_state() {
	wait_for "[ \"\$(state_of $1)\" = $2 ]" "${3:-20}" ||
		fail "task $1: expected state $2, it is $(state_of "$1") ($(tq_sql "select reason from tasks where id = $1"))"
}

# The pid of task ID's current attempt, once it has one.
task_pid() {
	tq_sql "select a.pid from attempts a join tasks t on t.id = a.task_id and a.attempt = t.attempt where t.id = $1 and a.pid is not null"
}

# submit_id ARGS...: submit and print the id.
submit_id() {
	"$TASKQ_BIN" submit "$@"
}

# The bytes of task ID's output, rebuilt from its log records (tag, bytes,
# newline; lowercase tags had a newline in the output), for checks that
# do not go through `taskq log`.
log_bytes() {
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
