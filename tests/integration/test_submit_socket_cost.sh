#!/usr/bin/env bash
# test_submit_socket_cost.sh - what serving connections side by side adds to
# the supervisor's work per submit stays small: counted in instructions
# (callgrind), which a loaded machine does not change. Counted: everything
# tq_submitd_poll and tq_submitd_serve do but read, decode, store and
# answer the request, and the store's checkpoint once the answers are sent
# (tq_queue_tidy) (that is the store's cost, the same on every path) --
# the walk over the connection slots and the accept, on every wakeup of the
# supervisor's loop. Serving side by side cost 7,100 instructions a submit
# there (a struct tq_err of 516 bytes zeroed for each of the 64 slots on
# every wakeup: +2.5 % of the supervisor's whole work per submit); now 800.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
if tq_is_sanitized; then
	echo "SKIP: valgrind cannot run a sanitizer build"
	exit 77
fi

N=100
MAX_PER_SUBMIT=2000
OUT="$TQ_TMP/callgrind.out"

assert_exit 0 tq submit --no-start -- true
# collection on only inside poll and serve, and off again inside each
# public function they call for the request itself
tq_bg valgrind --tool=callgrind --callgrind-out-file="$OUT" --collect-atstart=no \
	--toggle-collect=tq_submitd_poll --toggle-collect=tq_submitd_serve \
	--toggle-collect=tq_wire_frame_read --toggle-collect=tq_wire_decode \
	--toggle-collect=tq_wire_free --toggle-collect=tq_queue_submit \
	--toggle-collect=tq_queue_wants_worker --toggle-collect=tq_doorbell_ring \
	--toggle-collect=tq_wire_answer_ok --toggle-collect=tq_wire_frame_release \
	--toggle-collect=tq_queue_tidy \
	"$TASKQ_BIN" serve --foreground --workers 1 2>>"$TQ_TMP/serve.log"
VG=$TQ_LAST_PID
wait_for "[ -S '$TASKQ_HOME/submit.sock' ]" 120 || fail "no socket: $(tail -5 "$TQ_TMP/serve.log")"

check "$N submits through the socket: at most $MAX_PER_SUBMIT instructions each of its own"
for i in $(seq 1 $N); do
	assert_exit 0 tq submit --name "c$i" -- true
done
assert_exit 0 tq list --json --limit 0
assert_eq "$N" "$(out | pyjson 'sum(t["name"].startswith("c") for t in d)')"
assert_exit 0 tq shutdown
wait_for "! _tq_alive $VG" 60 || fail "the supervisor under valgrind did not stop"
total=$(awk '$1 == "totals:" { print $2 }' "$OUT")
[ -n "$total" ] || fail "no totals in $OUT"
echo "    ($total instructions for $N submits: $((total / N)) each)"
[ $((total / N)) -le $MAX_PER_SUBMIT ] ||
	fail "$((total / N)) instructions a submit in the socket's own work, over $MAX_PER_SUBMIT"
