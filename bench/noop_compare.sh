#!/usr/bin/env bash
# Compares lacuna binaries on the no-op re-run of one sweep, interleaved
# (A B A B ...), so that a busy machine slows each about as much: wall
# seconds, user+sys CPU seconds (steadier than wall on shared cores) and
# peak RSS (KB per instance is what issue 24 bounds), median and minimum
# of each, and the load average before and after.
#
#   go build -o /tmp/old ./cmd/lacuna   # (at the commit to compare with)
#   go build -o /tmp/new ./cmd/lacuna
#   bash bench/noop_compare.sh DIR ROUNDS /tmp/old /tmp/new
#
# DIR holds a pipeline already run once (go run ./bench/gen -n 100000
# -style for_each -out DIR; lacuna run DIR/pipeline.hcl).
set -euo pipefail
dir=$1 rounds=$2
shift 2
tsv=$(mktemp)
trap 'rm -f "$tsv"' EXIT
uptime
for _ in $(seq "$rounds"); do
  for b in "$@"; do
    (cd "$dir" && /usr/bin/time -a -o "$tsv" -f "$b	%e	%U	%S	%M" "$b" run pipeline.hcl -j 2 >/dev/null)
  done
done
uptime
python3 - "$tsv" "$@" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("binary\truns\twall median (min) s\tuser+sys median (min) s\tpeak RSS median (max) KB")
for b in sys.argv[2:]:
    r = [x for x in rows if x[0] == b]
    wall = [float(x[1]) for x in r]
    cpu = [float(x[2]) + float(x[3]) for x in r]
    rss = [int(x[4]) for x in r]
    print(f"{b}\t{len(r)}\t{st.median(wall):.2f} ({min(wall):.2f})\t{st.median(cpu):.2f} ({min(cpu):.2f})\t{st.median(rss):.0f} ({max(rss)})")
PY
