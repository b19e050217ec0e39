#!/usr/bin/env bash
# --max-output: a task that writes for ever is stopped once its output
# reaches the cap, ends failed with outcome output_overflow, and its log
# holds exactly the cap's worth of output, read back through taskq log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 2
check "stdout for ever: output_overflow, exactly 1M in the log"
yes_id=$(submit_id --max-output 1M -- yes)
check "both streams for ever: the cap counts both"
both=$(submit_id --max-output 1M -- bash -c 'x=$(printf "%099d" 0); while :; do echo "o$x"; echo "e$x" >&2; done')
wait_state "$yes_id" failed 60
wait_state "$both" failed 60
for id in "$yes_id" "$both"; do
	assert_eq output_overflow "$(outcome_of "$id")"
	assert_contains "$(task_field "$id" reason)" "output cap of 1.0M"
	assert_eq 1048576 "$(tq log "$id" --offset 0 --raw | wc -c)"
done
check "what was kept is the output's start, unchanged"
head -c 1048576 < <(yes) | cmp - <(tq log "$yes_id" --offset 0 --raw) ||
	fail "the kept output is not yes's first 1M"
check "log --follow and submit --wait say 1 for an overflow"
assert_exit 1 tq log "$yes_id" --follow --limit 0
check "both streams' kept lines are whole, each of its own stream"
tq log "$both" --offset 0 --json | "$TQ_PYTHON" -c '
import json, re, sys
for raw in sys.stdin:
    d = json.loads(raw)
    tag = "o" if d["stream"] == "stdout" else "e"
    assert re.fullmatch(tag + "?0*", d["text"]), d
' || fail "a line of one stream holds bytes of the other"
assert_exit 0 tq poll "$both" --json
assert_eq "failed|output_overflow|1" "$(out | pyjson '"|".join(str(d[k]) for k in ("state", "outcome", "exit_status"))')"
