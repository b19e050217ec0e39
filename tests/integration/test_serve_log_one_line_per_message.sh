#!/usr/bin/env bash
# Every message in serve.log is one line: control characters in what a
# message quotes (a state directory's path with a newline, a tab, an
# escape) are written as C-style escapes. Before, the path's newline split
# the supervisor's first line in two, so a name could forge a log line, and
# an escape sequence reached whatever terminal showed the log.
. "$(dirname "$0")/lib.sh"

export TASKQ_HOME="$TQ_TMP/s"$'\n'"2026-01-01 00:00:00 taskq supervisor (pid 1): forged"$'\t\033[31m'
assert_exit 0 tq submit --no-start -- true
assert_exit 0 tq serve --workers 1
tq_track "$(cat "$TASKQ_HOME/serve.pid")"
wait_for "grep -q 'started (worker id' \"\$TASKQ_HOME/serve.log\"" 20 ||
	fail "the worker did not start: $(cat -A "$TASKQ_HOME/serve.log")"
assert_exit 0 tq shutdown
wait_for "grep -q 'stopped' \"\$TASKQ_HOME/serve.log\"" 20 || true

check "every line of serve.log starts with its time, none is forged"
while IFS= read -r line; do
	[[ $line =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9:]{8}\ taskq\  ]] ||
		fail "a line that is not a message's start: [$line] in: $(cat -A "$TASKQ_HOME/serve.log")"
	[[ $line == *"(pid 1): forged"* && $line != *'\n2026'* ]] && fail "a forged line: [$line]"
done <"$TASKQ_HOME/serve.log"

check "no control character but the newlines that end lines"
if LC_ALL=C grep -q $'[\001-\011\013-\037\177]' "$TASKQ_HOME/serve.log"; then
	fail "control characters in serve.log: $(cat -A "$TASKQ_HOME/serve.log")"
fi

check "the path is there, escaped"
assert_contains "$(cat "$TASKQ_HOME/serve.log")" 'state directory '"$TQ_TMP"'/s\n2026-01-01 00:00:00 taskq supervisor (pid 1): forged\t\033[31m'
