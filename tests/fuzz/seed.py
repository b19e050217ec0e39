#!/usr/bin/env python3
"""seed.py - (re)make the seed inputs of tests/fuzz/corpus/<target>/ from
real inputs: the agent outputs in tests/fixtures/agent-outputs, the durations
and sizes of the docs, JSON lines in the form of `taskq submit --file`, the
patterns of rules.json with the lines of those outputs they match, and
log + index pairs written by a real taskq (TASKQ_BIN, if given).

    tests/fuzz/seed.py [TASKQ_BIN]

Seeds are named seed-*; inputs the fuzzers found and were merged in
(tests/fuzz/run --merge) have other names and are kept.
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
corpus = os.path.join(here, "corpus")


def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


durations = ["30s", "5m", "2h", "1d", "1w", "250ms", "1h30m", "1.5h", "0", "10",
             "3m05s", "12.3s", "450ms", "3d04h", "100y", "5x", "", "1h30", "-1s",
             "99999999999999999999s", "0.0001ms", "1e3s", " 5m", "5m "]
for i, d in enumerate(durations):
    put("fuzz_duration", "%02d" % i, d)

sizes = ["512K", "50M", "1G", "1.5G", "0", "100", "1KiB", "2MB", "10B", "1P",
         "1.5", "0.5K", "1e3", "-1", "18446744073709551616", "7T", "k", "",
         "42", "1,5", "0x10"]
for i, s in enumerate(sizes):
    put("fuzz_size", "%02d" % i, s)

# agent outputs: byte 0 picks the parser (fuzz_result.c: claude, gemini,
# codex, opencode, unknown)
parsers = {"claude": 0, "gemini": 1, "codex": 2, "opencode": 3}
fixtures = os.path.join(root, "tests", "fixtures", "agent-outputs")
for name in sorted(os.listdir(fixtures)):
    agent = name.split("-")[0]
    if agent not in parsers:
        continue
    with open(os.path.join(fixtures, name), "rb") as f:
        data = f.read()
    put("fuzz_result", name, bytes([parsers[agent]]) + data)
put("fuzz_result", "unknown", bytes([4]) + b'{"type":"result","result":"x"}\n')

# fuzz_prefilter.c, raw mode: byte 0 = REG_ICASE | raw | (patterns - 1) << 2,
# NUL-terminated patterns, then the text: the patterns of rules.json (as
# the rules compile them) with lines of the agent outputs that they match
# (Python's re stands in for regexec to choose them; regexec decides) cut
# around the match, and a few that match none.
PF_MAX = 4000  # under tests/fuzz/run's -max_len for the target


def pf_put(name, pats, icase, lines):
    head = bytes([(1 if icase else 0) | 2 | (len(pats) - 1) << 2])
    body = b"".join(p.encode() + b"\0" for p in pats)
    text = b""
    for ln in lines:
        if len(head) + len(body) + len(text) + len(ln) + 1 > PF_MAX:
            break
        text += ln + b"\n"
    put("fuzz_prefilter", name, head + body + text)


with open(os.path.join(root, "rules.json")) as f:
    rules = json.load(f)["rules"]
out_lines = [  # what the retry hints read, as providers write it
    b'retry-after: 30', b'{"retry_after": 12, "error": "rate_limited"}',
    b'Please retry after 20 seconds', b'Retry in 1500ms.', b'retry in 38.5s',
    b'"retryDelay": "38s"', b'Your limit resets 3pm (Europe/Paris)',
    b'5-hour limit reached \xe2\x88\x99 resets Jan 5 at 3:45 pm',
    b'continuing automatically at 5:00 PM', b'Claude AI usage limit reached|1750000000',
]
for name in sorted(os.listdir(fixtures)):
    if name == "README.md":
        continue
    with open(os.path.join(fixtures, name), "rb") as f:
        out_lines += [ln for ln in f.read().split(b"\n") if ln.strip()]
pf_rules = []
for r in rules:
    if "pattern" in r:
        pf_rules.append((r["id"], r["pattern"], r.get("icase", True)))
    elif "pattern" in r.get("retry_after", {}):
        pf_rules.append((r["id"], r["retry_after"]["pattern"], True))
for rid, pat, icase in pf_rules:
    rx = re.compile(pat.encode(), re.I if icase else 0)
    hits, misses = [], []
    for ln in out_lines:
        m = rx.search(ln)
        if m:
            hits.append(ln[max(0, m.start() - 80):m.end() + 80])
        elif len(misses) < 4 and len(ln) < 200:
            misses.append(ln)
    put_lines = misses[:2] + hits[:12] + misses[2:]
    pf_put(rid, [pat], icase, put_lines)
# the pattern rules together (one automaton over all their literals), over
# lines from every output
mixed = [p for _, p, ic in pf_rules if ic][:4]
pf_put("four", mixed, True, [ln[:300] for ln in out_lines[::7]])
# the generated mode (byte 0 bit 1 clear): random bytes, a start
rng = random.Random(18)
for i in range(4):
    put("fuzz_prefilter", "gen-%d" % i,
        bytes([rng.choice([0, 1, 4, 5, 13])]) +
        bytes(rng.randrange(256) for _ in range(rng.randrange(64, 512))))

jsonl = [
    '{"cmd":["echo","hi"]}\n',
    '{"shell":"sort words.txt | uniq -c > counts.txt","name":"count"}\n',
    '{"cmd":["make","-C","src"],"timeout":"2h","retries":5,"priority":3,"group":"make"}\n'
    '{"cmd":["true"],"batch":"nightly","unique":"k1","env":{"A":"1"},"cwd":"/tmp"}\n',
    '\n\n{"cmd":["sleep","1"],"after":[1,2]}\n{"cmd":["x"],"session":"s1"}\n',
    '{"agent":"claude","prompt":"review src/"}\n',
    '{"cmd":[]}\n',
    '{"cmd":"notalist"}\n',
    '{"nosuchfield":1,"cmd":["a"]}\n',
    '{"cmd":["a\\u0000b"]}\n',
    '{"cmd":["a"],"timeout":"5x"}\n',
    '[1,2,3]\n',
    '{"cmd":["a"]',
    '{"cmd":["caf\xe9"]}\n',
    '{"cmd":["a"],"priority":1e400}\n',
]
for i, j in enumerate(jsonl):
    put("fuzz_import", "%02d" % i, j.encode("latin-1"))


def logpair(name, log, idx, no_idx=False):
    """fuzz_logindex.c's input: flags, the log's length, log, index."""
    put("fuzz_logindex", name,
        bytes([1 if no_idx else 0]) + struct.pack("<I", len(log)) + log + (idx or b""))


# Hand-made logs in the record format (logstore.h), no index.
logpair("small", b"ohello\neerr\nOpart\nolast\n", b"", no_idx=True)
logpair("torn", b"oone\notw", b"", no_idx=True)
logpair("garbage", b"oa\nXbad line\n\x00\x01\neb\n", b"", no_idx=True)

# Real pairs from a real taskq: > TQ_LOG_INDEX_EVERY records, so the index
# has an entry.
if len(sys.argv) > 1:
    taskq = sys.argv[1]
    tmp = tempfile.mkdtemp()
    try:
        env = dict(os.environ, TASKQ_HOME=os.path.join(tmp, "h"), TASKQ_AUTOSTART="0")
        # empty lines: the smallest logs that have index entries (2 bytes
        # a record), so that the fuzzer can run them fast
        cmds = [
            ["sh", "-c", "yes '' | head -n 4200"],
            ["sh", "-c", "yes '' | head -n 2100; yes '' | head -n 2100 >&2; printf t"],
        ]
        for c in cmds:
            subprocess.run([taskq, "submit", "--"] + c, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        subprocess.run([taskq, "drain"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(1, len(cmds) + 1):
            logs = os.path.join(tmp, "h", "logs")
            with open(os.path.join(logs, "%d.log" % i), "rb") as f:
                log = f.read()
            with open(os.path.join(logs, "%d.idx" % i), "rb") as f:
                idx = f.read()
            logpair("real%d" % i, log, idx)
            logpair("real%d-torn" % i, log[:-3], idx)
    finally:
        shutil.rmtree(tmp)
