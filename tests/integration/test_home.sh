#!/usr/bin/env bash
# test_home.sh - where the state directory is: --home DIR, else
# $TASKQ_HOME, else $XDG_STATE_HOME/taskq, else ~/.local/state/taskq; a
# relative one is made absolute; a refused state directory is a runtime
# error (exit 1) on one line.
. "$(dirname "$0")/lib.sh"

# How many tasks the state directory DIR holds (status --json's counts,
# read there).
count() { TASKQ_HOME=$1 task_count; }

check "TASKQ_HOME"
assert_exit 0 tq submit true
assert_eq 1 "$(count "$TASKQ_HOME")"

check "--home DIR wins over TASKQ_HOME; --home=DIR works too"
assert_exit 0 tq --home "$TQ_TMP/h1" submit true
assert_exit 0 tq --home="$TQ_TMP/h1" submit true
assert_eq 2 "$(count "$TQ_TMP/h1")"
assert_eq 1 "$(count "$TASKQ_HOME")"
assert_exit 0 tq --home "$TQ_TMP/h1" list --json
assert_eq 2 "$(out | pyjson 'len(d)')"

check "XDG_STATE_HOME/taskq without TASKQ_HOME"
assert_exit 0 env -u TASKQ_HOME XDG_STATE_HOME="$TQ_TMP/xdg" "$TASKQ_BIN" submit true
assert_eq 1 "$(count "$TQ_TMP/xdg/taskq")"

check "~/.local/state/taskq without either"
assert_exit 0 env -u TASKQ_HOME -u XDG_STATE_HOME "$TASKQ_BIN" submit true
assert_eq 1 "$(count "$HOME/.local/state/taskq")"
assert_eq 700 "$(stat -c %a "$HOME/.local/state/taskq")"

check "a relative --home is made absolute"
cd "$TQ_TMP"
assert_exit 0 tq --home rel/h submit true
cd - >/dev/null
assert_eq 1 "$(count "$TQ_TMP/rel/h")"

check "a state directory that is a file, or group-writable: exit 1, one line"
touch "$TQ_TMP/afile"
assert_exit 1 tq --home "$TQ_TMP/afile" submit true
assert_one_line_error
assert_contains "$(err)" "taskq: submit: "
mkdir -m 0775 "$TQ_TMP/loose"
chmod 0775 "$TQ_TMP/loose"
assert_exit 1 tq --home "$TQ_TMP/loose" submit true
assert_one_line_error
assert_exit 1 tq --home "$TQ_TMP/loose" list
assert_one_line_error

check "a file that is not a database: exit 1, one line, not overwritten"
mkdir -m 0700 "$TQ_TMP/junk"
head -c 8192 /dev/urandom >"$TQ_TMP/junk/taskq.db"
chmod 600 "$TQ_TMP/junk/taskq.db"
sum=$(md5sum <"$TQ_TMP/junk/taskq.db")
assert_exit 1 tq --home "$TQ_TMP/junk" submit true
assert_one_line_error
assert_exit 1 tq --home "$TQ_TMP/junk" list
assert_one_line_error
assert_eq "$sum" "$(md5sum <"$TQ_TMP/junk/taskq.db")"

check "--home with an empty value is a usage error"
assert_exit 2 tq --home "" list
assert_one_line_error
