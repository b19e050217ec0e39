#!/usr/bin/env bash
# --stall-timeout counts output that does not end a line: a dot a second,
# binary bytes without a newline, a line longer than the log's 64 KiB line
# cap, the same through a pty -- each keeps its task alive, as "no output on
# either stream for DUR" says. (Before: bytes of an unended line counted
# only every 4096 of them, so each of these was stopped as "stalled: no
# output for 4.0s" while it printed every second.) Silence after an unended
# line is still a stall, and its reason quotes that line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 5
S=(--stall-timeout 4s --retries 0)

check "a dot a second, binary bytes, a pty, a 70 KiB line in pieces: no stall"
dots=$(submit_id "${S[@]}" -- sh -c 'for i in 1 2 3 4 5 6; do sleep 1; printf .; done; echo')
bin=$(submit_id "${S[@]}" -- sh -c 'for i in 1 2 3 4 5 6; do sleep 1; printf "\001\377\000"; done')
pty=$(submit_id "${S[@]}" --pty -- sh -c 'for i in 1 2 3 4 5 6; do sleep 1; printf .; done; echo')
long=$(submit_id "${S[@]}" -- sh -c 'for i in 1 2 3 4 5 6; do sleep 1; head -c 12000 /dev/zero | tr "\0" x; done; echo')
for id in "$dots" "$bin" "$pty" "$long"; do
	wait_state "$id" succeeded 60
	assert_eq "succeeded" "$(attempts_of "$id" outcome | paste -sd,)" \
		"attempts of task $id"
done
assert_eq 72000 "$(log_bytes "$long" | tr -d '\n' | wc -c)" "bytes of the long line"

check "dots, then silence: stalled, and the reason quotes the unended line"
quiet=$(submit_id "${S[@]}" -- sh -c 'printf "Downloading"; sleep 1; printf ..; exec sleep 60')
wait_state "$quiet" timed_out 60
assert_eq stalled "$(outcome_of "$quiet")"
assert_contains "$(task_field "$quiet" reason)" \
	"stalled: no new output for 4.0s; the last line, unended: Downloading.."
