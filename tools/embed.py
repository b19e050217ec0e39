#!/usr/bin/env python3
"""Turn a source file into a C header holding its bytes as a char array.

Usage: embed.py schema.sql out.h
       embed.py INPUT out.h SYMBOL

Without SYMBOL (the schema): the array is tq_schema_sql, and
TQ_SCHEMA_VERSION is read from the file's `PRAGMA user_version = N;` line, so
the schema file is the one place it is written.

With SYMBOL (rules.json -> tq_rules_json): the array is SYMBOL, NUL-terminated,
so sizeof(SYMBOL) - 1 is the file's length. A file that is not valid UTF-8 or
holds a NUL byte is refused, and so is a .json file that is not valid JSON:
a broken built-in file fails the build, not the first worker that loads it.
A .json file is embedded compact and without its comments (keys starting
with "_"), which only its readers need: the program parses less.
"""
import json
import re
import sys


def byte(b):
    # bytes above 127 as character constants: a decimal 194 would overflow
    # a signed char (-Werror=overflow)
    return str(b) if b < 128 else "'\\x%02x'" % b


def write_array(f, name, data):
    f.write(f"static const char {name}[] = {{\n")
    for i in range(0, len(data), 16):
        f.write("  " + ", ".join(byte(b) for b in data[i:i + 16]) + ",\n")
    f.write("  0\n};\n")


def uncommented(v):
    """v without the members of its objects whose key starts with "_"."""
    if isinstance(v, dict):
        return {k: uncommented(x) for k, x in v.items() if not k.startswith("_")}
    if isinstance(v, list):
        return [uncommented(x) for x in v]
    return v


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: embed.py INPUT OUTPUT [SYMBOL]")
    src, out = sys.argv[1], sys.argv[2]
    symbol = sys.argv[3] if len(sys.argv) == 4 else None
    data = open(src, "rb").read()
    if symbol is None:
        m = re.search(rb"PRAGMA\s+user_version\s*=\s*(\d+)\s*;", data)
        if not m:
            sys.exit(f"{src}: no 'PRAGMA user_version = N;' line")
        with open(out, "w") as f:
            f.write("/* Generated from schema.sql by tools/embed.py; do not edit. */\n")
            f.write("#ifndef TQ_SCHEMA_H\n#define TQ_SCHEMA_H\n")
            f.write(f"#define TQ_SCHEMA_VERSION {int(m.group(1))}\n")
            write_array(f, "tq_schema_sql", data)
            f.write("#endif\n")
        return
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol):
        sys.exit(f"{symbol}: not a C identifier")
    if b"\0" in data:
        sys.exit(f"{src}: holds a NUL byte")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit(f"{src}: not valid UTF-8: {e}")
    if src.endswith(".json"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            sys.exit(f"{src}: invalid JSON: {e}")
        # What the program parses: the same JSON without its comments
        # ("_doc", "_found": keys starting with "_", which every loader
        # skips) and without the spaces between tokens: the program parses
        # less (agent-env.json's 4,677 bytes became 1,233, when every
        # submit parsed it: 206,014 instructions of its 621,102 with the
        # comments; it is a C table now, tools/scrub_table.py).
        data = json.dumps(uncommented(doc), ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")
    guard = "TQ_EMBED_" + symbol.upper() + "_H"
    name = src.replace("\\", "/").rsplit("/", 1)[-1]
    with open(out, "w") as f:
        f.write(f"/* Generated from {name} by tools/embed.py; do not edit. */\n")
        f.write(f"#ifndef {guard}\n#define {guard}\n")
        write_array(f, symbol, data)
        f.write("#endif\n")


main()
