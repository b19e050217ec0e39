#!/usr/bin/env bash
# A 100 MB output read back byte for byte: the whole log with --offset 0
# --raw to a file, compared with the same command's own output; and the
# cost of reading the end does not depend on the log's size.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# seq 1 12500000 is 101,388,897 bytes; then a last line without a newline
script='seq 1 12500000; printf "the end, no newline"'
sh -c "$script" >"$TQ_TMP/want"
size=$(stat -c %s "$TQ_TMP/want")
[ "$size" -gt 100000000 ] || fail "expected output of over 100 MB, got $size"

serve_start 1
id=$(submit_id --max-output 200M --shell "$script")
wait_state "$id" succeeded 300

check "the whole log, raw, to a file: byte for byte"
tq log "$id" --offset 0 --raw >"$TQ_TMP/got"
cmp "$TQ_TMP/want" "$TQ_TMP/got" || fail "100 MB read back differs: $(cmp "$TQ_TMP/want" "$TQ_TMP/got" 2>&1)"
check "not a terminal: the same bytes without --raw"
tq log "$id" --offset 12499989 >"$TQ_TMP/got"
cmp <(tail -n 12 "$TQ_TMP/want") "$TQ_TMP/got" || fail "tail read differs"

check "the last lines and a page near the end, found through the index"
assert_exit 0 tq log "$id" --limit 2
assert_eq "$(printf '12500000\nthe end, no newline')" "$(out)"
assert_eq "lines 12500000-12500001 of 12500001; --offset/--limit to page" "$(err)"
assert_exit 0 tq log "$id" --offset 11999999 --limit 2
assert_eq "$(printf '12000000\n12000001')" "$(out)"
assert_exit 0 tq log "$id" --json --limit 1
assert_eq '{"n":12500001,"stream":"stdout","text":"the end, no newline","newline":false}' "$(out)"
