#!/usr/bin/env bash
# Issue 12, item 8: NovelAPIBench stages 1-2 for Python libraries from PyPI
# (version_resolve, surface_diff, bundle of pipelines/examples/python_quickstart.hcl),
# wall time per library, cold and warm. Needs PyPI (or PIP_INDEX_URL).
#
#   bash bench/python_discovery.sh [WORKDIR]     → bench/out/python_discovery.md
#
# - uv bootstrap, once: `lacuna plan` on a store whose version_resolve
#   nodes ran but which has no uv (planning pins the installer, which
#   bootstraps uv from PyPI into the store's cache/python) minus the same
#   plan again with uv there.
# - cold, per library: a fresh store holding only that bootstrapped uv (no
#   environments, no uv download cache), `lacuna run --target` the
#   library's bundle: the index is read, both releases' environments are
#   resolved, downloaded and installed, both surfaces listed and diffed,
#   the kept APIs' examples run.
# - warm, per library, on that store: `cached` is the same run again (all
#   cached); `recomputed` runs the library's three nodes again with
#   --recompute (the environments cached: the index is read again, the
#   locks resolved, the surfaces listed and diffed, the examples run);
#   `verify` is `lacuna verify` of its surface_diff (recomputed, nothing
#   committed, the digest compared with the cached one).
#
# WORKDIR (default /var/tmp/lacuna-pybench) holds the stores; as root the
# sandbox runs library code as uid 65534, so it must be reachable by
# others (not under /tmp or /root: the script makes it mode 755), and so
# must the interpreter: LACUNA_PYTHON defaults to /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 1 ] || { echo "usage: $0 [WORKDIR]" >&2; exit 2; }
work=${1:-/var/tmp/lacuna-pybench}
export LACUNA_PYTHON=${LACUNA_PYTHON:-/usr/bin/python3}
pipe=pipelines/examples/python_quickstart.hcl
out=bench/out; mkdir -p "$out"
mkdir -p "$work"; chmod 755 "$work"
rm -rf "$work"/boot "$work"/cold-* "$work"/times.tsv
go build -o "$work/lacuna" ./cmd/lacuna
lacuna="$work/lacuna"
libs=$(sed -n '/libraries = {/,/}/s/^ *\([a-z_]*\) *= library\..*/\1/p' "$pipe")
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

echo "load before: $(uptime)"
boot="$work/boot"
"$lacuna" run --store "$boot" --target node.version_resolve.lib "$pipe" > /dev/null
t0=$(now); "$lacuna" plan --store "$boot" "$pipe" > /dev/null; t1=$(now)
"$lacuna" plan --store "$boot" "$pipe" > /dev/null; t2=$(now)
uv=$(cd "$boot/cache/python" && ls -d uv-[0-9]*)
bootstrap=$(python3 -c "import sys; a,b,c=map(float,sys.argv[1:]); print(f'{(b-a)-(c-b):.2f}')" "$t0" "$t1" "$t2")
echo "uv bootstrap ($uv): $bootstrap s"

for lib in $libs; do
  store="$work/cold-$lib"
  mkdir -p "$store/cache/python"
  cp -a "$boot/cache/python/$uv" "$store/cache/python/"
  b="node.bundle.lib[\"$lib\"]" s="node.surface_diff.lib[\"$lib\"]" v="node.version_resolve.lib[\"$lib\"]"
  t0=$(now); "$lacuna" run --json --store "$store" --target "$b" "$pipe" > "$store/cold.jsonl"; t1=$(now)
  "$lacuna" run --store "$store" --target "$b" "$pipe" > /dev/null; t2=$(now)
  "$lacuna" run --json --store "$store" --target "$b" --recompute "$v" --recompute "$s" --recompute "$b" "$pipe" > "$store/recompute.jsonl"; t3=$(now)
  "$lacuna" verify --store "$store" "$pipe" "$s" > "$store/verify.txt" 2>&1 && same=yes || same=no; t4=$(now)
  "$lacuna" cat --store "$store" --format jsonl "$pipe" "$s" > "$store/surface.jsonl"
  "$lacuna" cat --store "$store" --format jsonl "$pipe" "$b" > "$store/bundle.jsonl"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$lib" "$store" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" \
    "$(secs "$t2" "$t3")" "$(secs "$t3" "$t4")" "$same" >> "$work/times.tsv"
  echo "$lib: cold $(secs "$t0" "$t1") s, cached $(secs "$t1" "$t2") s, recomputed $(secs "$t2" "$t3") s, verify $(secs "$t3" "$t4") s (same digest: $same)"
done
echo "load after: $(uptime)"

python3 - "$work/times.tsv" "$bootstrap" "$uv" "$(nproc)" "$(uptime | sed 's/.*load average: //')" > "$out/python_discovery.md" <<'PY'
import json, sys
tsv, bootstrap, uv, cores, load = sys.argv[1:]

def events(path):
    secs = {}
    for line in open(path):
        e = json.loads(line)
        if e.get("event") == "done":
            secs[e["type"]] = e["seconds"]
    return secs

print(f"{cores} cores, load average at the end {load}; uv bootstrap ({uv}) {bootstrap} s, measured once")
print()
print("| library | v_old → v_new | APIs | novel | kept | bundles | cold s | (resolve / surface_diff / bundle s) | warm s: cached | recomputed, envs cached | verify surface_diff (same digest) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(tsv):
    lib, store, cold, cached, recomputed, verify, same = line.rstrip("\n").split("\t")
    rows = [json.loads(l) for l in open(f"{store}/surface.jsonl") if l.strip()]
    apis = [r for r in rows if r["api_id"]]
    bundles = sum(1 for l in open(f"{store}/bundle.jsonl") if l.strip())
    vers = f"{apis[0]['v_old']} → {apis[0]['v_new']}" if apis else "; ".join(r["reasons"] for r in rows)
    ev = events(f"{store}/cold.jsonl")
    stages = " / ".join(f"{ev.get(t, 0):.2f}" for t in ("version_resolve", "surface_diff", "bundle"))
    print(f"| {lib} | {vers} | {len(apis)} | {sum(r['novel'] for r in apis)} | {sum(r['keep'] for r in apis)} | {bundles} "
          f"| {cold} | {stages} | {cached} | {recomputed} | {verify} ({same}) |")
PY
cat "$out/python_discovery.md"
