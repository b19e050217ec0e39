#!/usr/bin/env bash
# The order of stdout and stderr lines in the log, against the order the
# task wrote them (its output run with 2>&1), is as close as documented
# (README "Output order", help log): lines of one stream keep their order,
# and when line X of one stream was written before line Y of the other but
# the log shows Y first, fewer than B bytes went to X's stream after X and
# before Y, B being what the task's pipes hold (8 KiB; a page where pages
# are larger). Checked for a writer alternating the two streams at full
# speed, and for the worst case: the same writer while the worker is
# stopped, so that both pipes fill to the brim before the worker reads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

bound=8192
page=$(getconf PAGESIZE)
((page > bound)) && bound=$page
writer=("$TQ_PYTHON" "$TASKQ_FIXTURES/alternate.py")

# worst ID N: check task ID's log against the 2>&1 order of N lines each;
# prints "BYTES LINES": the most bytes of the other stream written between a
# line and one placed before it, and the farthest a stderr line moved.
worst() {
	"${writer[@]}" "$2" >"$TQ_TMP/ref" 2>&1
	tq log "$1" --offset 0 --json >"$TQ_TMP/log.json" ||
		fail "log $1: $(cat "$TQ_TMP/log.json")"
	"$TQ_PYTHON" - "$TQ_TMP/ref" "$TQ_TMP/log.json" <<'EOF'
import bisect, json, sys
ref = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
log = [json.loads(l) for l in open(sys.argv[2])]
stream = {"o": "stdout", "e": "stderr"}
assert [stream[l["text"][0]] for l in log] == [l["stream"] for l in log], "wrong stream"
assert sorted(l["text"].encode() for l in log) == sorted(ref), "lines lost or changed"
refpos = {t: p for p, t in enumerate(ref)}
logpos = {l["text"].encode(): p for p, l in enumerate(log)}
for s in b"oe":
    mine = [t for t in ref if t[0] == s]
    assert [logpos[t] for t in mine] == sorted(logpos[t] for t in mine), "a stream out of order"
# cum[s][p]: bytes of stream s in ref[0:p+1], newlines included
cum = {s: [] for s in b"oe"}
for t in ref:
    for s in b"oe":
        prev = cum[s][-1] if cum[s] else 0
        cum[s].append(prev + (len(t) + 1 if t[0] == s else 0))
worst = 0
for a, b in ((ord("o"), ord("e")), (ord("e"), ord("o"))):
    # for each line Y of stream b: the earliest-written line X of stream a
    # that the log places after Y
    xs = sorted((logpos[t], refpos[t]) for t in ref if t[0] == a)
    keys = [x[0] for x in xs]
    suffix = [len(ref)] * (len(xs) + 1)
    for i in range(len(xs) - 1, -1, -1):
        suffix[i] = min(suffix[i + 1], xs[i][1])
    for t in ref:
        if t[0] != b:
            continue
        x = suffix[bisect.bisect_right(keys, logpos[t])]
        if x < refpos[t]:
            worst = max(worst, cum[a][refpos[t]] - cum[a][x])
moved = max(abs(logpos[t] - refpos[t]) for t in ref if t[0] == ord("e"))
print(worst, moved)
EOF
}

serve_start 1 --lease 60s

check "a writer alternating the streams at full speed"
n=50000
id=$(submit_id -- "${writer[@]}" "$n")
wait_state "$id" succeeded 120
read -r bytes moved < <(worst "$id" "$n")
echo "    worst: $bytes bytes of the other stream; a stderr line moved $moved lines"
((bytes < bound)) || fail "a line was placed after $bytes bytes (bound $bound) of the other stream written after it"

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
read -r bytes moved < <(worst "$id" "$n")
echo "    worst: $bytes bytes of the other stream; a stderr line moved $moved lines"
((bytes < bound)) || fail "a line was placed after $bytes bytes (bound $bound) of the other stream written after it"
