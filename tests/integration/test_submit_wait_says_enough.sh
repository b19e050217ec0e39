#!/usr/bin/env bash
# submit --wait and log --follow say enough: the id on stderr at once; on a
# terminal (or with --wait=0) the output as it arrives, not at the end;
# Ctrl-C (SIGINT, also SIGTERM, SIGHUP) ends the wait, not the task: "task
# N still running; taskq log N --follow" on stderr, exit 128+N (130 for
# Ctrl-C); a task that could not start says why. stdout stays the task's
# output (or --json's object).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 2
mkgate() { rm -f "$TQ_TMP/$1"; mkfifo "$TQ_TMP/$1"; }
# Every task here ends by itself within a minute, whatever happens to the
# test (a worker killed by its cleanup leaves its task behind).
gated() { echo "timeout 60 sh -c \"echo $1; read x < '$TQ_TMP/$2'; echo ${3:-}\""; }
open_gate() { echo go >"$TQ_TMP/$1"; }

# on_tty_until TEXT CMD...: run CMD on a pseudo-terminal; once TEXT has
# appeared in what it wrote, type Ctrl-C on the terminal; print everything
# it wrote ("\r\n" back to "\n") and exit with its status. Fails (exit 99)
# if TEXT has not appeared within 20 s or CMD ended before it did.
on_tty_until() {
	"$TQ_PYTHON" - "$@" <<'PY'
import os, pty, select, sys, time
text = sys.argv[1].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out, sent, deadline = b"", False, time.monotonic() + 20
while True:
    if not sent and text in out:
        os.write(fd, b"\x03")
        sent = True
    left = deadline - time.monotonic()
    if not sent and left <= 0:
        os.kill(pid, 9)
        break
    r, _, _ = select.select([fd], [], [], max(left, 0) if not sent else 20)
    if not r:
        continue
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.buffer.write(out.replace(b"\r\n", b"\n"))
sys.exit(os.waitstatus_to_exitcode(st) if sent else 99)
PY
}

check "a terminal: the id at once, each line as it arrives; Ctrl-C leaves the task running, exit 130"
mkgate g1
run on_tty_until "first" "$TASKQ_BIN" submit --wait=60s --shell "$(gated first g1 second)"
assert_eq 130 "$TQ_RC" "exit status (output: $(out))"
id=$(out | sed -n 's/^taskq: submit: task \([0-9]*\): waiting up to 1m00s.*/\1/p')
[[ $id =~ ^[0-9]+$ ]] || fail "no id said at once: [$(out)]"
assert_eq "taskq: submit: task $id: waiting up to 1m00s for it to end (Ctrl-C leaves it running)
first
task $id still running; taskq log $id --follow" "$(out | sed 's/^\^C//')"
assert_eq running "$(state_of "$id")"
open_gate g1
wait_state "$id" succeeded 30
assert_exit 0 tq log "$id"
assert_eq "$(printf 'first\nsecond')" "$(out)"

check "--wait=0 into a pipe streams too: the first line is there while the task runs"
mkgate g2
tq_bg "$TASKQ_BIN" submit --wait=0 --shell "$(gated first g2 second)" \
	>"$TQ_TMP/p.out" 2>"$TQ_TMP/p.err"
waiter=$TQ_LAST_PID
wait_for "grep -qx first '$TQ_TMP/p.out'" 20 || fail "no line before the end: [$(cat "$TQ_TMP/p.out")]"
assert_contains "$(cat "$TQ_TMP/p.err")" ": waiting for it to end"
open_gate g2
wait "$waiter" || fail "submit --wait=0 exited $?"
assert_eq "$(printf 'first\nsecond')" "$(cat "$TQ_TMP/p.out")" "stdout is the task's output alone"

check "SIGTERM to a waiting submit --json: its object (done false), the line on stderr, 143"
tq_bg "$TASKQ_BIN" submit --json --wait=0 -- sleep 60 >"$TQ_TMP/j.out" 2>"$TQ_TMP/j.err"
waiter=$TQ_LAST_PID
wait_for "grep -q 'waiting for it to end' '$TQ_TMP/j.err'" 20 || fail "no id said: $(cat "$TQ_TMP/j.err")"
sid=$(sed -n 's/^taskq: submit: task \([0-9]*\): .*/\1/p' "$TQ_TMP/j.err")
wait_state "$sid" running
kill -TERM "$waiter"
rc=0; wait "$waiter" || rc=$?
assert_eq 143 "$rc" "exit status"
assert_eq "False|$sid|running" "$(pyjson '"|".join(str(x) for x in (d["done"], d["id"], d["state"]))' <"$TQ_TMP/j.out")"
assert_contains "$(cat "$TQ_TMP/j.err")" "task $sid still running; taskq log $sid --follow"
assert_eq running "$(state_of "$sid")"
assert_exit 0 tq kill "$sid"

check "a task that could not start: exit 127 and why, on stderr"
assert_exit 127 tq submit --wait -- no-such-command-xyz
assert_eq "" "$(out)"
assert_contains "$(err)" 'could not start: exec "no-such-command-xyz": No such file or directory'
nostart=$(err | sed -n 's/^taskq: submit: task \([0-9]*\): waiting.*/\1/p')
assert_exit 127 tq log "$nostart" --follow
assert_contains "$(err)" "taskq: log: task $nostart could not start: exec"

check "log --follow: Ctrl-C stops following, not the task: exit 130"
mkgate g3
f=$(submit_id --shell "$(gated one g3)")
run on_tty_until "one" "$TASKQ_BIN" log "$f" --follow
assert_eq 130 "$TQ_RC" "exit status (output: $(out))"
assert_eq running "$(state_of "$f")"
open_gate g3
wait_state "$f" succeeded 30
