#!/usr/bin/env bash
# Output bytes are stored exactly (NUL, invalid UTF-8, "\r" progress bars,
# escape sequences, a last line without a newline, a line longer than a
# record) and come back exactly off a terminal and with --raw; on a
# terminal they are escaped; --json carries text_base64 for what is not
# UTF-8 text.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# on_tty CMD...: run CMD on a pseudo-terminal (stdout and stderr), print
# what it wrote with the terminal's "\r\n" turned back into "\n", and exit
# with its status.
on_tty() {
	"$TQ_PYTHON" - "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.buffer.write(out.replace(b"\r\n", b"\n"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}

fmt='plain\n\0nul\0\n\377\376bad\nprogress 1\rprogress 2\r\n\033[31mred\n\\back\ttab\nh\303\251llo \342\234\223\nnonl'
printf "$fmt" >"$TQ_TMP/want"
long=$(head -c 100000 /dev/zero | tr '\0' x)

serve_start 1
id=$(submit_id -- bash -c "printf '$fmt'")
longid=$(submit_id -- bash -c 'x=$(head -c 100000 /dev/zero | tr "\0" x); printf "%s\nshort\n%s" "$x" "$x"')
wait_state "$id" succeeded
wait_state "$longid" succeeded

check "stored exactly: the log's records hold the bytes"
log_bytes "$id" >"$TQ_TMP/stored"
cmp "$TQ_TMP/want" "$TQ_TMP/stored" || fail "the log file does not hold the output"

check "off a terminal, and with --raw: the exact bytes"
tq log "$id" >"$TQ_TMP/got"
cmp "$TQ_TMP/want" "$TQ_TMP/got" || fail "log to a file differs"
tq log "$id" --raw | cmp "$TQ_TMP/want" - || fail "log --raw to a pipe differs"
printf '%s\nshort\n%s' "$long" "$long" >"$TQ_TMP/long.want"
tq log "$longid" --offset 0 --raw >"$TQ_TMP/long.got"
cmp "$TQ_TMP/long.want" "$TQ_TMP/long.got" || fail "a line longer than a record differs"

check "on a terminal: escaped C-style, UTF-8 text kept, \\c for no newline"
on_tty "$TASKQ_BIN" log "$id" >"$TQ_TMP/tty"
want_tty='plain
\000nul\000
\377\376bad
progress 1\rprogress 2\r
\033[31mred
\\back\ttab
héllo ✓
nonl\c'
assert_eq "$want_tty" "$(cat "$TQ_TMP/tty")"
check "--raw on a terminal: the bytes as they are"
on_tty "$TASKQ_BIN" log "$id" --raw >"$TQ_TMP/tty"
cmp "$TQ_TMP/want" "$TQ_TMP/tty" || fail "log --raw on a terminal differs"
check "a long line comes in pieces: marked on a terminal, joined off it"
on_tty "$TASKQ_BIN" log "$longid" --offset 0 --limit 1 >"$TQ_TMP/tty"
assert_eq "$(head -c 65536 /dev/zero | tr '\0' x)\\c" "$(cat "$TQ_TMP/tty")"

check "--json: text, text_base64 with the exact bytes, newline false"
assert_exit 0 tq log "$id" --json
assert_eq 8 "$(wc -l <"$TQ_OUT")"
"$TQ_PYTHON" - "$TQ_OUT" "$TQ_TMP/want" <<'PY' || fail "JSON does not rebuild the output"
import base64, json, sys
out = b""
for raw in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(raw)
    b = base64.b64decode(d["text_base64"]) if "text_base64" in d else d["text"].encode()
    if "text_base64" in d:
        assert "\ufffd" in d["text"], d
    out += b + (b"\n" if d.get("newline", True) else b"")
assert out == open(sys.argv[2], "rb").read(), out
PY
assert_contains "$(out)" '{"n":2,"stream":"stdout","text":"�nul�","text_base64":"AG51bAA="}'
assert_contains "$(out)" '{"n":4,"stream":"stdout","text":"progress 1\rprogress 2\r"}'
assert_contains "$(out)" '{"n":8,"stream":"stdout","text":"nonl","newline":false}'

check "poll on a terminal: escaped like log, --raw the bytes; the status line after"
on_tty "$TASKQ_BIN" poll "$id" >"$TQ_TMP/tty"
assert_eq "$want_tty
task $id: succeeded, exit status 0; 8 new lines (1-8 of 8); end of output" "$(cat "$TQ_TMP/tty")"
on_tty "$TASKQ_BIN" poll "$id" --as raw --raw >"$TQ_TMP/tty"
{ cat "$TQ_TMP/want"; printf '\ntask %s: succeeded, exit status 0; 8 new lines (1-8 of 8); end of output\n' "$id"; } |
	cmp - "$TQ_TMP/tty" || fail "poll --raw on a terminal differs"
