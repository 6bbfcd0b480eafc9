#!/usr/bin/env bash
# Throughput of harness runs (issue 4): the quickstart's tasks (observe the
# references) and solve with calibration = true (C1 + the audit: the
# reference and five calibration solutions per task) on the real modules.
# Stages 1-2 run first with a build cache of their own; stages 3-4 then run
# once with an empty Go build cache (cold: the standard library and the
# modules compile from scratch) and once, in another fresh store, with the
# build cache the cold run left (warm). Needs the module proxy.
#   bash bench/tasks.sh            → bench/out/tasks.md
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/lacuna ./cmd/lacuna
out=bench/out; mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
gocache="$work/gocache"; mkdir -p "$gocache" "$work/gocache-stage12"
run() { # $1 label
  local store="$work/store-$1"
  LACUNA_GOCACHE="$work/gocache-stage12" bin/lacuna run --store "$store" --target node.bundle.lib pipelines/quickstart.hcl > /dev/null
  LACUNA_GOCACHE="$gocache" bin/lacuna run --json --store "$store" pipelines/quickstart.hcl > "$work/$1.jsonl"
}
run cold
run warm
python3 - "$work" > "$out/tasks.md" <<'PY'
import json, sys, collections
work = sys.argv[1]
print("| cache | library | tasks | samples | observe s (tasks node) | C1+audit s (solve node) | s per task (C1+audit) | tasks per s |")
print("|---|---|---|---|---|---|---|---|")
for label in ("cold", "warm"):
    secs, rows = {}, {}
    for line in open(f"{work}/{label}.jsonl"):
        e = json.loads(line)
        if e.get("event") == "done":
            secs[e["node"]], rows[e["node"]] = e.get("seconds", 0), e.get("rows", 0)
    tot_t = tot_s = 0
    for lib in ("lo", "zerolog", "testify", "gonum"):
        t = rows.get(f'node.tasks.lib["{lib}"]', 0)
        obs = secs.get(f'node.tasks.lib["{lib}"]', 0)
        s = secs.get(f'node.solve.calibration["{lib}"]', 0)
        n = rows.get(f'node.solve.calibration["{lib}"]', 0)
        tot_t += t; tot_s += s
        per = f"{s/t:.3f}" if t else "-"
        tps = f"{t/s:.1f}" if s and t else "-"
        print(f"| {label} | {lib} | {t} | {n} | {obs:.2f} | {s:.2f} | {per} | {tps} |")
    print(f"| {label} | all | {tot_t} | | | {tot_s:.2f} | {tot_s/max(tot_t,1):.3f} | {tot_t/max(tot_s,1e-9):.1f} |")
PY
cat "$out/tasks.md"
