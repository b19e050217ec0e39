#!/usr/bin/env bash
# test_submit_versions.sh - the submit socket across taskq versions
# (ipc/wire.h, "Frames" and "Versions"). Every frame says its version in its
# header: "TQS4" / "TQR4" from this taskq, "TQS3" / "TQR3" from version 3,
# "TQS1" / "TQR1" from versions 1 and 2 (version 2 says its version in the
# payload, after the token). After
# an upgrade the supervisor still running is the old binary, and a script
# may still run an old client against a new one:
#   - a newer client whose request the supervisor cannot read (versions 1
#     and 2 answer a "TQS4" header with ERR "wire: bad magic (not a TQS1
#     frame)" and close, storing nothing) stores the task itself, once, and
#     says on one line why, also when its request was too large to send
#     whole before that answer; with TASKQ_SUBMIT_VIA=supervisor it fails
#     (1);
#   - a supervisor answering in a frame version the client does not know (a
#     newer one): the client stores the task itself with the same token, so
#     it is stored once even though that supervisor stored it, and says on
#     one line why; with TASKQ_SUBMIT_VIA=supervisor it fails (1);
#   - this supervisor stores an older client's requests, version 1 (no
#     fields after the token: their defaults) and version 2, in "TQS1"
#     frames as the deployed clients send them, and answers them "TQR1";
#     version 3's "TQS3" (no version 4 fields: not warm) is answered "TQR3";
#     this version's "TQS4" is answered "TQR4"; a newer "TQS5" is refused
#     from its header, answered "TQR4" ERR, storing nothing.
# The old supervisor is played by a small server doing what taskq's
# versions 1 and 2 do with a frame whose magic is not "TQS1": read its
# header, answer, close. The newer supervisor is the real one behind a
# proxy that gives its answer a version 5 header. The old clients' requests
# are this client's "TQS4" request, as the proxy saw it, rewritten to
# versions 1, 2 and 3 (each version keeps the one before as its prefix).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

SOCK="$TASKQ_HOME/submit.sock"
REAL="$TQ_TMP/real.sock" # the real supervisor's socket, behind the proxy
FRAME="$TQ_TMP/frame"
mkdir -p "$TASKQ_HOME"
chmod 700 "$TASKQ_HOME"

# play MODE: a supervisor of another version on SOCK, in the background;
# "ready" in $TQ_TMP/MODE.out once it listens. Each request's bytes go to
# FRAME.MODE.N (the header only, for old).
#   old    versions 1 and 2: a header that is not "TQS1" is answered
#          "TQR1" ERR -1 wire: bad magic (not a TQS1 frame), at once, and
#          the connection closed, the rest of the request unread
#   newer  a newer supervisor, storing nothing: the request read, answered
#          "TQR5" OK 1 0
#   proxy  a newer supervisor that stores: the request handed to the real
#          supervisor (REAL), its answer (kept in FRAME.proxy.N.answer)
#          sent back with a version 5 header
cat >"$TQ_TMP/play.py" <<'PY'
import socket, struct, sys
mode, path, real, out = sys.argv[1:5]

def recv_frame(c, header_only):
    buf = b""
    while len(buf) < 8 or (not header_only and
                           len(buf) < 8 + struct.unpack("<I", buf[4:8])[0]):
        chunk = c.recv(65536 if not header_only else 8 - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
print("ready", flush=True)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    req = recv_frame(c, mode == "old")
    open("%s.%s.%d" % (out, mode, n), "wb").write(req)
    if mode == "old":
        if req[:4] == b"TQS1":
            msg = b"ERR -5 this test expects no TQS1 request from this client"
        else:
            msg = b"ERR -1 wire: bad magic (not a TQS1 frame)"
        c.sendall(b"TQR1" + struct.pack("<I", len(msg)) + msg)
    elif mode == "newer":
        c.sendall(b"TQR5" + struct.pack("<I", 6) + b"OK 1 0")
    else:
        r = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        r.connect(real)
        r.sendall(req)
        ans = recv_frame(r, False)
        r.close()
        open("%s.%s.%d.answer" % (out, mode, n), "wb").write(ans)
        c.sendall(ans[:3] + b"5" + ans[4:])
    c.close()
PY

play() {
	tq_bg "$TQ_PYTHON" "$TQ_TMP/play.py" "$1" "$SOCK" "$REAL" "$FRAME" >"$TQ_TMP/$1.out"
	PLAY=$TQ_LAST_PID
	wait_for "grep -q ready '$TQ_TMP/$1.out'" 10 || fail "the $1 supervisor did not start"
}

stop_play() {
	_tq_signal TERM "$PLAY"
	wait_for "! _tq_alive $PLAY" 10 || fail "the played supervisor did not stop"
	rm -f "$SOCK"
}

# send MAGIC PAYLOAD_FILE: a request frame, MAGIC, the length, the payload,
# to SOCK; prints the answer's magic and text.
cat >"$TQ_TMP/send.py" <<'PY'
import socket, struct, sys
magic, payload, path = sys.argv[1].encode(), open(sys.argv[2], "rb").read(), sys.argv[3]
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.settimeout(20)
c.connect(path)
c.sendall(magic + struct.pack("<I", len(payload)) + payload)
# the answer frame, by its length: a supervisor that refuses a request
# from its header closes with the rest unread, and a read past the answer
# then meets ECONNRESET
buf = b""
while len(buf) < 8 or len(buf) < 8 + struct.unpack("<I", buf[4:8])[0]:
    b = c.recv(65536)
    assert b, "the connection closed after %d bytes of the answer" % len(buf)
    buf += b
assert len(buf) == 8 + struct.unpack("<I", buf[4:8])[0], "bytes after the answer"
print(buf[:4].decode(), buf[8:].decode())
PY
send() { "$TQ_PYTHON" "$TQ_TMP/send.py" "$1" "$2" "$SOCK"; }

# rewrite VERSION TOKEN_CHAR IN OUT: the payload of the "TQS4" request frame
# IN as a version VERSION client sends it (4, 3, 2 or 1), with a token of 32
# TOKEN_CHARs (the one it had stored a task already). Version 3: the fields
# up to the token, then umask, stall_timeout_ms, cwd_explicit (3 i64);
# version 4 adds warm and idle_timeout_ms (2 i64); version 2 puts i64 2
# before version 3's three; version 1 ends at the token.
rewrite() {
	"$TQ_PYTHON" - "$@" <<'PY'
import struct, sys
version, ch, src, dst = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4]
frame = open(src, "rb").read()
assert frame[:4] == b"TQS4", "not a version 4 request: %r" % frame[:4]
assert struct.unpack("<I", frame[4:8])[0] == len(frame) - 8
payload = frame[8:]
head, later, v4 = payload[:-40], payload[-40:-16], payload[-16:]
# the token: u32 33, then 32 bytes and a NUL, just before the later fields
assert head[-37:-33] == struct.pack("<I", 33) and head[-1:] == b"\0", "no token"
head = head[:-33] + ch * 32 + b"\0"
out = {4: head + later + v4, 3: head + later, 2: head + struct.pack("<q", 2) + later,
       1: head}[version]
open(dst, "wb").write(out)
PY
}

# answer_of FILE: the answer frame in FILE as its magic and text.
answer_of() {
	"$TQ_PYTHON" -c '
import struct, sys
a = open(sys.argv[1], "rb").read()
assert struct.unpack("<I", a[4:8])[0] == len(a) - 8
print(a[:4].decode(), a[8:].decode())
' "$1"
}

# The later fields of a version 4 request frame: umask (as show --json
# has it: "0022") and stall_timeout_ms.
later_fields() {
	"$TQ_PYTHON" -c '
import struct, sys
p = open(sys.argv[1], "rb").read()[8:]
mask, stall = struct.unpack("<qq", p[-40:-24])
print("%04o" % mask, stall)
' "$1"
}

tq list >/dev/null 2>&1 || true # the state directory and database exist

check "a newer client, an older supervisor: it refuses the TQS4 header; stored directly, once, with a note"
play old
assert_exit 0 tq submit --no-start --name across -- sh -c 'exit 0'
id=$(out)
assert_eq TQS4 "$(head -c 4 "$FRAME.old.1")" "the request's header"
assert_contains "$(err)" "the running supervisor could not read this submit"
assert_contains "$(err)" "wire: bad magic (not a TQS1 frame)"
assert_contains "$(err)" "taskq shutdown"
assert_eq 1 "$(wc -l <"$TQ_ERR")" "lines on stderr"
assert_eq 1 "$(task_count --name across)" "tasks stored"
assert_eq "$id" "$(task_ids --name across)"

check "the same with a request larger than the socket takes at once (its send fails after the answer)"
head -c $((2 << 20)) /dev/urandom >"$TQ_TMP/big.in"
assert_exit 0 tq submit --no-start --name big --stdin-file "$TQ_TMP/big.in" -- cat
big=$(out)
assert_eq TQS4 "$(head -c 4 "$FRAME.old.2")" "the request's header"
assert_contains "$(err)" "the running supervisor could not read this submit (wire: bad magic"
assert_eq 1 "$(wc -l <"$TQ_ERR")" "lines on stderr"
assert_eq 1 "$(task_count --name big)" "tasks stored"
assert_eq "$big" "$(task_ids --name big)"

check "the same with TASKQ_SUBMIT_VIA=supervisor: exit 1, nothing stored"
assert_exit 1 env TASKQ_SUBMIT_VIA=supervisor "$TASKQ_BIN" submit --no-start --name strict -- true
assert_one_line_error
assert_contains "$(err)" "wire: bad magic (not a TQS1 frame)"
assert_eq 0 "$(task_count --name strict)" "tasks stored"
stop_play

check "a newer supervisor answers in a frame version this client does not know: stored once, by the token"
serve_start 1
wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(cat "$TQ_TMP/serve.log")"
mv "$SOCK" "$REAL"
play proxy
assert_exit 0 tq submit --no-start --name newer --stall-timeout 90s -- true
newer=$(out)
assert_eq "TQR4 OK $newer 0" "$(answer_of "$FRAME.proxy.1.answer")" \
	"the real supervisor stored the task the client printed"
assert_contains "$(err)" "could not read the running supervisor's answer"
assert_contains "$(err)" "wire: answer version 5 is newer than this taskq's (4)"
assert_contains "$(err)" "taskq shutdown"
assert_eq 1 "$(wc -l <"$TQ_ERR")" "lines on stderr"
assert_eq 1 "$(task_count --name newer)" "tasks stored"
stop_play

check "the same with TASKQ_SUBMIT_VIA=supervisor: exit 1 (that supervisor stored nothing here)"
play newer
assert_exit 1 env TASKQ_SUBMIT_VIA=supervisor "$TASKQ_BIN" submit --no-start --name strict -- true
assert_one_line_error
assert_contains "$(err)" "TASKQ_SUBMIT_VIA=supervisor: wire: answer version 5 is newer"
assert_eq 0 "$(task_count --name strict)" "tasks stored"
stop_play
mv "$REAL" "$SOCK"

check "an older client, this supervisor: a version 1 request in a TQS1 frame is stored, answered TQR1"
rewrite 1 a "$FRAME.proxy.1" "$TQ_TMP/v1"
answer=$(send TQS1 "$TQ_TMP/v1")
[[ $answer =~ ^TQR1\ OK\ ([0-9]+)\ 0$ ]] || fail "answer to a version 1 request: [$answer]"
v1_id=${BASH_REMATCH[1]}
[ "$v1_id" != "$newer" ] || fail "the version 1 request was taken for the first submit"
wait_state "$v1_id" succeeded
assert_exit 0 tq show --json "$v1_id"
assert_eq '["newer", null, 0]' "$(out | pyjson '[d["name"], d["umask"], d["stall_timeout_ms"]]')" \
	"name, umask, stall timeout of the version 1 task (their defaults)"
assert_exit 0 tq show "$v1_id"
assert_contains "$(out)" "umask:        - (not known: it runs with the worker's)"

check "an older client, this supervisor: a version 2 request in a TQS1 frame is stored, answered TQR1"
rewrite 2 b "$FRAME.proxy.1" "$TQ_TMP/v2"
answer=$(send TQS1 "$TQ_TMP/v2")
[[ $answer =~ ^TQR1\ OK\ ([0-9]+)\ 0$ ]] || fail "answer to a version 2 request: [$answer]"
v2_id=${BASH_REMATCH[1]}
read -r mask stall <<<"$(later_fields "$FRAME.proxy.1")"
assert_eq 90000 "$stall" "the request's stall timeout"
wait_state "$v2_id" succeeded
assert_exit 0 tq show --json "$v2_id"
assert_eq "[\"newer\", \"$mask\", 90000]" \
	"$(out | pyjson '[d["name"], d["umask"], d["stall_timeout_ms"]]')" \
	"name, umask, stall timeout of the version 2 task"

check "a version 3 request (TQS3) is stored, answered TQR3, not warm"
rewrite 3 c "$FRAME.proxy.1" "$TQ_TMP/v3"
answer=$(send TQS3 "$TQ_TMP/v3")
[[ $answer =~ ^TQR3\ OK\ ([0-9]+)\ 0$ ]] || fail "answer to a version 3 request: [$answer]"
v3_id=${BASH_REMATCH[1]}
wait_state "$v3_id" succeeded
assert_exit 0 tq show --json "$v3_id"
assert_eq "[\"newer\", \"$mask\", 90000]" \
	"$(out | pyjson '[d["name"], d["umask"], d["stall_timeout_ms"]]')" \
	"name, umask, stall timeout of the version 3 task"
assert_eq '[false, null]' "$(out | pyjson '[d["warm"], d["idle_timeout_ms"]]')" \
	"a version 3 request is not warm"

check "this client's request (TQS4) is stored, answered TQR4"
rewrite 4 e "$FRAME.proxy.1" "$TQ_TMP/v4"
answer=$(send TQS4 "$TQ_TMP/v4")
[[ $answer =~ ^TQR4\ OK\ ([0-9]+)\ 0$ ]] || fail "answer to a version 4 request: [$answer]"
v4_id=${BASH_REMATCH[1]}
wait_state "$v4_id" succeeded
assert_exit 0 tq show --json "$v4_id"
assert_eq "[\"newer\", \"$mask\", 90000]" \
	"$(out | pyjson '[d["name"], d["umask"], d["stall_timeout_ms"]]')" \
	"name, umask, stall timeout of the version 4 task"

check "a newer client's request (TQS5) is refused from its header, answered TQR4, nothing stored"
before=$(task_count)
rewrite 4 d "$FRAME.proxy.1" "$TQ_TMP/v5"
answer=$(send TQS5 "$TQ_TMP/v5")
assert_eq "TQR4 ERR -1 wire: request version 5 is newer than this taskq's (4)" "$answer"
assert_eq "$before" "$(task_count)" "tasks stored"
wait_for "grep -q 'submit socket: request: wire: request version 5 is newer' '$TQ_TMP/serve.log'" 10 ||
	fail "not logged: $(tail -5 "$TQ_TMP/serve.log")"
# and the supervisor goes on serving
assert_exit 0 env TASKQ_SUBMIT_VIA=supervisor "$TASKQ_BIN" submit --no-start --name after -- true
assert_eq "" "$(err)" "stderr of a submit through the socket"
assert_eq 1 "$(task_count --name after)"
