#!/usr/bin/env python3
"""bench/report.py - bench/run's table and results file.

Reads the rows bench/run collected (a TSV file, one row per line: key, label,
unit, per-round figures, baseline label, per-round baselines, target, note),
takes the medians, checks each target, compares each figure with the newest
earlier results file of the same mode that has it, writes the results as
JSON and prints one table. Everything else comes from BENCH_* environment
variables (see bench/run's report()).

Exit status: 1 if a benchmark failed, 3 with BENCH_CHECK=1 if a target is
missed, else 0.
"""
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time

env = os.environ


def floats(text):
    return [float(x) for x in text.split(",")] if text not in ("-", "", "na") else []


def parse_target(text):
    """'#8 <=1.25&abs<=8' -> ('8', [('ratio', '<=', 1.25), ('abs', '<=', 8.0)])."""
    if text in ("-", ""):
        return None, []
    issue = None
    if text.startswith("#"):
        issue, _, text = text[1:].partition(" ")
    conds = []
    for c in text.split("&"):
        kind = "ratio"
        if c.startswith("abs"):
            kind, c = "abs", c[3:]
        conds.append((kind, c[:2], float(c[2:])))
    return issue, conds


def unit_short(unit):
    # "ms/submit" -> "ms" for an absolute target's text
    return unit.split("/")[0]


def target_text(issue, conds, unit):
    parts = []
    for kind, op, val in conds:
        sym = "≤" if op == "<=" else "≥"
        v = f"{val:g}"
        parts.append(f"{sym} {v} ×" if kind == "ratio" else f"{sym} {v} {unit_short(unit)}")
    t = ", ".join(parts)
    return f"{t} (#{issue})" if issue and t else t or "-"


def num(v, unit):
    if v is None:
        return "-"
    if unit == "claims/s" or (unit == "tasks/s" and v >= 100):
        return f"{v:,.0f} {unit}"
    if unit == "tasks/s":
        return f"{v:.1f} {unit}"
    if unit == "s" and v >= 10:
        return f"{v:.1f} {unit}"
    if unit in ("s",):
        return f"{v:.3f} {unit}"
    return f"{v:.2f} {unit}"


rows = []
for line in open(env["BENCH_ROWS"], encoding="utf-8"):
    f = line.rstrip("\n").split("\t")
    key, label, unit, fig, blabel, base, target = f[:7]
    note = f[7] if len(f) > 7 else ""
    figs, bases = floats(fig), floats(base)
    med = statistics.median(figs) if figs else None
    bmed = statistics.median(bases) if bases else None
    ratio = med / bmed if med is not None and bmed else None
    issue, conds = parse_target(target)
    met = None
    if conds and med is not None:
        met = True
        for kind, op, val in conds:
            x = ratio if kind == "ratio" else med
            if x is None:
                met = None
                break
            ok = x <= val if op == "<=" else x >= val
            met = met and ok
    # An absolute target the baseline misses too says more about the
    # machine (its load) than about taskq: the table says so.
    base_meets = None
    if bmed is not None and any(k == "abs" for k, _, _ in conds):
        base_meets = all(bmed <= v if op == "<=" else bmed >= v
                         for k, op, v in conds if k == "abs")
    rows.append(dict(benchmark=key, label=label, unit=unit,
                     available=fig != "na", figure=med, runs=figs or None,
                     baseline_label=None if blabel == "-" else blabel,
                     baseline=bmed, baseline_runs=bases or None, ratio=ratio,
                     target=target_text(issue, conds, unit) if conds else None,
                     target_spec=None if target == "-" else target,
                     issue=int(issue) if issue else None, met=met,
                     baseline_meets_abs_target=base_meets,
                     note=note or None))


def cpu():
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                return l.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def mem_gib():
    for l in open("/proc/meminfo"):
        if l.startswith("MemTotal:"):
            return round(int(l.split()[1]) / 1048576, 1)


def osname():
    try:
        for l in open("/etc/os-release"):
            if l.startswith("PRETTY_NAME="):
                return l.split("=", 1)[1].strip().strip('"')
    except OSError:
        return platform.system()


def pkg(p):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True, text=True)
    return r.stdout or None


out = env["BENCH_OUT"]
mode = env["BENCH_MODE"]

# The previous figure of each benchmark: from the newest earlier results
# file of the same mode that has it (files before modes existed are "full").
previous = {}
older = []
for path in glob.glob(os.path.join(os.path.dirname(out), "*.json")):
    if os.path.abspath(path) == os.path.abspath(out):
        continue
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError):
        continue
    if d.get("mode", "full") == mode:
        older.append((d.get("date", ""), path, d))
older.sort(key=lambda t: t[0], reverse=True)
for date, path, d in older:
    for r in d.get("results", []):
        k = r.get("benchmark")
        if k and k not in previous and r.get("figure") is not None:
            previous[k] = dict(figure=r["figure"], file=os.path.basename(path), date=date,
                               load_before=d.get("load_before"))
for r in rows:
    p = previous.get(r["benchmark"])
    if p and r["figure"] is not None:
        p = dict(p, change=r["figure"] / p["figure"] - 1 if p["figure"] else None)
        r["previous"] = p
    else:
        r["previous"] = None

now = time.time()
meta = dict(
    date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
    host=env["BENCH_HOST"],
    mode=mode,
    machine=dict(cpu=cpu(), cores=os.cpu_count(), mem_gib=mem_gib(), os=osname(),
                 kernel=platform.release(), tmp_fs=env["BENCH_WORKFS"]),
    taskq=dict(commit=env["BENCH_COMMIT"], build="meson --buildtype=release"),
    versions=dict(sqlite=pkg("libsqlite3-0"), task_spooler=pkg("task-spooler"), nq=pkg("nq")),
    rounds=int(env["BENCH_ROUNDS"]),
    sizes=json.loads(env["BENCH_SIZES"]),
    floor_libs=env["BENCH_FLOOR_LIBS"].split(),
    floor_libs_match=env["BENCH_FLOOR_LIBS_MATCH"] == "true",
    seconds=round(now - float(env["BENCH_STARTED"])),
    load_before=float(env["BENCH_LOAD_BEFORE"]),
    load_after=round(os.getloadavg()[0], 2),
    benchmarks=env["BENCH_SELECTED"].split(),
    failed=env["BENCH_FAILED"].split(),
    results=rows,
)
with open(out + ".tmp", "w", encoding="utf-8") as f:
    json.dump(meta, f, indent=2)
    f.write("\n")
os.rename(out + ".tmp", out)

m = meta["machine"]
print(f"taskq {meta['taskq']['commit']} on {meta['host']}: {m['cpu']}, {m['cores']} cores, "
      f"{m['mem_gib']} GiB, {m['os']}, {meta['date']}; {mode} run, median of "
      f"{meta['rounds']} round{'s' if meta['rounds'] != 1 else ''}; load "
      f"{meta['load_before']:.2f} before, {meta['load_after']:.2f} after; "
      f"{meta['seconds'] // 60} min {meta['seconds'] % 60} s")
print()
head = ["benchmark", "figure", "baseline", "ratio", "target", "met?", "previous"]
table = [head]
for r in rows:
    base = f"{r['baseline_label']}: {num(r['baseline'], r['unit'])}" if r["baseline"] is not None else "-"
    if not r["available"]:
        fig, met = "n/a (not available)", "n/a"
    else:
        fig = num(r["figure"], r["unit"])
        met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
        if r["met"] is False and r["baseline_meets_abs_target"] is False:
            met = "NO*"
    prev = "-"
    if r["previous"]:
        p = r["previous"]
        v = num(p["figure"], r["unit"]).rsplit(" ", 1)[0]
        prev = f"{v} ({p['change']:+.0%})" if p.get("change") is not None else v
    table.append([r["label"], fig, base,
                  f"{r['ratio']:.2f}" if r["ratio"] is not None else "-",
                  r["target"] or "-", met, prev])
w = [max(len(row[i]) for row in table) for i in range(len(head))]
for i, row in enumerate(table):
    print("| " + " | ".join(c.ljust(w[j]) for j, c in enumerate(row)) + " |")
    if i == 0:
        print("|" + "|".join("-" * (x + 2) for x in w) + "|")
print()
for r in rows:
    if r["note"]:
        print(f"note: {r['label']}: {r['note']}")
if any(r["met"] is False and r["baseline_meets_abs_target"] is False for r in rows):
    print("NO*: the baseline misses that absolute target too (a loaded machine?); "
          "the ratio says how taskq compares")
files = sorted({(r["previous"]["file"], r["previous"]["load_before"]) for r in rows if r["previous"]})
if files:
    print("previous: from " + ", ".join(f"{f} (load {l} before)" for f, l in files)
          + f"; this run: load {meta['load_before']:.2f} before")
else:
    print(f"previous: no earlier {mode} results in {os.path.dirname(out)}")
if meta["failed"]:
    print("failed: " + " ".join(meta["failed"]))
targets = [r for r in rows if r["target_spec"]]
met = [r for r in targets if r["met"]]
missed = [r for r in targets if r["met"] is False]
na = [r for r in targets if r["met"] is None]
line = f"targets met: {len(met)}/{len(targets)}"
if missed:
    line += "; missed: " + ", ".join(r["benchmark"] for r in missed)
if na:
    line += "; not measured: " + ", ".join(r["benchmark"] for r in na)
print(line + f"; results in {out}")
if meta["failed"]:
    sys.exit(1)
if env["BENCH_CHECK"] == "1" and missed:
    sys.exit(3)
