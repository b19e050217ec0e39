#!/usr/bin/env bash
# test_submit_socket.sh - submitting through the supervisor's socket
# (STATE/submit.sock): a task stored by the supervisor is the task the
# client would have stored itself, byte for byte; errors read the same; the
# tasks run. Without a listening supervisor (stopped, a stale socket file, a
# server that never answers) submit stores the task itself, exactly once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

SOCK="$TASKQ_HOME/submit.sock"

# via MODE ARGS...: taskq submit ARGS with TASKQ_SUBMIT_VIA=MODE.
via() {
	local mode=$1
	shift
	TASKQ_SUBMIT_VIA=$mode "$TASKQ_BIN" submit "$@"
}

# A task as `show --json` has it, without what two submits of one spec may
# not share: the id, times, the run, and TASKQ_SUBMIT_VIA in its environment.
norm() {
	tq show --json "$1" | "$TQ_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
for k in ("id", "created_at", "started_at", "finished_at", "runtime_ms",
          "attempt", "attempts", "worker_id", "lease_until"):
    d.pop(k)
d["env"] = [e for e in d["env"] if not e.startswith("TASKQ_SUBMIT_VIA=")]
if sys.argv[1] == "unique":
    d["unique_key"] = "*"
print(json.dumps(d, sort_keys=True))
' "${2:+unique}"
}

# What the store holds of task ID, spelled out: argv's bytes (argv_base64
# where it is not UTF-8), labels and dependencies. (The stdin file's bytes
# are what the task reads: compared once the tasks have run.)
raw() {
	echo "$(task_argv_hex "$1") $(task_field "$1" labels after)"
}

# The token rows naming task ID: one when the supervisor stored it from a
# request through the socket (the request's token), none when stored directly.
tokens_of() {
	tq_sql "select count(*) from meta where key like 'submit:%' and cast(value as integer) = $1" # SQL: the database itself (the socket's submit tokens, kept in meta: no command shows them)
}

ntasks() { task_count; }

SOCKET_IDS=()
# same ARGS...: submit ARGS through the socket, then directly; both succeed,
# print the same form, and store equal tasks. The socket's task carries a
# token row, the direct one none.
same() {
	local a b
	assert_exit 0 via supervisor "$@"
	a=$(out)
	assert_eq "" "$(err)" "stderr of the socket submit"
	assert_exit 0 via direct "$@"
	b=$(out)
	assert_eq "" "$(err)" "stderr of the direct submit"
	case " $* " in
	*" --json "*)
		[[ $a =~ ^\{\"id\":([0-9]+)\}$ ]] || fail "--json through the socket: [$a]"
		a=${BASH_REMATCH[1]}
		[[ $b =~ ^\{\"id\":([0-9]+)\}$ ]] || fail "--json directly: [$b]"
		b=${BASH_REMATCH[1]}
		;;
	esac
	[ "$a" != "$b" ] || fail "two submits printed one id $a"
	assert_eq "$(norm "$b")" "$(norm "$a")" "task $a (socket) against $b (direct)"
	assert_eq "$(raw "$b")" "$(raw "$a")" "stored bytes of $a against $b"
	assert_eq 1 "$(tokens_of "$a")" "token row of $a"
	assert_eq 0 "$(tokens_of "$b")" "token rows of the direct $b"
	SOCKET_IDS+=("$a" "$b")
}

check "serve listens on STATE/submit.sock, a socket of mode 0600"
serve_start 2
wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(cat "$TQ_TMP/serve.log")"
assert_eq 600 "$(stat -c %a "$SOCK")"
assert_eq "$(id -u)" "$(stat -c %u "$SOCK")"

# Hold the tasks compared below, so both of a pair stay in the same state.
assert_exit 0 tq pause true
assert_exit 0 tq pause cmp

check "odd argv through the socket is stored as the direct submit stores it"
big=$(head -c 102400 /dev/zero | tr '\0' x)
same -- true "a b" "  two  spaces " "'single'" '"double"' "" "" 'back\slash' '$HOME' \
	$'tab\there' $'new\nline' $'\xff\xfe\x80 not utf-8' "é ü 日本" "$big" "-x" "--" "="
same -- true
same --shell 'true "$1" && : "quoted \"x\""'

check "options through the socket: --env --label --cwd --name --priority --timeout --group"
mkdir -p "$TQ_TMP/work dir"
same --env FOO=bar --env 'SP=a b' --env 'EMPTY=' --label a=b --label 'k 2=v=3' \
	--cwd "$TQ_TMP/work dir" --name 'my task' --priority -7 --timeout 90s -- true x
same --group cmp --priority 2147483647 --timeout 0 -- true y

check "--stdin-file, --after, --json through the socket"
printf 'line 1\n\0binary\xff\nend' >"$TQ_TMP/in"
same --stdin-file "$TQ_TMP/in" --group cmp -- cat
STDIN_IDS=("${SOCKET_IDS[@]: -2}")
dep=$(via direct -- true dep)
same --after "$dep" -- true w
same --json -- true j

check "--unique twice through the socket: the same id and the note, as directly"
assert_exit 0 via supervisor --unique k1 -- true u
u=$(out)
assert_eq "" "$(err)"
assert_eq 1 "$(tokens_of "$u")"
assert_exit 0 via supervisor --unique k1 -- true u2
assert_eq "$u" "$(out)"
assert_eq "taskq: submit: task $u holds unique key \"k1\"; not added" "$(err)"
sock_err=$(err)
assert_exit 0 via direct --unique k1 -- true u3
assert_eq "$u" "$(out)"
assert_eq "$sock_err" "$(err)" "the note, direct"
assert_exit 0 via supervisor --json --unique k1 -- true u4
assert_eq "{\"id\":$u,\"existed\":true}" "$(out)"
assert_exit 0 via direct --unique k2 -- true u
assert_eq "$(norm "$(out)" unique)" "$(norm "$u" unique)"
SOCKET_IDS+=("$u" "$(out)")
for id in $(task_ids); do task_field "$id" unique_key; done >"$TQ_TMP/keys"
assert_eq 1 "$(grep -cx k1 "$TQ_TMP/keys")" "tasks with the unique key k1"

check "a bad --after through the socket fails as the direct submit does"
before=$(ntasks)
run via supervisor --after 99999 -- true bad
s_rc=$TQ_RC s_out=$(out) s_err=$(err)
run via direct --after 99999 -- true bad
assert_eq "$TQ_RC|$(out)|$(err)" "$s_rc|$s_out|$s_err"
[ "$s_rc" -ne 0 ] || fail "a bad --after was accepted"
assert_contains "$s_err" "99999"
assert_eq "$before" "$(ntasks)" "nothing stored"

check "the token rows are in meta, one per task stored through the socket"
n=$(tq_sql "select count(*) from meta where key like 'submit:%'") # SQL: the database itself (the socket's submit tokens, kept in meta: no command shows them)
tokened="select count(*) from meta m join tasks t on t.id = cast(m.value as integer)
	where m.key like 'submit:%'"
want=$(tq_sql "$tokened") # SQL: the database itself (the socket's submit tokens, kept in meta: no command shows them)
assert_eq "$want" "$n" "every token names a task"
[ "$n" -ge 9 ] || fail "only $n token rows"

check "a decode error is answered ERR -1 with the message; the supervisor goes on"
"$TQ_PYTHON" - "$SOCK" >"$TQ_TMP/garbage" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
s.sendall(b"TQS1" + struct.pack("<I", 3) + b"abc")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
magic, n = data[:4], struct.unpack("<I", data[4:8])[0]
print(magic.decode(), data[8:8 + n].decode(errors="replace"))
EOF
assert_contains "$(cat "$TQ_TMP/garbage")" "TQR1 ERR -1 "

check "a client that connects and sends nothing holds the supervisor at most 1 s"
tq_bg "$TQ_PYTHON" -c '
import signal, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
open(sys.argv[2], "w").close()
signal.pause()  # holds the connection, silent, until the test kills it
' "$SOCK" "$TQ_TMP/mute.ready"
mute=$TQ_LAST_PID
wait_for "[ -e '$TQ_TMP/mute.ready' ]" 10 || fail "the mute client did not connect"
t0=$(_tq_now_ms)
assert_exit 0 via supervisor -- sh -c 'echo "ran $1"' sh 'through the socket'
ran=$(out)
elapsed=$(($(_tq_now_ms) - t0))
[ "$elapsed" -lt 4000 ] || fail "the submit waited ${elapsed} ms behind a mute client"
wait_for "grep -q 'submit socket: request: .*timed out' '$TQ_TMP/serve.log'" 10 ||
	fail "no timeout logged: $(cat "$TQ_TMP/serve.log")"
_tq_signal KILL "$mute"
wait "$mute" 2>/dev/null || true

check "a task submitted through the socket starts and succeeds"
wait_state "$ran" succeeded
assert_eq "ran through the socket" "$(tq log "$ran")"
assert_eq 1 "$(tokens_of "$ran")"

check "the held tasks of both paths run and succeed"
assert_exit 0 tq resume true
assert_exit 0 tq resume cmp
for id in "${SOCKET_IDS[@]}" "$dep"; do
	wait_state "$id" succeeded 60
done
for id in "${STDIN_IDS[@]}"; do
	tq log "$id" --offset 0 --raw | cmp - "$TQ_TMP/in" ||
		fail "task $id did not read its --stdin-file's bytes"
done
assert_eq "" "$(grep 'submit socket:' "$TQ_TMP/serve.log" | grep -v 'timed out\|bad request')" \
	"problems logged by the socket"

check "a stopping supervisor removes its socket at once; clients store directly"
# a task that ignores TERM keeps the supervisor in its stop for the grace
assert_exit 0 via supervisor --kill-grace 1s -- sh -c 'trap "" TERM; echo up; sleep 1000'
stubborn=$(out)
wait_for "[ \"\$(tq log $stubborn)\" = up ]" 20 || fail "task $stubborn did not start"
assert_exit 0 tq shutdown --grace 3s --no-wait
wait_for "[ ! -e '$SOCK' ]" 4 || fail "the socket outlived the start of the stop"
_tq_alive "$SERVE_PID" || fail "the supervisor stopped before the grace"
assert_exit 0 via auto --no-start -- true while-stopping
id=$(out)
assert_eq 0 "$(tokens_of "$id")" "nothing was sent"
rc=0; wait "$SERVE_PID" || rc=$?
assert_eq 143 "$rc" "supervisor exit status"
tq cancel "$stubborn" "$id" >/dev/null

check "shutdown removes the socket; auto then stores directly, supervisor fails"
serve_start 1
wait_for "[ -S '$SOCK' ]" 10 || fail "no socket: $(tail -5 "$TQ_TMP/serve.log")"
assert_exit 0 tq shutdown
rc=0; wait "$SERVE_PID" || rc=$?
[ ! -e "$SOCK" ] || fail "the socket outlived its supervisor"
before=$(ntasks)
assert_exit 0 via auto --no-start -- true after-shutdown
id=$(out)
assert_eq queued "$(state_of "$id")"
assert_eq 0 "$(tokens_of "$id")" "nothing was sent"
run via supervisor --no-start -- true refused
[ "$TQ_RC" -ne 0 ] || fail "TASKQ_SUBMIT_VIA=supervisor stored without a supervisor"
assert_one_line_error
assert_eq $((before + 1)) "$(ntasks)"

check "a stale socket file: auto stores directly; a new serve replaces the file"
"$TQ_PYTHON" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.close()
os.chmod(sys.argv[1], 0o640)
' "$SOCK"
[ -S "$SOCK" ] || fail "no stale socket made"
assert_exit 0 via auto --no-start -- true stale
id=$(out)
assert_eq 1 "$(task_exists "$id")"
assert_eq 0 "$(tokens_of "$id")" "nothing was sent"
serve_start 1
# the stale file was 0640: 0600 is the new one
wait_for "[ -S '$SOCK' ] && [ \$(stat -c %a '$SOCK') = 600 ]" 10 ||
	fail "the stale socket was not replaced: $(tail -5 "$TQ_TMP/serve.log")"
assert_exit 0 via supervisor -- true replaced
id=$(out)
assert_eq 1 "$(tokens_of "$id")"
wait_state "$id" succeeded
assert_exit 0 tq shutdown
rc=0; wait "$SERVE_PID" || rc=$?
[ ! -e "$SOCK" ] || fail "the socket outlived its supervisor"

check "a server that reads the request and never answers: auto stores it itself, once"
tq_bg "$TQ_PYTHON" -c '
import os, socket, struct, sys
path, ready, got = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(1)
open(ready, "w").close()
c, _ = s.accept()
def recv(n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            break
        b += x
    return b
h = recv(8)
n = struct.unpack("<I", h[4:8])[0] if len(h) == 8 else -1
p = recv(n) if n > 0 else b""
with open(got + ".tmp", "w") as f:
    f.write("%s %d %d\n" % (h[:4].decode("latin1"), n, len(p)))
os.rename(got + ".tmp", got)
c.close()
s.close()
os.unlink(path)
' "$SOCK" "$TQ_TMP/fake.ready" "$TQ_TMP/fake.got"
fake=$TQ_LAST_PID
wait_for "[ -e '$TQ_TMP/fake.ready' ]" 10 || fail "the fake server did not start"
before=$(ntasks)
assert_exit 0 via auto --no-start -- true fake "$big"
id=$(out)
read -r magic n got <"$TQ_TMP/fake.got"
assert_eq TQS4 "$magic" "the fake server got a request"
assert_eq "$n" "$got" "the fake server read it whole"
[ "$n" -gt 102400 ] || fail "request of $n bytes"
assert_eq $((before + 1)) "$(ntasks)" "stored exactly once"
# (the argument is too big for a command line in hex)
argv=$(task_argv_hex "$id")
assert_eq "$(hex_args true fake)|$((5 + 5 + 102401))" "${argv:0:20}|$((${#argv} / 2))"
assert_eq 1 "$(tokens_of "$id")" "stored with the request's token"
wait "$fake" 2>/dev/null || fail "the fake server failed"

check "a state directory too long for a socket's path: serve runs without one"
TASKQ_HOME="$TQ_TMP/$(printf 'd%.0s' $(seq 1 120))"
SOCK="$TASKQ_HOME/submit.sock"
serve_start 1
wait_for "grep -q 'no submit socket: .*path longer than' '$TQ_TMP/serve.log'" 10 ||
	fail "nothing logged: $(tail -5 "$TQ_TMP/serve.log")"
[ ! -e "$SOCK" ] || fail "a socket at a path longer than sun_path"
assert_exit 0 via auto -- true long-home
id=$(out)
assert_eq 0 "$(tokens_of "$id")" "nothing was sent"
wait_state "$id" succeeded
run via supervisor -- true long-home
[ "$TQ_RC" -ne 0 ] || fail "TASKQ_SUBMIT_VIA=supervisor stored without a socket"
assert_exit 0 tq shutdown
rc=0; wait "$SERVE_PID" || rc=$?
