#!/usr/bin/env bash
# test_no_sql_in_tests.sh - integration tests (and the reliability tests,
# which share their lib.sh) read what taskq stored through the CLI (`taskq show/list/result/poll/status/group list ... --json`), not
# with SQL, so that the same suite runs against any store backend (issue
# 18). SQL is for the tests of the database itself: a file listed in
# DB_TESTS below, or one line marked "# SQL: the database itself (why)"
# (damaging a row, ageing a timestamp, holding the write lock).
#
# SQL here is a call of tq_sql (lib.sh), of the sqlite3 shell, or python's
# sqlite3.connect( -- on a line that is not a comment.
. "$(dirname "$0")/lib.sh"

cd "$TASKQ_SRCDIR/tests/integration" || exit 1

# Tests of the database itself: any SQL allowed. (Paths from
# tests/integration.)
DB_TESTS=(
	../reliability/test_bad_db.sh # a damaged database, a newer schema, a full disk
)

SQL_RE='(^|[^[:alnum:]_.])(tq_sql|sqlite3)([[:space:]]|$)|sqlite3\.connect\('
MARK_RE='# SQL: the database itself \([^)]+\)'

# sql_lines FILE...: "file:line:text" of each line of SQL in the files
# that is neither a comment nor marked, nor lib.sh's definition of tq_sql.
# shellcheck disable=SC2016 # lib.sh's text, not an expansion
LIB_DEF_RE='^([^:]*/)?lib\.sh:[0-9]+:[[:space:]]*(tq_sql\(\) \{|sqlite3 "\$TASKQ_HOME/taskq\.db" "\$@")$'
sql_lines() {
	grep -HnE "$SQL_RE" "$@" 2>/dev/null |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' |
		grep -vE "$MARK_RE" |
		grep -vE "$LIB_DEF_RE" ||
		true
}

listed() {
	local f=$1 x
	shift
	for x in "$@"; do
		[ "$x" = "$f" ] && return 0
	done
	return 1
}

check "the check finds SQL, and takes a marked line or a comment"
mkdir -p "$TQ_TMP/probe"
cat >"$TQ_TMP/probe/test_x.sh" <<'EOF'
# a comment that names tq_sql and the sqlite3 shell
n=$(tq_sql "select count(*) from tasks")
wait_for "[ \"\$(tq_sql 'select 1')\" = 1 ]"
sqlite3 "$TASKQ_HOME/taskq.db" "select 1"
c = sqlite3.connect(db)
tq_sql "update tasks set umask = null" # SQL: the database itself (schema 4's rows)
tq_sql "update tasks set umask = null" # SQL: the database itself ()
EOF
assert_eq "2 3 4 5 7" "$(sql_lines "$TQ_TMP/probe/test_x.sh" | cut -d: -f2 | tr '\n' ' ' | sed 's/ $//')" \
	"lines of SQL found in a sample"

check "no integration test reads or writes the database with SQL, but the database's own"
bad=
for f in lib*.sh test_*.sh ../reliability/lib*.sh ../reliability/test_*.sh; do
	# this file: its sample and patterns are SQL's text, not its use
	[ "$f" = "$TQ_TEST.sh" ] && continue
	listed "$f" "${DB_TESTS[@]}" && continue
	found=$(sql_lines "$f")
	[ -z "$found" ] || bad+="$found"$'\n'
done
[ -z "$bad" ] || fail "SQL outside the database's own tests (read through taskq ... --json, or mark the line '# SQL: the database itself (why)'):
$bad"

check "every file listed exists"
for f in "${DB_TESTS[@]}"; do
	[ -f "$f" ] || fail "$f is listed in $TQ_TEST.sh but does not exist"
done

echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
