#!/usr/bin/env bash
# test_submit_versions.sh - the submit socket across taskq versions (wire.h,
# "Versions"). After an upgrade the supervisor still running is the old
# binary, and a script may still run an old client against a new one:
#   - a newer client whose request the supervisor cannot read (it answers
#     ERR "wire: ...", storing nothing) stores the task itself, once, and
#     says on one line why; with TASKQ_SUBMIT_VIA=supervisor it fails (1);
#   - an older client's request (version 1: no fields after the token) is
#     stored by a new supervisor, the fields it did not send at their
#     defaults (umask unknown, no stall timeout).
# The old supervisor is played by a small server answering exactly what
# taskq's version 1 decoder answers a version 2 request; the old client's
# request is a version 2 request cut back to version 1's fields, which is
# what a version 1 client sends (version 2 keeps version 1 as its prefix).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

SOCK="$TASKQ_HOME/submit.sock"
FRAME="$TQ_TMP/frame.bin"
mkdir -p "$TASKQ_HOME"
chmod 700 "$TASKQ_HOME"

# The old supervisor: listen on SOCK, keep each request frame in FRAME.N and
# answer it as a version 1 supervisor does; "ready" on stdout once it
# listens.
cat >"$TQ_TMP/old_supervisor.py" <<'PY'
import os, socket, struct, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
print("ready", flush=True)
n = 0
while True:
    c, _ = s.accept()
    buf = b""
    while len(buf) < 8 or len(buf) < 8 + struct.unpack("<I", buf[4:8])[0]:
        chunk = c.recv(65536)
        if not chunk:
            break
        buf += chunk
    n += 1
    open("%s.%d" % (out, n), "wb").write(buf)
    # version 1 decodes up to the token; version 2 adds 4 i64 after it
    msg = b"ERR -1 wire: 32 bytes left over after the last field (token)"
    c.sendall(b"TQR1" + struct.pack("<I", len(msg)) + msg)
    c.close()
PY

check "a newer client, an older supervisor: the task is stored directly, once, with a note"
tq list >/dev/null 2>&1 || true # the state directory and database exist
tq_bg "$TQ_PYTHON" "$TQ_TMP/old_supervisor.py" "$SOCK" "$FRAME" >"$TQ_TMP/old.out"
OLD=$TQ_LAST_PID
wait_for "grep -q ready '$TQ_TMP/old.out'" 10 || fail "the old supervisor did not start"
assert_exit 0 tq submit --no-start --name across -- sh -c 'exit 0'
id=$(out)
[ -s "$FRAME.1" ] || fail "the client did not try the socket"
assert_contains "$(err)" "the running supervisor could not read this submit"
assert_contains "$(err)" "wire: 32 bytes left over after the last field (token)"
assert_contains "$(err)" "taskq shutdown"
assert_eq 1 "$(wc -l <"$TQ_ERR")" "lines on stderr"
assert_eq 1 "$(task_count --name across)" "tasks stored"
assert_eq "$id" "$(task_ids --name across)"

check "the same with TASKQ_SUBMIT_VIA=supervisor: exit 1, nothing stored"
assert_exit 1 env TASKQ_SUBMIT_VIA=supervisor "$TASKQ_BIN" submit --no-start --name strict -- true
assert_one_line_error
assert_contains "$(err)" "wire: 32 bytes left over"
assert_eq 0 "$(task_count --name strict)" "tasks stored"
_tq_signal TERM "$OLD"
wait_for "! _tq_alive $OLD" 10 || fail "the old supervisor did not stop"
rm -f "$SOCK"

check "an older client, a newer supervisor: its version 1 request is stored"
serve_start 1
wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(cat "$TQ_TMP/serve.log")"
answer=$("$TQ_PYTHON" -c '
import socket, struct, sys
frame = open(sys.argv[1], "rb").read()
payload = frame[8:]
# the request the same client would have sent as version 1: the fields up
# to the token, with a new token (the first one stored the task above)
assert struct.unpack("<q", payload[-32:-24])[0] == 2, "not a version 2 request"
v1 = payload[:-32]
old = v1[-33:-1]
assert len(old) == 32 and v1[-1:] == b"\0"
v1 = v1[:-33] + b"f" * 32 + b"\0"
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(sys.argv[2])
c.sendall(b"TQS1" + struct.pack("<I", len(v1)) + v1)
head = c.recv(8)
print(c.recv(struct.unpack("<I", head[4:8])[0]).decode())
' "$FRAME.1" "$SOCK")
[[ $answer =~ ^OK\ ([0-9]+)\ 0$ ]] || fail "answer to a version 1 request: [$answer]"
old_id=${BASH_REMATCH[1]}
[ "$old_id" != "$id" ] || fail "the version 1 request was taken for the first submit"
wait_state "$old_id" succeeded
assert_exit 0 tq show --json "$old_id"
assert_eq '["across", null, 0]' "$(out | pyjson '[d["name"], d["umask"], d["stall_timeout_ms"]]')" \
	"name, umask, stall timeout of the version 1 task"
assert_exit 0 tq show "$old_id"
assert_contains "$(out)" "umask:        - (not known: it runs with the worker's)"
