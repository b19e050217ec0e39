#!/usr/bin/env python3
"""Turn agent-env.json into a C table of the built-in scrub list.

Usage: scrub_table.py agent-env.json out.h

src/agent/scrub.c includes out.h after defining struct tq_scrub_builtin
(id, names and their count, prefixes and their count, when). The file is
checked here with the rules scrub.c applies to a user's "scrub_env" (an id
of 1-63 bytes, unique; names, prefixes and "when" that are variable names;
no unknown key; at least one name or prefix; no "disabled": that is for a
user's entry), so a broken built-in list fails the build. Why a table and
not the JSON: every `taskq submit` scrubs its environment with this list,
and parsing the JSON (cJSON, then a copy of every string) was a fifth of a
submit's instructions (callgrind: 119,428 of 519,527).
"""
import json
import sys

ID_MAX = 63
NAME_MAX = 255  # NAME_MAX of <limits.h>, as scrub.c's valid_name
KEYS = {"id", "names", "prefixes", "when", "disabled"}


def fail(src, what):
    sys.exit(f"{src}: {what}")


def valid_name(s):
    return isinstance(s, str) and 0 < len(s.encode("utf-8")) <= NAME_MAX and \
        "=" not in s and "\0" not in s


def c_str(s):
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def names_of(src, eid, e, key):
    v = e.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(valid_name(x) for x in v):
        fail(src, f'scrub entry "{eid}": {key}: expected an array of variable names')
    return v


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scrub_table.py agent-env.json out.h")
    src, out = sys.argv[1], sys.argv[2]
    try:
        doc = json.load(open(src, encoding="utf-8"))
    except ValueError as e:
        fail(src, f"invalid JSON: {e}")
    entries = doc.get("scrub") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        fail(src, '"scrub" must be an array of entries, not empty')
    seen = set()
    rows = []
    arrays = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            fail(src, f"scrub entry {i}: expected an object")
        eid = e.get("id")
        if not isinstance(eid, str) or not 0 < len(eid.encode("utf-8")) <= ID_MAX:
            fail(src, f'scrub entry {i}: "id" must be a string of 1-{ID_MAX} bytes')
        for k in e:
            if not k.startswith("_") and k not in KEYS:
                fail(src, f'scrub entry "{eid}": unknown key "{k}"')
        if eid in seen:
            fail(src, f'scrub entry "{eid}": duplicate id')
        seen.add(eid)
        if "disabled" in e:
            fail(src, f'scrub entry "{eid}": "disabled" is for a user\'s scrub_env')
        names = names_of(src, eid, e, "names")
        prefixes = names_of(src, eid, e, "prefixes")
        if not names and not prefixes:
            fail(src, f'scrub entry "{eid}": no names and no prefixes')
        when = e.get("when")
        if when is not None and not valid_name(when):
            fail(src, f'scrub entry "{eid}": "when" must be a variable name')
        cols = []
        for kind, v in (("n", names), ("p", prefixes)):
            if v:
                sym = f"tq_agent_env_{kind}{i}"
                arrays.append(f"static const char *const {sym}[] = {{\n\t" +
                              ",\n\t".join(c_str(x) for x in v) + ",\n};\n")
                cols += [sym, str(len(v))]
            else:
                cols += ["NULL", "0"]
        rows.append(f"\t{{ {c_str(eid)}, {', '.join(cols)}, "
                    f"{c_str(when) if when is not None else 'NULL'} }},\n")
    name = src.replace("\\", "/").rsplit("/", 1)[-1]
    with open(out, "w") as f:
        f.write(f"/* Generated from {name} by tools/scrub_table.py; do not edit. */\n")
        f.write("#ifndef TQ_AGENT_ENV_TABLE_H\n#define TQ_AGENT_ENV_TABLE_H\n")
        f.writelines(arrays)
        f.write("static const struct tq_scrub_builtin tq_agent_env[] = {\n")
        f.writelines(rows)
        f.write("};\n#endif\n")


main()
