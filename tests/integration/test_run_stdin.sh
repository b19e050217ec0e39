#!/usr/bin/env bash
# Standard input: /dev/null by default; --stdin-file (10 MB into cat);
# --stdin pipe with `taskq write`; --pty gives a terminal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "stdin is /dev/null by default (a reader sees EOF, not a hang)"
t0=$(submit_id --timeout 10s --shell 'cat; echo eof-seen')

check "--stdin-file: 10 MB delivered exactly"
head -c 10485760 /dev/urandom > "$TQ_TMP/in.bin"
t1=$(submit_id --stdin-file "$TQ_TMP/in.bin" --shell "cat > $TQ_TMP/out.bin")
check "--stdin-file into a task that exits early: recorded, not fatal"
t2=$(submit_id --stdin-file "$TQ_TMP/in.bin" -- true)

check "--stdin pipe: data written before the task starts is not lost"
t3=$(submit_id --stdin pipe --shell 'read a; read b; echo "got:$a:$b"; cat >/dev/null; echo closed')
assert_exit 0 tq write "$t3" "first" --line

check "--pty: the task sees a terminal"
t4=$(submit_id --pty --shell 'test -t 0 && test -t 1 && echo tty-yes')

serve_start 2
wait_state "$t0" succeeded
assert_eq eof-seen "$(log_bytes "$t0")"
wait_state "$t1" succeeded 60
cmp "$TQ_TMP/in.bin" "$TQ_TMP/out.bin" || fail "stdin file not delivered exactly"
wait_state "$t2" succeeded
wait_state "$t3" running
assert_exit 0 tq write "$t3" "second" --line
assert_exit 0 tq write "$t3" --eof
wait_state "$t3" succeeded
assert_eq "$(printf 'got:first:second\nclosed')" "$(log_bytes "$t3")"
wait_state "$t4" succeeded
assert_contains "$(log_bytes "$t4")" "tty-yes"

check "write to a task without --stdin pipe, or ended, is refused"
assert_exit 1 tq write "$t1" "x"
assert_contains "$(err)" "--stdin pipe"
assert_exit 1 tq write "$t3" "late"
assert_contains "$(err)" "has ended"
assert_exit 2 tq write 9999 "x"
