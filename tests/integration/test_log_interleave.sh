#!/usr/bin/env bash
# stdout and stderr written in a tight loop, each line in two writes with a
# write to the other stream between them (tests/fixtures/interleave.sh):
# no line of one stream holds bytes of the other, each stream reads back
# exactly with --stream, and --json labels every line with its stream.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

n=20000
serve_start 1
id=$(submit_id -- "$TASKQ_FIXTURES/interleave.sh" "$n")
wait_state "$id" succeeded 120
for i in $(seq 1 "$n"); do echo "o$i-a-b"; done >"$TQ_TMP/out.want"
sed 's/^o/e/' "$TQ_TMP/out.want" >"$TQ_TMP/err.want"

check "each stream reads back exactly"
assert_exit 0 tq log "$id" --stream stdout --offset 0
cmp "$TQ_OUT" "$TQ_TMP/out.want" || fail "stdout: $(cmp "$TQ_OUT" "$TQ_TMP/out.want" 2>&1)"
assert_exit 0 tq log "$id" --stream stderr --offset 0 --raw
cmp "$TQ_OUT" "$TQ_TMP/err.want" || fail "stderr: $(cmp "$TQ_OUT" "$TQ_TMP/err.want" 2>&1)"

check "no line mixes the streams; --json says which stream each line is"
assert_exit 0 tq log "$id" --offset 0 --json
"$TQ_PYTHON" - "$TQ_OUT" "$TQ_TMP/out.want" "$TQ_TMP/err.want" <<'EOF' || fail "JSON lines are wrong"
import json, re, sys
rebuilt = {"stdout": [], "stderr": []}
want_tag = {"stdout": "o", "stderr": "e"}
other = {"stdout": "e", "stderr": "o"}
n = 0
for raw in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(raw)
    n += 1
    assert d["n"] == n, (d, n)
    s, text = d["stream"], d["text"]
    assert s in rebuilt, d
    # a piece (newline false) only if a stall split the line; never bytes
    # of the other stream
    assert other[s] not in text, ("mixed line", d)
    assert re.fullmatch(want_tag[s] + r"?[0-9]*(-a)?(-b)?", text), d
    rebuilt[s].append(text + ("\n" if d.get("newline", True) else ""))
for s, path in (("stdout", sys.argv[2]), ("stderr", sys.argv[3])):
    assert "".join(rebuilt[s]) == open(path).read(), s + " differs"
print(n, "lines")
EOF
assert_eq $((2 * n)) "$(tq log "$id" --offset 0 | wc -l)"
