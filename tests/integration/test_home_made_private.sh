#!/usr/bin/env bash
# A state directory (0755) or a database (0644) others could read is made
# private (0700, 0600) by the next command that opens it, which says so in
# one line on stderr, once. A state directory others can write is still
# refused (test_home): they may have replaced the database already.
. "$(dirname "$0")/lib.sh"

check "a 0755 state directory: made 0700, said once on stderr"
mkdir -m 755 "$TASKQ_HOME"
assert_exit 0 tq submit --no-start -- true
assert_one_line_error
assert_contains "$(err)" "others could read your queue; made private: state directory $TASKQ_HOME 0755 -> 0700"
assert_eq 700 "$(stat -c %a "$TASKQ_HOME")"
assert_eq 600 "$(stat -c %a "$TASKQ_HOME/taskq.db")"
assert_exit 0 tq list --json
assert_eq "" "$(err)" "said a second time"

check "a 0644 database (with its -wal and -shm): made 0600, said once"
chmod 644 "$TASKQ_HOME"/taskq.db*
assert_exit 0 tq list --json
assert_eq 1 "$(out | pyjson 'len(d)')" "stdout is the answer alone"
assert_one_line_error
assert_contains "$(err)" "made private: database $TASKQ_HOME/taskq.db 0644 -> 0600"
for f in "$TASKQ_HOME"/taskq.db*; do
	assert_eq 600 "$(stat -c %a "$f")" "mode of $f"
done
assert_exit 0 tq status
assert_eq "" "$(err)"

check "both at once: one line naming both"
chmod 750 "$TASKQ_HOME"
chmod 640 "$TASKQ_HOME/taskq.db"
assert_exit 0 tq show 1 --json
assert_one_line_error
assert_contains "$(err)" "state directory $TASKQ_HOME 0750 -> 0700, database $TASKQ_HOME/taskq.db 0640 -> 0600"

check "a supervisor says it on its terminal too"
chmod 711 "$TASKQ_HOME"
assert_exit 0 tq serve
tq_track "$(cat "$TASKQ_HOME/serve.pid")"
assert_contains "$(err)" "taskq: serve: others could read your queue; made private: state directory $TASKQ_HOME 0711 -> 0700"
assert_exit 0 tq shutdown --now
