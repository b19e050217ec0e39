# lib_nodes.sh - helpers for tests of several nodes on one store (issue 20):
# node hN is the state directory $TQ_TMP/nN with TASKQ_NODE=hN. Such a test
# needs the PostgreSQL pass (a SQLite store is one node's): sourcing this
# skips it otherwise. Source after lib.sh.

if [ -z "${TASKQ_DB:-}" ]; then
	echo "SKIP $TQ_TEST: two nodes share a store only in PostgreSQL (the _pg pass)"
	exit 77
fi

# on NODE ARG...: taskq ARG... as node NODE
on() { local node=$1; shift; TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" "$TASKQ_BIN" "$@"; }

# node_workers NODE [idle]: how many of NODE's workers status --json lists
# (with idle: of those, how many run no task)
node_workers() {
	on "$1" status --json | pyjson "sum(1 for w in d['worker_list'] if w['node'] == '$1'$([ "${2:-}" = idle ] && echo " and w['task'] is None"))"
}

# node_serve NODE WORKERS [SERVE-OPTION...]: NODE's foreground supervisor,
# tracked for cleanup, its pid in SERVE_PID, its log $TQ_TMP/serve.NODE.log;
# waits until that many of NODE's workers are listed idle.
node_serve() {
	local node=$1 workers=$2
	shift 2
	TASKQ_NODE=$node TASKQ_HOME="$TQ_TMP/n${node#h}" tq_bg "$TASKQ_BIN" serve --foreground \
		--workers "$workers" "$@" 2>>"$TQ_TMP/serve.$node.log"
	SERVE_PID=$TQ_LAST_PID
	wait_for "[ \"\$(node_workers $node idle)\" -ge $workers ]" 20 ||
		fail "$node's supervisor did not start: $(tail -5 "$TQ_TMP/serve.$node.log")"
}
