#!/usr/bin/env bash
# A process killed while it creates the database (made whole under
# taskq.db.new-PID-START, then linked into place) leaves that file and its
# -journal/-wal/-shm behind; the next open of the state directory, by any
# command, removes them once their creator is gone, checked by its pid AND
# its start time (a pid reused by another process is not the creator), and
# never while the creator runs.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null; then
	echo "SKIP: no strace (apt-get install strace) to kill a creator in its link(2)"
	exit 77
fi
if ! strace -f -o /dev/null true 2>/dev/null; then
	echo "SKIP: strace cannot trace here (ptrace refused)"
	exit 77
fi

leftovers() { (cd "$TASKQ_HOME" && ls -A | grep '^taskq\.db\.new-' || true) | sort | tr '\n' ' '; }
start_of() { local s; s=$(cat "/proc/$1/stat"); s=${s##*) }; set -- $s; echo "${20}"; }

check "a creator SIGKILLed at its link(2) leaves taskq.db.new-PID-START"
run strace -f -o /dev/null -e trace=link -e inject=link:signal=SIGKILL \
	"$TASKQ_BIN" submit --no-start -- true
assert_eq 137 "$TQ_RC" "exit of the killed creator"
[ ! -e "$TASKQ_HOME/taskq.db" ] || fail "taskq.db was linked"
left=$(leftovers)
[ -n "$left" ] || fail "nothing left behind to clean: $(ls -A "$TASKQ_HOME")"

check "a creator SIGKILLed at its first sync leaves its journal too"
run strace -f -o /dev/null -e trace=fdatasync,fsync -e inject=fdatasync,fsync:signal=SIGKILL \
	"$TASKQ_BIN" submit --no-start -- true
assert_eq 137 "$TQ_RC" "exit of the killed creator"
assert_contains "$(leftovers)" "-journal" "a killed creator's side file"

check "a live creator's files, and a name that is not ours, are left alone"
tq_bg sleep 300
live=$TQ_LAST_PID
wait_for "[ -r /proc/$live/stat ]" 5
mine="taskq.db.new-$live-$(start_of "$live")"
: >"$TASKQ_HOME/$mine"
: >"$TASKQ_HOME/$mine-wal"
: >"$TASKQ_HOME/taskq.db.new-notours"
# the older name, without a start time: gone only when its pid is
: >"$TASKQ_HOME/taskq.db.new-$live"
# the live pid with another start time: its creator is gone (a reused pid)
: >"$TASKQ_HOME/taskq.db.new-$live-1"
: >"$TASKQ_HOME/taskq.db.new-$live-1-shm"

check "the next open (a read command) removes what gone creators left"
assert_exit 2 tq list
assert_contains "$(err)" "does not exist"
assert_eq "taskq.db.new-$live $mine $mine-wal taskq.db.new-notours " "$(leftovers)" "left after a read"

check "a submit creates the database beside a live creator's file"
assert_exit 0 tq submit --no-start -- true
assert_eq "taskq.db.new-$live $mine $mine-wal taskq.db.new-notours " "$(leftovers)" "left after a submit"

check "once its creator is gone, the next open removes its files"
kill -KILL "$live"
wait_for "! _tq_alive $live" 10
assert_exit 0 tq list --json
assert_eq "taskq.db.new-notours " "$(leftovers)" "left after its creator died"
