# lib_pg.sh - PostgreSQL outages for the tests of issue 20. Source after
# lib.sh, in a test of the PostgreSQL pass (TASKQ_DB set; it skips
# otherwise):
#
#   pg_own_cluster        a PostgreSQL 15 cluster of this test's own, which it
#                         may stop and restart without touching the cluster
#                         the other tests of the pass share (tests/run's, at
#                         TASKQ_TEST_PG): TASKQ_DB names it from here on.
#                         initdb'd into a directory of its own (owned by the
#                         postgres user when run as root: initdb refuses
#                         root), listening on a unix socket there only, no
#                         TCP port to collide with anyone's; stopped
#                         (immediate) and removed at the test's end.
#   pg_stop [MODE]        pg_ctl stop (fast, smart or immediate), waiting
#   pg_start              pg_ctl start, waiting until it takes connections
#   pg_restart [MODE]     pg_ctl restart, waiting
#   pg_terminate_all      pg_terminate_backend of every connection of taskq
#
#   pg_proxy_start        a proxy (fixtures/pg_proxy.py) in front of the
#                         server TASKQ_DB names: TASKQ_DB goes through it from
#                         here on; pg_proxy CMD gives it a command and waits
#                         for it to hold (cut-after-commit, cut, refuse,
#                         accept); pg_proxy_wait LINE waits for a line of it;
#                         pg_proxy_stop ends it.

if [ -z "${TASKQ_DB:-}" ]; then
	echo "SKIP $TQ_TEST: a PostgreSQL store's outages (the PostgreSQL pass: ${TQ_TEST}_pg)"
	exit 77
fi

TQ_PG_BIN=/usr/lib/postgresql/15/bin

# Run a PostgreSQL program as the cluster's owner.
_tq_pg_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

_tq_pg_ctl() {
	_tq_pg_as_owner "$TQ_PG_BIN/pg_ctl" -D "$TQ_PG_DIR/data" -l "$TQ_PG_DIR/log" -w -t 60 \
		-o "-c listen_addresses= -k $TQ_PG_DIR -p 5432 -c fsync=off -c max_connections=60" \
		"$@" >>"$TQ_PG_DIR/ctl.log" 2>&1
}

_tq_pg_cleanup() {
	[ -n "${TQ_PG_DIR:-}" ] || return 0
	_tq_pg_ctl stop -m immediate
	rm -rf "$TQ_PG_DIR"
}

pg_own_cluster() {
	[ -x "$TQ_PG_BIN/initdb" ] || {
		echo "SKIP $TQ_TEST: PostgreSQL 15's programs are not installed ($TQ_PG_BIN)"
		exit 77
	}
	# not in TQ_TMP: the postgres user must reach it, and a socket's path
	# must be short
	TQ_PG_DIR=$(mktemp -d /tmp/taskq-pg-XXXXXX)
	[ "$(id -u)" -ne 0 ] || chown postgres "$TQ_PG_DIR"
	TQ_CLEANUP_HOOKS+=(_tq_pg_cleanup)
	_tq_pg_as_owner "$TQ_PG_BIN/initdb" -N -A trust -U postgres -D "$TQ_PG_DIR/data" \
		>"$TQ_PG_DIR/initdb.log" 2>&1 || fail "initdb: $(tail -5 "$TQ_PG_DIR/initdb.log")"
	_tq_pg_ctl start || fail "pg_ctl start: $(tail -5 "$TQ_PG_DIR/log")"
	export TASKQ_DB="postgresql:///postgres?host=$TQ_PG_DIR&port=5432&user=postgres"
}

pg_stop() { _tq_pg_ctl stop -m "${1:-fast}" || fail "pg_ctl stop: $(tail -5 "$TQ_PG_DIR/log")"; }
pg_start() { _tq_pg_ctl start || fail "pg_ctl start: $(tail -5 "$TQ_PG_DIR/log")"; }
pg_restart() {
	_tq_pg_ctl restart -m "${1:-fast}" || fail "pg_ctl restart: $(tail -5 "$TQ_PG_DIR/log")"
}

pg_terminate_all() {
	psql -qAtX "$TASKQ_DB" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid != pg_backend_pid() AND backend_type = 'client backend'"
}

pg_proxy_start() {
	local hostport
	hostport=$("$TQ_PYTHON" -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(u.hostname or "localhost", u.port or 5432)' "$TASKQ_DB")
	coproc TQ_PROXY { exec "$TQ_PYTHON" "$TASKQ_FIXTURES/pg_proxy.py" $hostport "$TQ_TMP/proxy.port"; }
	tq_track "$TQ_PROXY_PID"
	wait_for "[ -s '$TQ_TMP/proxy.port' ]" 10 || fail "the proxy did not start"
	TASKQ_DB=$("$TQ_PYTHON" -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
auth = u.netloc.rsplit("@", 1)[0] + "@" if "@" in u.netloc else ""
print(urllib.parse.urlunsplit((u.scheme, "%s127.0.0.1:%s" % (auth, sys.argv[2].strip()),
                               u.path, u.query, u.fragment)))' "$TASKQ_DB" "$(cat "$TQ_TMP/proxy.port")")
	export TASKQ_DB
}

# pg_proxy_wait LINE [SECONDS]: until the proxy prints LINE.
pg_proxy_wait() {
	local line deadline=$(($(_tq_now_ms) + ${2:-10} * 1000))
	while [ "$(_tq_now_ms)" -lt "$deadline" ]; do
		if read -r -t 1 line <&"${TQ_PROXY[0]}"; then
			[ "$line" = "$1" ] && return 0
		fi
	done
	fail "the proxy did not say [$1] within ${2:-10}s"
}

# Close the proxy's stdin: it exits.
pg_proxy_stop() {
	eval "exec ${TQ_PROXY[1]}>&-"
}

pg_proxy() {
	echo "$1" >&"${TQ_PROXY[1]}"
	pg_proxy_wait "ok $1"
}
