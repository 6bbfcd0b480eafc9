#!/usr/bin/env bash
# BM25 benchmark (issue 11, item 8): runners/bm25 against rank_bm25's
# BM25Okapi on the released ToolSense corpus (4,901 tools, 500 RRB queries),
# both over the same token lists: index build, queries/s for get_scores and
# for a top-50 ranking, index memory and each process's peak RSS, with the
# ratios from this one run. See bench/README.md.
#
#   bash bench/bm25.sh                        # REPS=5, .cache/venv's Python
#   PYTHON=/path/to/python REPS=3 bash bench/bm25.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
PYTHON=${PYTHON:-.cache/venv/bin/python}
DATA=${DATA:-../shared/data/toolsense/toolsense-realistic-retrieval.jsonl}
OUT=bench/out/bm25
mkdir -p "$OUT"

if ! "$PYTHON" -c 'import rank_bm25' 2>/dev/null; then
	echo "bm25.sh: $PYTHON has no rank_bm25: run 'make test-python' or set PYTHON" >&2
	exit 1
fi
go build -o "$OUT/bm25" ./bench/bm25
"$OUT/bm25" tokens "$DATA" "$OUT/tokens.json"

/usr/bin/time -f '%M' -o "$OUT/go.rss" "$OUT/bm25" time "$OUT/tokens.json" "$REPS" "$OUT/go.top.i64" >"$OUT/go.json"
/usr/bin/time -f '%M' -o "$OUT/py.rss" "$PYTHON" bench/bm25_rank.py "$OUT/tokens.json" "$REPS" "$OUT/py.top.i64" >"$OUT/py.json"

if cmp -s "$OUT/go.top.i64" "$OUT/py.top.i64"; then same=yes; else same=NO; fi

python3 - "$OUT" "$same" "$REPS" <<'PY' | tee "$OUT/results.md"
import json, sys
out, same, reps = sys.argv[1], sys.argv[2], sys.argv[3]
g = json.load(open(f"{out}/go.json")); p = json.load(open(f"{out}/py.json"))
g["rss"] = int(open(f"{out}/go.rss").read().split()[-1]) * 1024
p["rss"] = int(open(f"{out}/py.rss").read().split()[-1]) * 1024
print(f"{g['docs']} documents, {g['queries']} queries, median of {reps}; top-50 lists identical: {same}")
print()
print(f"| measure | {g['impl']} | {p['impl']} | lacuna advantage |")
print("|---|---:|---:|---:|")
rows = [
    ("index build (ms)", lambda r: r["build_s"] * 1e3, "{:.1f}", "py/go"),
    ("get_scores, queries/s", lambda r: r["scores_qps"], "{:,.0f}", "go/py"),
    ("top-50, queries/s", lambda r: r["top50_qps"], "{:,.0f}", "go/py"),
    ("index memory (MiB)", lambda r: r["index_bytes"] / 2**20, "{:.1f}", "py/go"),
    ("process peak RSS (MiB)", lambda r: r["rss"] / 2**20, "{:.0f}", "py/go"),
]
for name, f, fmt, how in rows:
    gv, pv = f(g), f(p)
    ratio = pv / gv if how == "py/go" else gv / pv
    print(f"| {name} | {fmt.format(gv)} | {fmt.format(pv)} | {ratio:.1f}× |")
PY
