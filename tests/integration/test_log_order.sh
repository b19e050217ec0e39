#!/usr/bin/env bash
# The order of stdout and stderr lines in the log, against the order the
# task wrote them (its output run with 2>&1), is as close as documented
# (README "Output order", help log): lines of one stream keep their order,
# and when line X of one stream was written before line Y of the other but
# the log shows Y first, fewer than B bytes went to X's stream after X and
# before Y, B being what the task's pipes hold (8 KiB; a page where pages
# are larger); 64 KiB when Y is among the first B bytes of a stream that
# spoke after the other had spoken alone (that one's pipe was wide).
# Checked for a writer alternating the two streams at full speed; for the
# worst case, the same writer while the worker is stopped so that both
# pipes fill to the brim before it reads; and for a writer that floods
# stdout alone first (its pipe is widened, and narrowed again when stderr
# speaks, which the writer sees with F_GETPIPE_SZ).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

bound=8192
page=$(getconf PAGESIZE)
((page > bound)) && bound=$page
wide=65536
writer=("$TQ_PYTHON" "$TASKQ_FIXTURES/alternate.py")

# worst ID REF: check task ID's log against REF, the lines in the order
# written; prints "BYTES FIRST LINES": the most bytes of the other stream
# written between a line and one placed before it, the same where the line
# placed first is among the first $bound bytes of a stream that spoke second
# (the wide bound), and the farthest a stderr line moved.
worst() {
	tq log "$1" --limit 1000000000 --json >"$TQ_TMP/log.json" ||
		fail "log $1: $(cat "$TQ_TMP/log.json")"
	"$TQ_PYTHON" - "$2" "$TQ_TMP/log.json" "$bound" <<'EOF'
import bisect, json, sys
ref = [l for l in open(sys.argv[1], "rb").read().split(b"\n")[:-1] if l[:1] != b"#"]
log = [json.loads(l) for l in open(sys.argv[2])]
bound = int(sys.argv[3])
stream = {"o": "stdout", "p": "stdout", "e": "stderr"}
out = lambda t: t[0] != ord("e")
assert [stream[l["text"][0]] for l in log] == [l["stream"] for l in log], "wrong stream"
assert sorted(l["text"].encode() for l in log) == sorted(ref), "lines lost or changed"
refpos = {t: p for p, t in enumerate(ref)}
logpos = {l["text"].encode(): p for p, l in enumerate(log)}
for s in (True, False):
    mine = [t for t in ref if out(t) == s]
    assert [logpos[t] for t in mine] == sorted(logpos[t] for t in mine), "a stream out of order"
# cum[s][p]: bytes of stream s (True: stdout) in ref[0:p+1], newlines included
cum = {True: [], False: []}
for t in ref:
    for s in (True, False):
        prev = cum[s][-1] if cum[s] else 0
        cum[s].append(prev + (len(t) + 1 if out(t) == s else 0))
first = {s: min(p for p, t in enumerate(ref) if out(t) == s) for s in (True, False)}
worst, worst_first = 0, 0
for a in (True, False):
    # for each line Y of the other stream: the earliest-written line X of
    # stream a that the log places after Y
    xs = sorted((logpos[t], refpos[t]) for t in ref if out(t) == a)
    keys = [x[0] for x in xs]
    suffix = [len(ref)] * (len(xs) + 1)
    for i in range(len(xs) - 1, -1, -1):
        suffix[i] = min(suffix[i + 1], xs[i][1])
    for t in ref:
        if out(t) == a:
            continue
        y = refpos[t]
        x = suffix[bisect.bisect_right(keys, logpos[t])]
        if x >= y:
            continue
        b = cum[a][y] - cum[a][x]
        if first[a] < first[not a] and cum[not a][y] <= bound:
            worst_first = max(worst_first, b)
        else:
            worst = max(worst, b)
moved = max(abs(logpos[t] - refpos[t]) for t in ref if not out(t))
print(worst, worst_first, moved)
EOF
}

# check_bounds ID REF
check_bounds() {
	local bytes first moved
	read -r bytes first moved < <(worst "$1" "$2")
	echo "    worst: $bytes bytes of the other stream ($first at a stream's start);" \
		"a stderr line moved $moved lines"
	((bytes < bound)) ||
		fail "a line was placed after $bytes bytes (bound $bound) of the other stream written after it"
	((first < wide)) ||
		fail "a stream's first line was placed after $first bytes (bound $wide) of the other"
}

serve_start 1 --lease 60s

check "a writer alternating the streams at full speed"
n=50000
id=$(submit_id -- "${writer[@]}" "$n")
wait_state "$id" succeeded 120
"${writer[@]}" "$n" >"$TQ_TMP/ref" 2>&1
check_bounds "$id" "$TQ_TMP/ref"

check "the same writer while the worker is stopped: both pipes fill"
n=20000
id=$(submit_id -- "${writer[@]}" "$n" "$TQ_TMP/go")
wait_state "$id" running
wait_for "[ -n \"\$(task_pid $id)\" ]" 20 || fail "task $id has no pid"
pid=$(task_pid "$id")
worker=$(ps -o ppid= -p "$pid" | tr -d ' ')
[ -n "$worker" ] || fail "no worker for task pid $pid"
kill -STOP "$worker"
touch "$TQ_TMP/go"
# until the writer waits on a full pipe (wchan names pipe_write; where
# wchan is hidden, a write(2) it sleeps in)
blocked() {
	grep -q pipe_write "/proc/$pid/wchan" 2>/dev/null ||
		{ [ "$(cut -d' ' -f1 "/proc/$pid/syscall" 2>/dev/null)" = 1 ] &&
		  grep -q '^State:.*S' "/proc/$pid/status"; }
}
wait_for blocked 30 || { kill -CONT "$worker"; fail "the writer never blocked"; }
kill -CONT "$worker"
wait_state "$id" succeeded 120
"${writer[@]}" "$n" >"$TQ_TMP/ref" 2>&1
check_bounds "$id" "$TQ_TMP/ref"

check "stdout alone gets a wide pipe, narrowed again when stderr speaks"
id=$(submit_id -- "${writer[@]}" --alone "$TQ_TMP/ref-alone" 20000)
wait_state "$id" succeeded 120
assert_eq "# wide $wide" "$(grep '^# wide' "$TQ_TMP/ref-alone")" "the stdout pipe was not widened"
narrow=$(grep '^# narrow' "$TQ_TMP/ref-alone")
[[ $narrow == "# narrow $bound after "* ]] || fail "the stdout pipe was not narrowed again: $narrow"
echo "    $narrow"
check_bounds "$id" "$TQ_TMP/ref-alone"
