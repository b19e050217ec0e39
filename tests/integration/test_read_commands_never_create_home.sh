#!/usr/bin/env bash
# A typo in the state directory must not read as an empty queue. Every
# command but submit, serve, drain (and group set, which stores a setting)
# creates nothing: with no state directory, or one that holds no database,
# it exits 2 after one line on stderr that names the path and what chose it
# (--home, TASKQ_HOME, XDG_STATE_HOME or the default), and prints nothing on
# stdout. submit still creates the directory and the database.
. "$(dirname "$0")/lib.sh"

typo="$TQ_TMP/typo"
export TASKQ_HOME="$typo"

# Every command that reads or changes what is stored, as a user would type it.
commands=(
	"list" "list --json" "show 1" "show 1 --json" "log 1" "log 1 --follow"
	"poll 1" "poll 1 --json" "status" "status --json" "wait 1"
	"wait --batch b" "result 1" "stats" "stats --json" "classify 1"
	"batch list" "batch show b" "group list" "session show k" "cancel 1"
	"remove 1" "kill 1" "write 1 data" "retry 1" "retry --failed"
	"pause g" "resume g" "clear --finished" "clear 1" "shutdown"
)

check "no state directory: exit 2, one line naming the path and TASKQ_HOME, nothing created"
for cmd in "${commands[@]}"; do
	# shellcheck disable=SC2086
	assert_exit 2 tq $cmd
	assert_one_line_error
	assert_contains "$(err)" "state directory $typo does not exist" "taskq $cmd"
	assert_contains "$(err)" "(state directory from TASKQ_HOME)" "taskq $cmd"
	assert_eq "" "$(out)" "stdout of taskq $cmd"
	[ ! -e "$typo" ] || fail "taskq $cmd created $typo"
done

check "the message names what chose the path: --home, XDG_STATE_HOME, the default"
assert_exit 2 tq --home "$TQ_TMP/flag" list
assert_contains "$(err)" "state directory $TQ_TMP/flag does not exist (state directory from --home)"
unset TASKQ_HOME
XDG_STATE_HOME="$TQ_TMP/xdg" assert_exit 2 tq list
assert_contains "$(err)" "state directory $TQ_TMP/xdg/taskq does not exist (state directory from XDG_STATE_HOME)"
assert_exit 2 tq status
assert_contains "$(err)" "state directory $HOME/.local/state/taskq does not exist (state directory from the default"
[ ! -e "$TQ_TMP/flag" ] && [ ! -e "$TQ_TMP/xdg" ] && [ ! -e "$HOME/.local" ] ||
	fail "a read command created a state directory"
export TASKQ_HOME="$typo"

check "a state directory that holds no database: the same, naming the database"
mkdir -m 700 "$typo"
for cmd in "list" "status" "show 1" "cancel 1"; do
	# shellcheck disable=SC2086
	assert_exit 2 tq $cmd
	assert_one_line_error
	assert_contains "$(err)" "database $typo/taskq.db does not exist (state directory from TASKQ_HOME)"
done
assert_eq "" "$(ls -A "$typo")" "files created in the state directory"

check "submit creates the directory and the database; the reads then work"
rmdir "$typo"
assert_exit 0 tq submit --no-start -- true
[ -f "$typo/taskq.db" ] || fail "submit did not create the database"
assert_exit 0 tq list --json
assert_eq 1 "$(out | pyjson 'len(d)')"
assert_exit 0 tq status --json
assert_eq 1 "$(out | pyjson 'd["tasks"]["queued"]')"
