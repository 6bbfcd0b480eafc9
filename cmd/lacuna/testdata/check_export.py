"""Reads a lacuna export with real DuckDB and real pandas (pyarrow).

Used by TestExportReadsInDuckDBAndPandas:
    python check_export.py < expected.json
expected.json: {"dir": EXPORT_DIR,
                "views": {VIEW: ROWS, ...},
                "files": [{"file": REL, "rows": N,
                           "columns": {NAME: {"kind": K, "optional": B}}}]}
with K one of int32, int64, float32, float64, bool, string, json, bytes,
list, struct (derived by the test from each file's Parquet schema).
Prints one line per problem and exits 1 if there is any; otherwise prints
"checked N views, M files, C columns".
"""
import json
import os
import sys

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

want = json.load(sys.stdin)
os.chdir(want["dir"])
problems = []

# (a) DuckDB: views.sql creates the views; every view counts the rows
# lacuna reported, and every exported file reads on its own.
con = duckdb.connect(":memory:")
with open("views.sql", encoding="utf-8") as f:
    con.execute(f.read())
views = {r[0] for r in con.execute(
    "select view_name from duckdb_views() where not internal").fetchall()}
if views != set(want["views"]):
    problems.append(f"views.sql defines {sorted(views)}, want {sorted(want['views'])}")
for view, rows in want["views"].items():
    if view not in views:
        continue
    got = con.execute(f'select count(*) from "{view}"').fetchone()[0]
    if got != rows:
        problems.append(f"view {view}: {got} rows, lacuna reported {rows}")
for f in want["files"]:
    got = con.execute("select count(*) from read_parquet(?)", [f["file"]]).fetchone()[0]
    if got != f["rows"]:
        problems.append(f"duckdb {f['file']}: {got} rows, lacuna reported {f['rows']}")

# (b) pandas with pyarrow: every file reads with the dtypes its schema
# calls for. pandas turns integer columns holding nulls into float64 and
# boolean ones into object; strings are str (pandas 3) or object.
STRINGS = {"object", "str", "string"}


def want_dtypes(kind, has_nulls):
    if kind in ("int32", "int64"):
        return {"float64"} if has_nulls else {kind}
    if kind in ("float32", "float64"):
        return {kind}
    if kind == "bool":
        return {"object"} if has_nulls else {"bool"}
    if kind in ("string", "json"):
        return STRINGS
    return {"object"}  # bytes, list, struct


def value_ok(kind, v):
    if kind in ("string", "json"):
        if not isinstance(v, str):
            return False
        if kind == "json":
            json.loads(v)
        return True
    if kind == "bytes":
        return isinstance(v, bytes)
    if kind == "list":
        return isinstance(v, (np.ndarray, list))
    if kind == "struct":
        return isinstance(v, dict)
    return True


columns = 0
for f in want["files"]:
    df = pd.read_parquet(f["file"], engine="pyarrow")
    if len(df) != f["rows"]:
        problems.append(f"pandas {f['file']}: {len(df)} rows, lacuna reported {f['rows']}")
    if sorted(df.columns) != sorted(f["columns"]):
        problems.append(f"pandas {f['file']}: columns {sorted(df.columns)}, want {sorted(f['columns'])}")
        continue
    table = pq.read_table(f["file"])
    for name, col in f["columns"].items():
        columns += 1
        kind = col["kind"]
        nulls = table.column(name).null_count
        if nulls and not col["optional"]:
            problems.append(f"{f['file']} {name}: {nulls} nulls in a required column")
        dtype = str(df[name].dtype)
        ok = want_dtypes(kind, nulls > 0)
        if dtype not in ok:
            problems.append(f"pandas {f['file']} {name} ({kind}): dtype {dtype}, want one of {sorted(ok)}")
            continue
        for v in df[name]:
            if v is None or (not isinstance(v, (np.ndarray, list, dict)) and pd.isna(v)):
                continue
            try:
                good = value_ok(kind, v)
            except ValueError as e:
                good = False
                v = f"{v!r} ({e})"
            if not good:
                problems.append(f"pandas {f['file']} {name} ({kind}): value {v!r} of type {type(v).__name__}")
                break

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"checked {len(want['views'])} views, {len(want['files'])} files, {columns} columns")
