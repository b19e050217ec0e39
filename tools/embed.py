#!/usr/bin/env python3
"""Turn schema.sql into a C header: the SQL as a byte array and its version.

Usage: embed.py schema.sql out.h
The version is read from the file's `PRAGMA user_version = N;` line, so the
schema file is the one place it is written.
"""
import re
import sys

src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
m = re.search(rb"PRAGMA\s+user_version\s*=\s*(\d+)\s*;", data)
if not m:
    sys.exit(f"{src}: no 'PRAGMA user_version = N;' line")
version = int(m.group(1))
with open(out, "w") as f:
    f.write("/* Generated from schema.sql by tools/embed.py; do not edit. */\n")
    f.write("#ifndef TQ_SCHEMA_H\n#define TQ_SCHEMA_H\n")
    f.write(f"#define TQ_SCHEMA_VERSION {version}\n")
    f.write("static const char tq_schema_sql[] = {\n")
    for i in range(0, len(data), 16):
        f.write("  " + ", ".join(str(b) for b in data[i:i + 16]) + ",\n")
    f.write("  0\n};\n#endif\n")
