#!/usr/bin/env bash
# A directory that is not taskq's (it holds other files and no taskq.db:
# TASKQ_HOME=$HOME, or / as root) is never made a state directory: a submit
# refuses it in one line and changes nothing there (its mode stays: making
# it private took / to 0700 for root, and every other user's access with
# it), and a read command says there is no database without touching it.
# An empty directory, or one holding only taskq's own names, is taken.
. "$(dirname "$0")/lib.sh"

mine="$TQ_TMP/mine"
mkdir -m 755 "$mine"
echo 'export PS1=x' >"$mine/.profile"
mkdir -m 755 "$mine/docs"

check "a submit refuses a directory that holds someone's files, in one line"
assert_exit 1 env TASKQ_HOME="$mine" "$TASKQ_BIN" submit --no-start -- true
assert_one_line_error
assert_contains "$(err)" "state directory $mine holds files that are not taskq's"
assert_contains "$(err)" "choose a new or empty directory"
assert_eq 755 "$(stat -c %a "$mine")" "mode of the refused directory"
assert_eq ".profile docs " "$(ls -A "$mine" | sort | tr '\n' ' ')" "what the refused directory holds"

check "a read command says there is no database and changes nothing"
for cmd in list status "stats"; do
	assert_exit 2 env TASKQ_HOME="$mine" "$TASKQ_BIN" $cmd
	assert_one_line_error
	assert_contains "$(err)" "taskq.db does not exist"
	assert_eq 755 "$(stat -c %a "$mine")" "mode after $cmd"
done
assert_eq ".profile docs " "$(ls -A "$mine" | sort | tr '\n' ' ')"

check "TASKQ_HOME=\$HOME: refused the same way"
chmod 755 "$HOME"
echo x >"$HOME/.bashrc"
assert_exit 1 env TASKQ_HOME="$HOME" "$TASKQ_BIN" submit --no-start -- true
assert_contains "$(err)" "holds files that are not taskq's (\".bashrc\")"
assert_eq 755 "$(stat -c %a "$HOME")"

check "an empty directory is taken, and made private as before"
mkdir -m 755 "$TQ_TMP/empty"
assert_exit 0 env TASKQ_HOME="$TQ_TMP/empty" "$TASKQ_BIN" submit --no-start -- true
assert_eq 700 "$(stat -c %a "$TQ_TMP/empty")"

check "a directory holding only taskq's names (its database removed) is taken"
d="$TQ_TMP/old"
mkdir -m 700 "$d" "$d/logs" "$d/ends"
: >"$d/serve.log"
: >"$d/serve.log.1"
assert_exit 0 env TASKQ_HOME="$d" "$TASKQ_BIN" submit --no-start -- true
assert_eq 1 "$(TASKQ_HOME="$d" "$TASKQ_BIN" list --json | pyjson 'len(d)')"

check "a state directory everything of taskq has run in, its database removed, is taken"
h="$TQ_TMP/used"
TASKQ_HOME="$h" "$TASKQ_BIN" submit --no-start --kill-grace 1s -- sh -c 'sleep 30' >/dev/null
TASKQ_HOME="$h" "$TASKQ_BIN" submit --no-start -- echo ran >/dev/null
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" serve --workers 2
tq_track "$(cat "$h/serve.pid")"
wait_for "[ \"\$(TASKQ_HOME=$h $TASKQ_BIN list --state running,succeeded --json | pyjson 'len(d)')\" = 2 ]" 20 ||
	fail "the tasks did not run: $(TASKQ_HOME="$h" "$TASKQ_BIN" list)"
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" shutdown --now
rm -f "$h"/taskq.db "$h"/taskq.db-*
assert_exit 0 env TASKQ_HOME="$h" "$TASKQ_BIN" submit --no-start -- true
assert_eq "" "$(err)" "what the submit said in $h (holding $(ls -A "$h" | tr '\n' ' '))"

check "a state directory with its database keeps working whatever else it holds"
: >"$d/my-notes.txt"
chmod 755 "$d"
assert_exit 0 env TASKQ_HOME="$d" "$TASKQ_BIN" submit --no-start -- true
assert_contains "$(err)" "made private: state directory $d 0755 -> 0700"
