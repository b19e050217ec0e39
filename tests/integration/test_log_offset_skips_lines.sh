#!/usr/bin/env bash
# log --offset N counts the lines to skip, as SQL's OFFSET and the process
# tool's lines.slice(offset, offset + limit): --offset 0 is the first line,
# --offset 3 --limit 1 the fourth. --limit alone stays the last M lines,
# line numbers in --json stay 1-based, and poll's "next" (a line number)
# minus one is the --offset that reads on from where the poll stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

serve_start 1
id=$(submit_id -- seq 1 10)
wait_state "$id" succeeded 60

check "--offset 0 is the first line; --offset 0 alone is the whole output"
assert_exit 0 tq log "$id" --offset 0 --limit 1
assert_eq 1 "$(out)"
assert_exit 0 tq log "$id" --offset 0
assert_eq "$(seq 1 10)" "$(out)"
assert_eq "" "$(err)" "no paging hint once an offset is given"

check "--offset 3 --limit 1 is the fourth line, numbered 4 in --json"
assert_exit 0 tq log "$id" --offset 3 --limit 1
assert_eq 4 "$(out)"
assert_exit 0 tq log "$id" --offset 3 --limit 1 --json
assert_eq 4 "$(out | pyjson 'd["n"]')"
assert_eq 4 "$(out | pyjson 'd["text"]')"

check "--offset 9 is the last line, --offset 10 is past the end"
assert_exit 0 tq log "$id" --offset 9
assert_eq 10 "$(out)"
assert_exit 0 tq log "$id" --offset 10
assert_eq "" "$(out)"

check "--limit alone is still the last M lines"
assert_exit 0 tq log "$id" --limit 2
assert_eq "$(seq 9 10)" "$(out)"

check "--follow --offset N prints from line N+1"
assert_exit 0 tq log "$id" --follow --offset 8
assert_eq "$(seq 9 10)" "$(out)"

check "a negative offset is a usage error naming the flag"
assert_exit 2 tq log "$id" --offset -1
assert_one_line_error
assert_contains "$(err)" "--offset"

check "poll's next - 1 is the offset that reads on from where it stopped"
assert_exit 0 tq poll "$id" --json
next=$(out | pyjson 'd["next"]')
assert_eq 11 "$next"
assert_exit 0 tq log "$id" --offset $((next - 1))
assert_eq "" "$(out)"
