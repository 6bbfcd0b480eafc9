#!/usr/bin/env bash
# The engine benchmark (issue: "Engine core", item 11; issue 8 §4). For N =
# 1,000, 10,000 and 100,000 sample nodes over one import with a fan-in
# concat, it measures lacuna's plan, full run, no-op re-run and re-run after
# editing one node, in two spellings of the same DAG (N node blocks; one
# block with for_each), and Snakemake on the same DAG shape (one wildcard
# rule) as the peer, in the same run, at N <= SNAKEMAKE_MAX_N (10,000: at
# 100,000 Snakemake's DAG build alone takes longer than the whole lacuna
# series). Results: bench/out/results.tsv and bench/out/results.md.
#
#   bash bench/run.sh                 # N = 1000 10000 100000
#   bash bench/run.sh 1000            # one size
#   SKIP_SNAKEMAKE=1 bash bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
OUT="$(pwd)/bench/out"
mkdir -p "$OUT"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
SNAKEMAKE_MAX_N=${SNAKEMAKE_MAX_N:-10000}

go build -o "$OUT/lacuna" ./cmd/lacuna
go build -o "$OUT/gen" ./bench/gen
LACUNA="$OUT/lacuna"
GEN="$OUT/gen"

if [ -z "${SKIP_SNAKEMAKE:-}" ] && ! command -v snakemake >/dev/null; then
  echo "installing snakemake (Debian package) for the peer measurements" >&2
  apt-get install -y -qq snakemake >/dev/null || { echo "cannot install snakemake; set SKIP_SNAKEMAKE=1" >&2; exit 1; }
fi
if [ -z "${SKIP_SNAKEMAKE:-}" ]; then snakemake --version > "$OUT/snakemake.version"; fi

# Old benchmark directories are moved aside and deleted only after the last
# measurement: on ext4 without a journal, creating a file scans every inode
# of its group freed in the last 30-60 s (fs/ext4/ialloc.c, recently_deleted),
# so deleting a 100,000-node store right before a full run made that run's
# kernel time 4-5x (98 s instead of 21 s of sys time at N = 100,000).
TRASH="$OUT/trash.$$"
mkdir -p "$TRASH"
trap 'rm -rf "$TRASH"' EXIT

TSV="$OUT/results.tsv"
printf "tool\tstyle\tn\tphase\tseconds\tpeak_rss_kb\n" > "$TSV"

# measure TOOL STYLE N PHASE CMD...: wall seconds and peak RSS of one command.
measure() {
  local tool=$1 style=$2 n=$3 phase=$4; shift 4
  local tf; tf=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$tf" "$@" >/dev/null 2>"$OUT/last.err" || { cat "$OUT/last.err" >&2; rm -f "$tf"; return 1; }
  read -r secs rss < "$tf"; rm -f "$tf"
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$tool" "$style" "$n" "$phase" "$secs" "$rss" >> "$TSV"
  printf "  %-10s %-9s n=%-6s %-12s %6ss  %6s MB\n" "$tool" "$style" "$n" "$phase" "$secs" "$((rss / 1024))" >&2
}

for n in "${sizes[@]}"; do
  for style in blocks for_each; do
    d="$OUT/dag-$n-$style"
    if [ -e "$d" ]; then mv "$d" "$TRASH/$(basename "$d")"; fi
    "$GEN" -n "$n" -style "$style" -out "$d"
    (
      cd "$d"
      measure lacuna "$style" "$n" plan "$LACUNA" plan pipeline.hcl
      measure lacuna "$style" "$n" full "$LACUNA" run pipeline.hcl -j 2
      for i in 1 2 3; do measure lacuna "$style" "$n" noop "$LACUNA" run pipeline.hcl -j 2; done
      measure lacuna "$style" "$n" plan_cached "$LACUNA" plan pipeline.hcl
      "$GEN" -edit -style "$style" -out .
      measure lacuna "$style" "$n" incremental "$LACUNA" run pipeline.hcl -j 2
    )
  done
  if [ -z "${SKIP_SNAKEMAKE:-}" ] && [ "$n" -le "$SNAKEMAKE_MAX_N" ]; then
    d="$OUT/dag-$n-blocks"
    (
      cd "$d"
      rm -rf out .snakemake
      measure snakemake rule "$n" plan snakemake --scheduler greedy -j2 -n -q
      measure snakemake rule "$n" full snakemake --scheduler greedy -j2 -q
      for i in 1 2 3; do measure snakemake rule "$n" noop snakemake --scheduler greedy -j2 -q; done
      rm -f out/s/0.jsonl   # Snakemake's edit of one node: its output is gone
      measure snakemake rule "$n" incremental snakemake --scheduler greedy -j2 -q
    )
  fi
done

# Median of repeated phases, then ratios against Snakemake.
python3 - "$TSV" > "$OUT/results.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
agg = {}
for r in rows:
    k = (r["tool"], r["style"], int(r["n"]), r["phase"])
    agg.setdefault(k, []).append((float(r["seconds"]), int(r["peak_rss_kb"])))
def get(tool, style, n, phase):
    v = agg.get((tool, style, n, phase))
    return (statistics.median(s for s, _ in v), max(m for _, m in v)) if v else None
print("| n | phase | lacuna blocks (s) | lacuna for_each (s) | snakemake (s) | snakemake / lacuna for_each | snakemake / lacuna blocks | peak RSS MB: blocks / for_each / snakemake |")
print("|---|---|---|---|---|---|---|---|")
for n in sorted({k[2] for k in agg}):
    for phase in ["plan", "full", "noop", "plan_cached", "incremental"]:
        b, f, s = get("lacuna", "blocks", n, phase), get("lacuna", "for_each", n, phase), get("snakemake", "rule", n, phase)
        if not (b or f):
            continue
        ratio = lambda x: f"{s[0] / x[0]:.1f}x" if s and x and x[0] > 0 else "-"
        rss = " / ".join(str(x[1] // 1024) if x else "-" for x in (b, f, s))
        print(f"| {n} | {phase} | {b[0] if b else '-'} | {f[0] if f else '-'} | {s[0] if s else '-'} | {ratio(f)} | {ratio(b)} | {rss} |")
# The scale targets (issue 8 §4): full-run time per node, and memory per
# instance on a no-op, for each size.
print()
print("| n | style | full run ms/node | no-op peak RSS KB/instance |")
print("|---|---|---|---|")
for n in sorted({k[2] for k in agg}):
    for style in ["blocks", "for_each"]:
        full, noop = get("lacuna", style, n, "full"), get("lacuna", style, n, "noop")
        if full and noop:
            print(f"| {n} | {style} | {1000 * full[0] / n:.3f} | {noop[1] / n:.2f} |")
PY
cat "$OUT/results.md"
