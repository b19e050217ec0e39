#!/usr/bin/env bash
# test_store_selection.sh - where the store is: the state directory's
# SQLite file, or a PostgreSQL database named by --db URL, $TASKQ_DB or the
# config file's "database" (issue 20). A URL given where a state directory
# belongs is refused with one line pointing at --db, and nothing is made
# (it made a directory named "postgresql:"); a password in a URL is never
# printed; --node names the node; taskq db migrate says the schema version.
# None of it needs a PostgreSQL server: a store nothing listens for is
# refused on one line (exit 1).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"
unset TASKQ_DB

# A port nothing listens on.
dead="postgresql://tq:hunter2pw@127.0.0.1:1/taskq?connect_timeout=5"

check "a URL as --home or TASKQ_HOME: exit 2, one line naming --db, nothing made"
cd "$TQ_TMP"
assert_exit 2 tq --home postgresql://db1/taskq submit true
assert_one_line_error
assert_contains "$(err)" "--home names a URL, not a state directory" "said"
assert_contains "$(err)" "--db URL" "points at --db"
assert_exit 2 env TASKQ_HOME=postgres://db1/taskq "$TASKQ_BIN" list
assert_one_line_error
assert_contains "$(err)" "TASKQ_HOME names a URL" "the variable named"
assert_eq "" "$(ls "$TQ_TMP" | grep -i postgres)" "no directory named after the URL"
cd - >/dev/null

check "--db that is not a PostgreSQL URL: exit 2, the value not echoed"
assert_exit 2 tq --db mysql://tq:hunter2pw@db1/taskq list
assert_one_line_error
assert_contains "$(err)" "--db: expected a postgresql:// URL" "said"
assert_not_contains "$(err)" "hunter2pw" "no password"
assert_exit 2 env TASKQ_DB=/some/dir "$TASKQ_BIN" list
assert_contains "$(err)" "TASKQ_DB: expected a postgresql:// URL" "TASKQ_DB checked"

check "--db names the store: unreachable is exit 1, one line, the password masked"
assert_exit 1 tq --db "$dead" submit true
assert_one_line_error
assert_contains "$(err)" "cannot connect" "said"
assert_contains "$(err)" "tq:***@127.0.0.1:1" "the URL shown masked"
assert_not_contains "$(err)" "hunter2pw" "no password"
assert_exit 1 env TASKQ_DB="$dead" "$TASKQ_BIN" status
assert_not_contains "$(err)" "hunter2pw" "no password from TASKQ_DB"
assert_exit 1 test -e "$TASKQ_HOME" # nothing made: no state directory, no SQLite file

check "the config file's \"database\" selects it; --db wins; a bad value is exit 2"
mkdir -p "$HOME/.config/taskq"
printf '{"database": "%s"}\n' "$dead" >"$HOME/.config/taskq/config.json"
assert_exit 1 tq list
assert_contains "$(err)" "cannot connect" "the config's database used"
assert_not_contains "$(err)" "hunter2pw" "no password"
printf '{"database": 5}\n' >"$HOME/.config/taskq/config.json"
assert_exit 2 tq list
assert_one_line_error
assert_contains "$(err)" "\"database\": expected a postgresql:// URL" "said"
printf '{"database": null}\n' >"$HOME/.config/taskq/config.json"
assert_exit 0 tq submit true
assert_exit 0 tq help
rm -f "$HOME/.config/taskq/config.json"

check "--node: a bad name is exit 2; a good one is recorded on every attempt"
assert_exit 2 tq --node 'no spaces' list
assert_one_line_error
assert_contains "$(err)" "--node" "names the option"
id=$(submit_id true)
tq_bg "$TASKQ_BIN" --node h7 serve --foreground --workers 1 2>>"$TQ_TMP/serve.log"
wait_state "$id" succeeded
assert_eq h7 "$(tq show "$id" --json | pyjson 'd["attempts"][0]["node"]')" \
	"show --json: a plain task's attempt names its node"
assert_exit 0 tq shutdown

check "taskq db migrate: the SQLite store's version, schema.sql's"
v=$(sed -n 's/^PRAGMA user_version = \([0-9]*\);$/\1/p' "$TASKQ_SRCDIR/schema.sql")
assert_exit 0 tq db migrate
assert_eq "sqlite store: schema version $v" "$(out)"
assert_exit 0 tq db migrate --json
assert_eq "$v|sqlite" "$(out | pyjson 'str(d["schema_version"]) + "|" + d["backend"]')"
assert_exit 2 tq db
assert_one_line_error
assert_exit 2 tq db frobnicate
assert_one_line_error
