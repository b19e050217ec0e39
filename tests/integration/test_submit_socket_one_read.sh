#!/usr/bin/env bash
# A submit through the supervisor's socket: the request and the answer each
# arrive whole, in one write, so each is taken in one read, and the client,
# waiting for its answer, wakes once (issue 21: it read the answer's header,
# polled again, then read its payload; the supervisor read the request in
# two reads too). Counted with strace -y: the reads and polls on the
# socket's fd, in the client and in the supervisor.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

command -v strace >/dev/null || { echo "SKIP: no strace (apt-get install strace)"; exit 77; }
strace -o /dev/null true 2>/dev/null || { echo "SKIP: strace cannot trace here (ptrace refused)"; exit 77; }

serve_start 1
assert_exit 0 tq submit --name warm -- true   # the socket is up and serving

# on_socket FILE CALL: how many CALLs in strace -y's FILE were on a
# unix socket's fd (shown as "3<UNIX-STREAM:[...]>" or "3<socket:[...]>")
# and did not fail with EAGAIN: the supervisor reads a connection as soon
# as it accepts it, which may be before the client (slowed by strace) has
# sent anything; that read finds nothing and is not the request's.
on_socket() {
	grep -E "^([0-9]+ +)?$2\(([0-9]+<(UNIX|socket)|\[\{fd=[0-9]+<(UNIX|socket))" "$1" |
		grep -cv ' = -1 EAGAIN' || true
}

check "the client sends its request in one write and reads its answer in one read, after one poll"
# (LeakSanitizer cannot run under ptrace: off in an ASan build)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -y -e trace=read,recvfrom,recvmsg,poll,ppoll,write,sendto,sendmsg \
	-o "$TQ_TMP/client.trace" "$TASKQ_BIN" submit --name traced -- true >"$TQ_OUT" ||
	fail "submit under strace failed: $(cat "$TQ_OUT")"
assert_exit 0 tq list --json --limit 0
assert_eq 1 "$(out | pyjson 'sum(t["name"] == "traced" for t in d)')" "the traced task stored"
assert_eq 1 "$(($(on_socket "$TQ_TMP/client.trace" write) + $(on_socket "$TQ_TMP/client.trace" sendto)))" \
	"writes of the request"
assert_eq 1 "$(on_socket "$TQ_TMP/client.trace" read)" "reads of the answer"
assert_eq 1 "$(on_socket "$TQ_TMP/client.trace" poll)" "polls for the answer"

check "the supervisor reads the request in one read and answers in one write"
tq_bg strace -y -e trace=read,recvfrom,recvmsg,write,sendto,sendmsg -o "$TQ_TMP/serve.trace" \
	-p "$SERVE_PID"
TRACER=$TQ_LAST_PID
traced() { grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$SERVE_PID/status" 2>/dev/null; }
wait_for traced 10 || { echo "SKIP: strace cannot attach to the supervisor"; exit 77; }
assert_exit 0 tq submit --name served -- true
_tq_signal INT "$TRACER"
wait_for "! _tq_alive $TRACER" 10 || fail "strace did not detach"
assert_eq 1 "$(on_socket "$TQ_TMP/serve.trace" read)" "reads of the request"
assert_eq 1 "$(($(on_socket "$TQ_TMP/serve.trace" write) + $(on_socket "$TQ_TMP/serve.trace" sendto)))" \
	"writes of the answer"
