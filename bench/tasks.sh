#!/usr/bin/env bash
# Throughput of harness runs (issues 4 and 9): the quickstart's tasks
# (observe the references) and solve with calibration = true (C1 + the
# audit: the reference twice and the calibration mutants of every task) on
# the real modules. Stages 1-2 run first with a build cache of their own;
# stages 3-4 then run in a fresh store with an empty Go build cache
# (cold: the standard library and the modules compile from scratch), and
# in another fresh store with the build cache the cold run left (warm).
# Needs the module proxy.
#
#   bash bench/tasks.sh                 → bench/out/tasks.md (this tree, cold and warm)
#   bash bench/tasks.sh --before REV    → also REV's lacuna, measured in the same run:
#                                         warm runs alternate (before, after) ROUNDS times
#                                         (default 2); the table gives each one and the ratio
#                                         of the medians
set -euo pipefail
cd "$(dirname "$0")/.."
before=""
rounds=${ROUNDS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before=$2; shift 2 ;;
    *) echo "usage: $0 [--before REV]" >&2; exit 2 ;;
  esac
done
out=bench/out; mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"; git worktree remove --force "$work/before-src" 2>/dev/null || true' EXIT
go build -o "$work/after" ./cmd/lacuna
if [ -n "$before" ]; then
  git worktree add -q --detach "$work/before-src" "$before"
  (cd "$work/before-src" && go build -o "$work/before" ./cmd/lacuna)
fi
mkdir -p "$work/gocache-stage12"
run() { # $1 binary, $2 label, $3 go build cache
  local store="$work/store-$2"
  mkdir -p "$3"
  LACUNA_GOCACHE="$work/gocache-stage12" "$work/$1" run --store "$store" --target node.bundle.lib pipelines/quickstart.hcl > /dev/null
  LACUNA_GOCACHE="$3" "$work/$1" run --json --store "$store" pipelines/quickstart.hcl > "$work/$2.jsonl"
  rm -rf "$store"
}
labels=()
run after cold "$work/gocache-after"
labels+=(cold)
if [ -n "$before" ]; then
  run before warmup-before "$work/gocache-before"
  for i in $(seq "$rounds"); do
    run before "before-$i" "$work/gocache-before"; labels+=("before-$i")
    run after "after-$i" "$work/gocache-after"; labels+=("after-$i")
  done
else
  run after warm "$work/gocache-after"; labels+=(warm)
fi
python3 - "$work" "${labels[@]}" > "$out/tasks.md" <<'PY'
import json, sys, statistics
work, labels = sys.argv[1], sys.argv[2:]
print("| run | library | tasks | samples | observe s (tasks node) | C1+audit s (solve node) | s per task (C1+audit) | tasks per s |")
print("|---|---|---|---|---|---|---|---|")
per = {}
for label in labels:
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
        print(f"| {label} | {lib} | {t} | {n} | {obs:.2f} | {s:.2f} | {s/t:.3f} | {t/s:.1f} |" if t and s else f"| {label} | {lib} | {t} | {n} | {obs:.2f} | {s:.2f} | - | - |")
    print(f"| {label} | all | {tot_t} | | | {tot_s:.2f} | {tot_s/max(tot_t,1):.3f} | {tot_t/max(tot_s,1e-9):.1f} |")
    per[label] = tot_s / max(tot_t, 1)
b = [v for k, v in per.items() if k.startswith("before-")]
a = [v for k, v in per.items() if k.startswith("after-")]
if b and a:
    mb, ma = statistics.median(b), statistics.median(a)
    print(f"\nwarm C1+audit, s per task: before {mb:.3f}, after {ma:.3f}: after/before = {ma/mb:.2f}x (medians of {len(b)} alternating runs each)")
PY
cat "$out/tasks.md"
