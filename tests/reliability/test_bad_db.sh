#!/usr/bin/env bash
# test_bad_db.sh - a database or state directory taskq must refuse, each
# with its one-line error and exit 1 (README, "Exit codes"), without
# changing what is stored:
#   - a database with garbage over pages in its middle (not the header,
#     which test_home covers with a file that is not a database at all);
#   - a database from a newer taskq (PRAGMA user_version = 99);
#   - a state directory writable by everyone (test_home covers
#     group-writable), or owned by another user, and a database owned by
#     another user (root only: chown nobody);
#   - a full disk under the whole state directory (a 2 MB tmpfs, root
#     only; test_log_disk covers a full logs/): a submit that does not fit
#     fails on one line and stores nothing, the acknowledged ones stay, and
#     with room again everything runs.
# After each, putting things right shows every task as it was.
#
# How we know it catches what it checks (each tried on a copy of the tree
# in /tmp): db.c's migrate() without its "newer than this taskq" check
# (caught: the error no longer named the newer schema); supervisor.c
# opening the store without TQ_OPEN_CHECK (caught: serve started on the
# damaged database); db.c's check_home() without its mode check (caught:
# 0777 accepted, exit 0).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/lib_serve.sh"
. "$(dirname "$0")/lib_rel.sh"

db="$TASKQ_HOME/taskq.db"
mnt="$TQ_TMP/disk"
_bad_cleanup() {
	local rc=$? h p
	set +e
	# a supervisor that started where it must not have (a bug this test
	# reports) must not outlive the test
	for h in "$TQ_TMP/home" "$mnt/home"; do
		p=$(cat "$h/serve.pid" 2>/dev/null) && [ -n "$p" ] &&
			grep -qa taskq "/proc/$p/cmdline" 2>/dev/null && kill -TERM "$p" 2>/dev/null &&
			wait_for "! _tq_alive $p" 10
	done
	[ -e "$TASKQ_HOME" ] && chown -R "$(id -u)" "$TASKQ_HOME" 2>/dev/null
	[ -e "$TASKQ_HOME" ] && chmod 0700 "$TASKQ_HOME" 2>/dev/null
	mountpoint -q "$mnt" 2>/dev/null && umount -l "$mnt"
	return "$rc"
}
trap '_bad_cleanup; _tq_cleanup' EXIT

# 60 tasks with a 20 KB argument each: about 330 pages of 4 KiB, so that
# "the middle" is well away from the header and the schema.
big=$(head -c 20000 /dev/zero | tr '\0' y)
for i in $(seq 1 60); do
	tq submit --name "t$i" -- echo "$big" "$i" >/dev/null
done
# Fold the WAL into the database file, so its bytes are the whole state.
sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
before=$(rel_digest)
cp -a "$TASKQ_HOME" "$TQ_TMP/saved"
pages=$(sqlite3 "$db" 'PRAGMA page_count')
[ "$pages" -ge 200 ] || fail "the database has only $pages pages"

# Every command here must refuse the state directory the same way.
refused_by_all() {
	local c
	for c in "list" "show 30" "submit true" "status" "log 3" "serve --foreground" "drain"; do
		# shellcheck disable=SC2086
		run timeout 20 "$TASKQ_BIN" $c
		assert_runtime_error "$@"
	done
}

check "garbage over 20 pages in the middle of the database: exit 1, 'corrupt', the file untouched"
# A fixed byte, not random: the same damage every run. 0x5A is no valid
# b-tree page type, and as an overflow page's first word it points past the
# end of the file.
head -c $((20 * 4096)) /dev/zero | tr '\0' 'Z' |
	dd of="$db" bs=4096 seek=$((pages / 2)) conv=notrunc status=none
sum=$(md5sum <"$db")
# A read that reaches the damage says so; which reads do depends on where
# the pages landed, except for one that reads every task with its argv (the
# bulk of the file).
for c in "list --json --limit 1000" "list" "status" "show 30" "log 3"; do
	# shellcheck disable=SC2086
	run timeout 20 "$TASKQ_BIN" $c
	[ "$c" != "list --json --limit 1000" ] && [ "$TQ_RC" -eq 0 ] && continue
	[ "$TQ_RC" -eq 1 ] || fail "$c on a damaged database: exit $TQ_RC, stderr [$(err)]"
	assert_one_line_error
	assert_contains "$(err)" "corrupt" "$c names the damage"
done
# The supervisor checks the whole file before it starts (quick_check).
for c in "serve --foreground" "serve" "drain"; do
	# shellcheck disable=SC2086
	run timeout 20 "$TASKQ_BIN" $c
	[ "$TQ_RC" -eq 1 ] || fail "$c on a damaged database: exit $TQ_RC, stderr [$(err)]"
	assert_contains "$(head -1 "$TQ_ERR")" "database $db is corrupt" "$c names the damage"
	[ "$(wc -l <"$TQ_ERR")" -eq 1 ] || fail "$c on a damaged database: the error is not one line: $(err)"
done
[ ! -e "$TASKQ_HOME/serve.pid" ] || ! _tq_alive "$(cat "$TASKQ_HOME/serve.pid")" ||
	fail "a supervisor runs on the damaged database"
assert_eq "$sum" "$(md5sum <"$db")" "the damaged file was changed"
rm -rf "$TASKQ_HOME"
cp -a "$TQ_TMP/saved" "$TASKQ_HOME"

check "a database from a newer taskq (user_version 99): exit 1 for every command, the file untouched"
version=$(sqlite3 "$db" 'PRAGMA user_version')
sqlite3 "$db" 'PRAGMA user_version = 99; PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
sum=$(md5sum <"$db")
for c in "list" "show 30" "submit true" "status" "log 3" "cancel 3" "remove 3" "wait 3" "serve --foreground" "drain"; do
	# shellcheck disable=SC2086
	run timeout 20 "$TASKQ_BIN" $c
	assert_runtime_error "schema version 99" "newer than this taskq"
done
assert_eq "$sum" "$(md5sum <"$db")" "the newer database was changed"
sqlite3 "$db" "PRAGMA user_version = $version" >/dev/null
assert_eq "$before" "$(rel_digest)" "tasks after the refusals"

check "a state directory writable by everyone: exit 1 naming it, nothing changed"
chmod 0777 "$TASKQ_HOME"
sum=$(md5sum <"$db")
refused_by_all "state directory $TASKQ_HOME" "writable by everyone"
assert_eq "$sum" "$(md5sum <"$db")"
chmod 0700 "$TASKQ_HOME"
assert_eq "$before" "$(rel_digest)" "tasks after the refusals"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	check "a state directory owned by another user (nobody): exit 1 naming it"
	chown nobody "$TASKQ_HOME"
	refused_by_all "state directory $TASKQ_HOME" "owned by uid $(id -u nobody)"
	chown "$(id -u)" "$TASKQ_HOME"
	check "a database owned by another user: exit 1 naming it"
	chown nobody "$db"
	refused_by_all "database $db" "owned by uid $(id -u nobody)"
	chown "$(id -u)" "$db"
	assert_eq "$sum" "$(md5sum <"$db")"
	assert_eq "$before" "$(rel_digest)" "tasks after the refusals"
else
	echo "skipped: another user's state directory (needs root and a user nobody)"
fi

can_mount() {
	[ "$(id -u)" = 0 ] || return 1
	mkdir -p "$mnt"
	mount -t tmpfs -o size=2m,mode=0700 tmpfs "$mnt" 2>/dev/null
}
if ! can_mount; then
	echo "skipped: a full disk (needs root and mount -t tmpfs; not permitted here)"
	exit 0
fi
check "a full disk: the submit that does not fit fails on one line and stores nothing"
export TASKQ_HOME="$mnt/home"
db="$TASKQ_HOME/taskq.db"
ids=()
for i in 1 2 3; do
	ids+=("$(tq submit --name "small$i" -- echo "$i")")
done
# Fill the disk with a file, then submit 100 KB commands until one fails:
# the WAL and the database grow into whatever was left.
dd if=/dev/zero of="$mnt/filler" bs=64k status=none 2>/dev/null || true
arg=$(head -c 100000 /dev/zero | tr '\0' z)
full=0
for i in $(seq 1 40); do
	run tq submit --name "big$i" -- echo "$arg"
	if [ "$TQ_RC" -ne 0 ]; then
		full=1
		break
	fi
	ids+=("$(out)")
done
[ "$full" = 1 ] || fail "40 submits of 100 KB fit on a full 2 MB disk"
assert_runtime_error "taskq: submit: " "disk is full"
assert_eq "" "$(out)" "a failed submit printed an id"
check "the acknowledged tasks are all there, the database is whole"
assert_eq "$(printf '%s\n' "${ids[@]}")" "$(task_ids)" "stored ids"
assert_eq ok "$(rel_integrity)"
assert_exit 0 tq list --json
assert_eq "${#ids[@]}" "$(out | pyjson 'len(d)')"

check "with room again, submits and runs work, and nothing was lost"
rm -f "$mnt/filler"
assert_exit 0 tq submit --name after -- echo after
ids+=("$(out)")
assert_exit 0 tq drain
assert_eq "${#ids[@]}" "$(state_count succeeded)" "succeeded"
assert_eq "after" "$(tq log "${ids[-1]}")"
assert_eq ok "$(rel_integrity)"

check "a disk full for a few seconds under running tasks: they still end as they ran"
serve_start 1
t=$(submit_id --shell "while [ ! -e $TQ_TMP/go ]; do sleep 0.05; done; echo done")
wait_state "$t" running
dd if=/dev/zero of="$mnt/filler" bs=64k status=none 2>/dev/null || true
# Deliberately a fixed time, not a wait for something: the disk stays full
# for 4 leases (the workers' lease is 1 s); then there is room again, and
# only then does the task write its output and end.
sleep 4
rm -f "$mnt/filler"
touch "$TQ_TMP/go"
wait_for "[ \"\$(state_of $t)\" != running ]" 30 || fail "task $t still running"
[ "$(state_of "$t")" = succeeded ] ||
	fail "task $t ended $(state_of "$t") ($(task_field "$t" reason)): a full disk must not get a healthy task killed"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 30 || fail "the supervisor did not stop"
assert_eq ok "$(rel_integrity)"
