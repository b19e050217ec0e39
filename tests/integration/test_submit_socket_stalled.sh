#!/usr/bin/env bash
# test_submit_socket_stalled.sh - clients that stall on the supervisor's
# socket never stall anyone else's submit (issue 16, item 4): with 40
# connections held open and silent, or 60 clients writing one byte every
# 100 ms, a `taskq submit` is stored by the supervisor at once (with
# TASKQ_SUBMIT_VIA=supervisor, which fails rather than store it itself), each
# stalled connection is closed at its own deadline (1 s after accept), and
# a client whose supervisor does not answer within ~1 s stores its task
# itself, exactly once even when the supervisor commits the same request
# just after the client gave up (the token), or just before.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

SOCK="$TASKQ_HOME/submit.sock"

ntasks() { task_count; }

# hold MODE N OUT: N connections to $SOCK, held by a helper in the
# background. MODE idle sends nothing; slow sends a request's bytes, one
# byte to each connection every 100 ms. Once all are connected it touches
# OUT.ready; when the server has closed every one (or 30 s passed) it
# writes OUT: per connection, the seconds from its connect to its close
# (-1: still open). The helper's pid is in HOLD_PID.
cat >"$TQ_TMP/hold.py" <<'EOF'
import select, socket, struct, sys, time
path, mode, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
conns, opened, closed = [], [], {}
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    conns.append(s)
    opened.append(time.monotonic())
open(out + ".ready", "w").close()
# a frame that says 1000 bytes follow: the server can only time it out
frame = b"TQS1" + struct.pack("<I", 1000) + b"x" * 1000
sent, next_byte = 0, time.monotonic()
end = time.monotonic() + 30
while len(closed) < n and time.monotonic() < end:
    live = [s for i, s in enumerate(conns) if i not in closed]
    r, _, _ = select.select(live, [], [], 0.02)
    for s in r:
        i = conns.index(s)
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            closed[i] = time.monotonic() - opened[i]
    if mode == "slow" and time.monotonic() >= next_byte and sent < len(frame):
        for i, s in enumerate(conns):
            if i not in closed:
                try:
                    s.send(frame[sent:sent + 1])
                except OSError:
                    pass
        sent += 1
        next_byte += 0.1
with open(out + ".tmp", "w") as f:
    for i in range(n):
        f.write("%.3f\n" % closed.get(i, -1))
import os
os.rename(out + ".tmp", out)
EOF
hold() {
	tq_bg "$TQ_PYTHON" "$TQ_TMP/hold.py" "$SOCK" "$@"
	HOLD_PID=$TQ_LAST_PID
}

# timed_submit ARGS...: a plain submit (auto: the socket, else directly);
# its id in SUB_ID, its wall time in ms in SUB_MS.
timed_submit() {
	local t0
	t0=$(_tq_now_ms)
	assert_exit 0 tq submit "$@"
	SUB_MS=$(($(_tq_now_ms) - t0))
	SUB_ID=$(out)
	echo "    (submit: $SUB_MS ms)"
}

# closed_within FILE N LO HI: all N connections in FILE were closed, each
# between LO and HI seconds after it was opened.
closed_within() {
	"$TQ_PYTHON" - "$@" <<'EOF' || fail "connections not closed at their deadline: $(tr '\n' ' ' <"$1")"
import sys
path, n, lo, hi = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
t = [float(x) for x in open(path).read().split()]
sys.exit(0 if len(t) == n and all(lo <= x <= hi for x in t) else 1)
EOF
}

serve_start 1
wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(cat "$TQ_TMP/serve.log")"
# the tasks below only have to be stored: hold them, so no run muddies
# the figures
assert_exit 0 tq pause sh

check "40 idle connections: a submit is stored by the supervisor in under 2 s, once"
hold idle 40 "$TQ_TMP/idle"
idle=$HOLD_PID
wait_for "[ -e '$TQ_TMP/idle.ready' ]" 20 || fail "the idle clients did not connect"
before=$(ntasks)
# =supervisor: the submit fails unless the supervisor stored it
TASKQ_SUBMIT_VIA=supervisor timed_submit -- sh -c 'echo behind idle'
[ "$SUB_MS" -lt 2000 ] || fail "the submit took $SUB_MS ms behind 40 idle connections"
assert_eq $((before + 1)) "$(ntasks)" "stored once"

check "the idle connections are closed at their deadline (1 s after accept)"
wait_for "[ -e '$TQ_TMP/idle' ]" 40 || fail "the idle clients were not all closed"
# 0.9: the deadline counts from accept, which follows the connect
closed_within "$TQ_TMP/idle" 40 0.9 6
wait "$idle" 2>/dev/null || fail "the idle client helper failed"
wait_for "grep -q 'submit socket: request: wire: timed out reading the frame header (0 of 8 bytes)' '$TQ_TMP/serve.log'" 10 ||
	fail "no timeout logged: $(tail -5 "$TQ_TMP/serve.log")"

check "60 slow writers (a byte every 100 ms): a submit is stored in under 2 s, once"
hold slow 60 "$TQ_TMP/slow"
slow=$HOLD_PID
wait_for "[ -e '$TQ_TMP/slow.ready' ]" 20 || fail "the slow clients did not connect"
before=$(ntasks)
TASKQ_SUBMIT_VIA=supervisor timed_submit -- sh -c 'echo behind slow writers'
[ "$SUB_MS" -lt 2000 ] || fail "the submit took $SUB_MS ms behind 60 slow writers"
assert_eq $((before + 1)) "$(ntasks)" "stored once"
wait_for "[ -e '$TQ_TMP/slow' ]" 40 || fail "the slow writers were not all closed"
closed_within "$TQ_TMP/slow" 60 0.9 6
wait "$slow" 2>/dev/null || fail "the slow client helper failed"
wait_for "grep -q 'timed out reading the frame payload' '$TQ_TMP/serve.log'" 10 ||
	fail "no payload timeout logged: $(tail -5 "$TQ_TMP/serve.log")"

check "more connections than the bound: one line says so, submits still get through"
hold idle 100 "$TQ_TMP/flood"
flood=$HOLD_PID
wait_for "[ -e '$TQ_TMP/flood.ready' ]" 20 || fail "the flood did not connect"
before=$(ntasks)
timed_submit -- sh -c 'echo behind a flood'
[ "$SUB_MS" -lt 2000 ] || fail "the submit took $SUB_MS ms behind 100 idle connections"
assert_eq $((before + 1)) "$(ntasks)" "stored once"
wait_for "[ -e '$TQ_TMP/flood' ]" 40 || fail "the flood was not all closed"
wait "$flood" 2>/dev/null || fail "the flood helper failed"
assert_eq 1 "$(grep -c 'submit socket: 64 connections open, the most served at once' "$TQ_TMP/serve.log")" \
	"lines about the bound"
assert_eq "$SUB_ID" "$(task_ids | tail -n 1)" "nothing else stored"

# A proxy in front of the real supervisor: the supervisor keeps listening
# (its socket file moved aside), and the client finds the proxy in its
# place. It reads the client's request, and either forwards it at once but
# keeps the answer from the client (the supervisor commits before the
# client gives up), or forwards it only after the client has given up and
# stored the task itself (the supervisor commits after). Either way it
# writes the supervisor's answer to OUT.
mv "$SOCK" "$TASKQ_HOME/real.sock"
cat >"$TQ_TMP/proxy.py" <<'EOF'
import os, socket, struct, sys, time
path, real, when, out, before = sys.argv[1:6]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(1)
open(out + ".ready", "w").close()
c, _ = s.accept()
def recv(sock, n):
    b = b""
    while len(b) < n:
        x = sock.recv(n - len(b))
        if not x:
            break
        b += x
    return b
h = recv(c, 8)
req = h + recv(c, struct.unpack("<I", h[4:8])[0])
if when == "late":
    # until the client gives up (it closes its end) and has stored the
    # task itself
    import json, subprocess
    c.settimeout(20)
    while c.recv(4096):
        pass
    end = time.monotonic() + 20
    while sum(json.loads(subprocess.run([os.environ["TASKQ_BIN"], "status", "--json"],
              capture_output=True, check=True).stdout)["tasks"].values()) <= int(before):
        if time.monotonic() > end:
            sys.exit("the client did not store the task")
        time.sleep(0.02)
r = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
r.settimeout(20)
r.connect(real)
r.sendall(req)
h = recv(r, 8)
ans = recv(r, struct.unpack("<I", h[4:8])[0]).decode()
if when == "early":
    c.settimeout(20)
    while c.recv(4096):
        pass
with open(out + ".req", "wb") as f:
    f.write(req)
with open(out + ".tmp", "w") as f:
    f.write(ans + "\n")
os.rename(out + ".tmp", out)
c.close()
s.close()
os.unlink(path)
EOF
# replay REQ SOCK: send the request frame in file REQ to the socket SOCK;
# print the answer's payload.
replay() {
	"$TQ_PYTHON" - "$@" <<'EOF'
import socket, struct, sys
req = open(sys.argv[1], "rb").read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[2])
s.sendall(req)
def recv(n):
    b = b""
    while len(b) < n:
        x = s.recv(n - len(b))
        if not x:
            break
        b += x
    return b
h = recv(8)
print(recv(struct.unpack("<I", h[4:8])[0]).decode())
EOF
}

proxy() {
	tq_bg "$TQ_PYTHON" "$TQ_TMP/proxy.py" "$SOCK" "$TASKQ_HOME/real.sock" "$@"
	PROXY_PID=$TQ_LAST_PID
}

for when in early late; do
	check "the supervisor commits $( [ $when = early ] && echo before || echo after) the client gives up: stored once, one id"
	rm -f "$TQ_TMP/proxy" "$TQ_TMP/proxy.ready"
	before=$(ntasks)
	proxy "$when" "$TQ_TMP/proxy" "$before"
	wait_for "[ -e '$TQ_TMP/proxy.ready' ]" 10 || fail "the proxy did not start"
	timed_submit -- sh -c "echo through a $when proxy"
	[ "$SUB_MS" -lt 3000 ] || fail "the client waited $SUB_MS ms for an answer"
	wait_for "[ -e '$TQ_TMP/proxy' ]" 20 || fail "the proxy got no answer"
	wait "$PROXY_PID" 2>/dev/null || fail "the proxy failed"
	assert_eq "OK $SUB_ID 0" "$(cat "$TQ_TMP/proxy")" "the supervisor's answer"
	assert_eq $((before + 1)) "$(ntasks)" "stored once"
	# the same request again, straight to the supervisor: its token is
	# kept, so it names the same task and stores nothing
	assert_eq "OK $SUB_ID 0" "$(replay "$TQ_TMP/proxy.req" "$TASKQ_HOME/real.sock")" \
		"the request sent again"
	assert_eq $((before + 1)) "$(ntasks)" "still stored once"
done
mv "$TASKQ_HOME/real.sock" "$SOCK"

check "the stored tasks run once each"
assert_exit 0 tq resume sh
for id in $(task_ids); do
	wait_state "$id" succeeded 60
done
assert_eq "behind idle|behind slow writers|behind a flood|through a early proxy|through a late proxy" \
	"$(for id in $(task_ids); do tq log "$id"; done | paste -sd'|')"
for id in $(task_ids); do
	assert_eq 1 "$(attempt_count "$id")" "attempts of task $id"
done
