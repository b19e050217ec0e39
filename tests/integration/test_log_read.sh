#!/usr/bin/env bash
# taskq log: the default last 200 lines and its hint; --offset/--limit at
# the start, middle, end and past the end; --stream numbering; empty and
# unknown tasks; bad flags; and the index deleted, truncated or damaged
# while the log still reads right.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

check "no state directory: exit 2, one line saying so, nothing created"
assert_exit 2 tq log 1
assert_one_line_error
assert_contains "$(err)" "state directory $TASKQ_HOME does not exist"
[ ! -e "$TASKQ_HOME" ] || fail "log created the state directory"

serve_start 2
seqt=$(submit_id -- seq 1 5000)
mixed=$(submit_id -- "$TASKQ_FIXTURES/interleave.sh" 6000)
small=$(submit_id -- printf 'a\nb\n')
silent=$(submit_id -- true)
for id in "$seqt" "$mixed" "$small" "$silent"; do
	wait_state "$id" succeeded 60
done

check "default: the last 200 lines, and a hint on stderr"
assert_exit 0 tq log "$seqt"
assert_eq "$(seq 4801 5000)" "$(out)"
assert_eq "lines 4801-5000 of 5000; --offset/--limit to page" "$(err)"

check "--offset/--limit at the start, middle and end"
assert_exit 0 tq log "$seqt" --offset 0 --limit 3
assert_eq "$(seq 1 3)" "$(out)"
assert_eq "" "$(err)" "no hint when paging"
assert_exit 0 tq log "$seqt" --offset 2499 --limit 4
assert_eq "$(seq 2500 2503)" "$(out)"
assert_exit 0 tq log "$seqt" --offset 4998 --limit 10
assert_eq "$(seq 4999 5000)" "$(out)"
assert_exit 0 tq log "$seqt" --offset 4999
assert_eq 5000 "$(out)"
check "--offset alone reads to the end; --offset 0 is everything"
assert_exit 0 tq log "$seqt" --offset 4989
assert_eq "$(seq 4990 5000)" "$(out)"
assert_exit 0 tq log "$seqt" --offset 0
seq 1 5000 >"$TQ_TMP/seq.want"
cmp "$TQ_OUT" "$TQ_TMP/seq.want" || fail "--offset 0 is not the whole output"

check "past the end: nothing, exit 0"
assert_exit 0 tq log "$seqt" --offset 5000
assert_eq "" "$(out)"
assert_exit 0 tq log "$seqt" --offset 99999 --limit 5
assert_eq "" "$(out)"
assert_eq "" "$(err)"

check "--limit alone: the last M lines"
assert_exit 0 tq log "$seqt" --limit 3
assert_eq "$(seq 4998 5000)" "$(out)"
assert_eq "lines 4998-5000 of 5000; --offset/--limit to page" "$(err)"
assert_exit 0 tq log "$seqt" --limit 0
assert_eq "" "$(out)"
assert_eq "5000 lines; --offset/--limit to page" "$(err)"

check "JSON lines carry the line numbers"
assert_exit 0 tq log "$seqt" --offset 9 --limit 2 --json
assert_eq '{"n":10,"stream":"stdout","text":"10"}
{"n":11,"stream":"stdout","text":"11"}' "$(out)"

check "--stream: each stream in its own numbering"
for i in $(seq 1 6000); do echo "o$i-a-b"; done >"$TQ_TMP/out.want"
for i in $(seq 1 6000); do echo "e$i-a-b"; done >"$TQ_TMP/err.want"
assert_exit 0 tq log "$mixed" --stream stdout --offset 0
cmp "$TQ_OUT" "$TQ_TMP/out.want" || fail "stdout stream differs"
assert_exit 0 tq log "$mixed" --stream stderr --offset 0
cmp "$TQ_OUT" "$TQ_TMP/err.want" || fail "stderr stream differs"
assert_exit 0 tq log "$mixed" --stream stderr --offset 2999 --limit 2
assert_eq "$(printf 'e3000-a-b\ne3001-a-b')" "$(out)"
assert_exit 0 tq log "$mixed" --stream stderr --offset 2999 --limit 1 --json
assert_eq '{"n":3000,"stream":"stderr","text":"e3000-a-b"}' "$(out)"
assert_exit 0 tq log "$mixed" --stream stdout
assert_eq "$(tail -n 200 "$TQ_TMP/out.want")" "$(out)"
assert_eq "lines 5801-6000 of 6000 (stdout); --offset/--limit to page" "$(err)"
check "both streams: 12000 lines, each whole and in its stream's order"
assert_exit 0 tq log "$mixed" --offset 0
assert_eq 12000 "$(wc -l <"$TQ_OUT")"
assert_eq "$(cat "$TQ_TMP/out.want")" "$(grep '^o' "$TQ_OUT")"
assert_eq "$(cat "$TQ_TMP/err.want")" "$(grep '^e' "$TQ_OUT")"

check "a short log is shown whole, with no hint; no output is no lines"
assert_exit 0 tq log "$small"
assert_eq "$(printf 'a\nb')" "$(out)"
assert_eq "" "$(err)"
assert_exit 0 tq log "$silent"
assert_eq "" "$(out)"
assert_eq "" "$(err)"

check "bad flags are usage errors naming the flag"
assert_exit 2 tq log "$seqt" --offset -1
assert_contains "$(err)" "--offset"
assert_exit 2 tq log "$seqt" --limit -1
assert_contains "$(err)" "--limit"
assert_exit 2 tq log "$seqt" --stream both
assert_contains "$(err)" 'expected stdout or stderr'
assert_exit 2 tq log "$seqt" --json --raw
assert_exit 2 tq log "$seqt" --follow --offset 0 --limit 2
assert_exit 2 tq log
assert_exit 2 tq log abc
assert_exit 2 tq log 99999
assert_contains "$(err)" "task 99999: no such task"

check "the index deleted, truncated or damaged: the log still reads right"
idx="$TASKQ_HOME/logs/$mixed.idx"
[ -s "$idx" ] || fail "no index for a 12000-line log"
reads() {
	tq log "$mixed" --stream stderr --offset 4999 --limit 3
	tq log "$mixed" --stream stdout --offset 4096 --limit 2
	tq log "$mixed" --offset 8192 --limit 3 --json
	tq log "$mixed" 2>&1 | md5sum
	tq log "$mixed" --offset 0 | md5sum
}
reads >"$TQ_TMP/reads.want"
assert_contains "$(cat "$TQ_TMP/reads.want")" "e5000-a-b"
cp "$idx" "$TQ_TMP/idx.saved"
rm "$idx"
reads >"$TQ_TMP/reads.got"
cmp "$TQ_TMP/reads.want" "$TQ_TMP/reads.got" || fail "reads differ without the index"
for size in 100 64 1; do
	cp "$TQ_TMP/idx.saved" "$idx"
	truncate -s "$size" "$idx"
	reads >"$TQ_TMP/reads.got"
	cmp "$TQ_TMP/reads.want" "$TQ_TMP/reads.got" || fail "reads differ with the index cut to $size bytes"
done
cp "$TQ_TMP/idx.saved" "$idx"
dd if=/dev/urandom of="$idx" bs=1 seek=64 count=64 conv=notrunc status=none
reads >"$TQ_TMP/reads.got"
cmp "$TQ_TMP/reads.want" "$TQ_TMP/reads.got" || fail "reads differ with a damaged index entry"

check "a task that has not run yet has no lines; that is not an error"
assert_exit 0 tq shutdown
later=$(submit_id -- echo later)
assert_exit 0 tq log "$later"
assert_eq "" "$(out)"
assert_eq "" "$(err)"
assert_exit 0 tq log "$later" --json
assert_eq "" "$(out)"
