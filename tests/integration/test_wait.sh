#!/usr/bin/env bash
# taskq submit --wait[=DUR]: a task that ends in time prints its output as
# it ran (stdout to stdout, stderr to stderr, exact bytes) and submit exits
# with the task's exit status; one that does not prints its id, its last
# lines and that it goes on, and exits 0. Into a file, stdout is only that;
# stderr starts with the line naming the task waited for. With a supervisor
# started by autostart, and with --no-start and none running.

# stderr without submit's first line ("taskq: submit: task N: waiting ...")
err_rest() { err | sed '1{/^taskq: submit: task [0-9]*: waiting /d}'; }
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "bad values are usage errors naming --wait"
assert_exit 2 tq submit --wait=abc -- true
assert_one_line_error
assert_contains "$(err)" '--wait "abc"'
assert_exit 2 tq submit --wait=
run tq list --json --limit 0 # no task stored: none listed, or no state directory yet
if [ "$TQ_RC" = 0 ]; then assert_eq "[]" "$(out)"; else assert_contains "$(err)" "does not exist"; fi

check "no supervisor and --no-start: it times out; the id, 'still queued', exit 0"
assert_exit 0 env TASKQ_AUTOSTART=1 "$TASKQ_BIN" submit --no-start --wait=300ms -- echo later
queued=$(out)
[[ $queued =~ ^[0-9]+$ ]] || fail "stdout is not an id: [$queued]"
assert_eq "taskq: submit: task $queued: waiting up to 300ms for it to end (Ctrl-C leaves it running)
task $queued is still queued; taskq poll $queued / taskq log $queued --follow" "$(err)"
assert_eq queued "$(state_of "$queued")"
tq cancel "$queued" >/dev/null

check "autostart: a quick task's output, split by stream, and its exit code"
export TASKQ_AUTOSTART=1
assert_exit 3 tq submit --wait -- sh -c 'echo out; echo err >&2; echo out2; exit 3'
assert_eq "$(printf 'out\nout2')" "$(out)"
assert_eq "err" "$(err_rest)"
sup=$(tq status --json | pyjson 'd["supervisor_pid"]')
[[ $sup =~ ^[0-9]+$ ]] || fail "no supervisor was started: $(tq status)"
tq_track "$sup"

check "exact bytes, a last line without a newline"
tq submit --wait -- printf 'a\0b\377\nno newline' >"$TQ_TMP/got"
printf 'a\0b\377\nno newline' | cmp - "$TQ_TMP/got" || fail "--wait output is not the exact bytes"

check "the task's exit status: a signal, a command that does not exist"
assert_exit 143 tq submit --wait -- sh -c 'kill -TERM $$'
assert_exit 127 tq submit --wait -- no-such-command-xyz
assert_exit 0 tq submit --wait=0 -- sh -c 'sleep 0.3; echo slept'
assert_eq slept "$(out)"

check "a bare --wait does not take the command as its value"
assert_exit 0 tq submit --wait echo bare
assert_eq bare "$(out)"
check "-- ends the options: a --wait after it is the command's"
assert_exit 0 tq submit --wait -- echo --wait
assert_eq "--wait" "$(out)"

check "a slow task: the id, the last lines and where to look, exit 0"
start=$(_tq_now_ms)
assert_exit 0 tq submit --wait=500ms -- sh -c 'seq 1 30; sleep 1000'
elapsed=$(($(_tq_now_ms) - start))
slow=$(out)
[[ $slow =~ ^[0-9]+$ ]] || fail "stdout is not an id: [$slow]"
[ "$elapsed" -ge 500 ] || fail "returned after $elapsed ms, before --wait=500ms"
[ "$elapsed" -lt 5000 ] || fail "returned after $elapsed ms"
assert_eq "$(seq 11 30)
task $slow is still running; taskq poll $slow / taskq log $slow --follow" "$(err_rest)"
assert_eq running "$(state_of "$slow")"
assert_exit 0 tq kill "$slow"

check "--json: one object, done or not"
assert_exit 0 tq submit --json --wait=300ms -- sh -c 'seq 1 25; sleep 1000'
slow2=$(out | pyjson 'd["id"]')
assert_eq "False|running|None|6|25|25" "$(out | pyjson '"|".join(str(x) for x in (d["done"], d["state"], d["exit_status"], d["lines"][0]["text"], d["lines"][-1]["n"], d["total"]))')"
assert_exit 0 tq kill "$slow2"
assert_exit 4 tq submit --json --wait -- sh -c 'echo x; echo y >&2; exit 4'
assert_eq "True|failed|4|4|2" "$(out | pyjson '"|".join(str(x) for x in (d["done"], d["state"], d["exit_code"], d["exit_status"], len(d["lines"])))')"

assert_exit 0 tq shutdown
wait_for "! _tq_alive $sup" 20 || fail "the autostarted supervisor did not stop"
