#!/usr/bin/env bash
# Issue 9, item 4: "running the pipeline twice from empty stores keeps the
# same tasks (>= 99.5% agreement)". Builds lacuna, runs
# pipelines/quickstart.hcl twice, each time in a fresh empty store, reads
# every c1 node's rows from both stores and prints, per library and
# overall: tasks, kept in run 1, kept in run 2, tasks whose keep differs
# and the agreement (same keep decision / tasks), then every differing task
# with both runs' reasons. A task id found in one run only counts as
# differing. Exits 1 below the threshold. Needs the module proxy.
#
#   bash bench/c1_agreement.sh [WORKDIR]
#
# WORKDIR (default: a new temporary directory, removed at the end) holds
# run1/ and run2/, each the pipeline and its store (.lacuna); a WORKDIR
# given is kept, and must not hold either already. LACUNA_GOCACHE (a Go
# build cache shared by both runs; default WORKDIR/gocache) keeps the
# second run's builds warm without sharing anything the store computes.
# C1_AGREEMENT_MIN sets the threshold in percent (default 99.5).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 1 ] || { echo "usage: $0 [WORKDIR]" >&2; exit 2; }
min=${C1_AGREEMENT_MIN:-99.5}
if [ $# -eq 1 ]; then
  work=$1
  for r in run1 run2; do
    if [ -e "$work/$r" ]; then
      echo "$work/$r exists: the runs need empty stores (give a new WORKDIR)" >&2
      exit 2
    fi
  done
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
export LACUNA_GOCACHE=${LACUNA_GOCACHE:-$work/gocache}
mkdir -p "$LACUNA_GOCACHE"
go build -o "$work/lacuna" ./cmd/lacuna

libs=$(sed -n 's/^library "\([^"]*\)".*/\1/p' pipelines/quickstart.hcl)
for r in run1 run2; do
  mkdir -p "$work/$r"
  cp pipelines/quickstart.hcl "$work/$r/quickstart.hcl"
  start=$(date +%s)
  # --keep-going: a library whose c1 fails is reported below, not fatal here.
  rc=0
  "$work/lacuna" run --keep-going --store "$work/$r/.lacuna" "$work/$r/quickstart.hcl" \
    > "$work/$r/run.log" 2>&1 || rc=$?
  echo "$r: lacuna run exit $rc in $(( $(date +%s) - start )) s (log: $work/$r/run.log)"
  for lib in $libs; do
    "$work/lacuna" cat --store "$work/$r/.lacuna" --format jsonl \
      "$work/$r/quickstart.hcl" "node.c1.lib[\"$lib\"]" > "$work/$r/c1-$lib.jsonl" 2> "$work/$r/c1-$lib.err" ||
      echo "$r: no c1 rows for $lib: $(head -c 300 "$work/$r/c1-$lib.err")"
  done
done

python3 - "$work" "$min" $libs <<'PY'
import json, os, sys
work, threshold, libs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]

def rows(run, lib):
    path = os.path.join(work, run, f"c1-{lib}.jsonl")
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    out[r["task_id"]] = r
    return out

print()
print("| library | tasks | kept (run 1) | kept (run 2) | keep differs | agreement |")
print("|---|---|---|---|---|---|")
total = [0, 0, 0, 0]
diffs = []
for lib in libs:
    a, b = rows("run1", lib), rows("run2", lib)
    ids = sorted(set(a) | set(b))
    k1 = sum(1 for i in ids if a.get(i, {}).get("keep"))
    k2 = sum(1 for i in ids if b.get(i, {}).get("keep"))
    d = [i for i in ids if i not in a or i not in b or a[i]["keep"] != b[i]["keep"]]
    diffs += [(lib, i, a.get(i), b.get(i)) for i in d]
    agree = f"{100 * (len(ids) - len(d)) / len(ids):.2f}%" if ids else "n/a"
    print(f"| {lib} | {len(ids)} | {k1} | {k2} | {len(d)} | {agree} |")
    for j, v in enumerate((len(ids), k1, k2, len(d))):
        total[j] += v
n, k1, k2, nd = total
pct = 100 * (n - nd) / n if n else 0.0
print(f"| all | {n} | {k1} | {k2} | {nd} | {pct:.2f}% |")

def say(r):
    if r is None:
        return "(no such task in this run)"
    return ("keep" if r["keep"] else "drop") + (": " + r["reason"] if r.get("reason") else "")

if diffs:
    print()
    print("Tasks whose keep differs:")
    for lib, i, a, b in diffs:
        print(f"- {lib} {i}")
        print(f"    run 1: {say(a)}")
        print(f"    run 2: {say(b)}")
print()
if n == 0:
    print("FAIL: no c1 rows were read")
    sys.exit(1)
if pct < threshold:
    print(f"FAIL: agreement {pct:.2f}% < {threshold}%")
    sys.exit(1)
print(f"ok: agreement {pct:.2f}% >= {threshold}%")
PY
