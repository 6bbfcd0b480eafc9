#!/usr/bin/env bash
# Issue 12 item 8: pyharness throughput (tasks/s) against one plain
# python process per task program in the same run. Each set is eight
# tasks with their reference in place: BenchmarkRunAll runs them through
# pyharness's Runner (a bubblewrap sandbox per sample, the driver with the
# target-API spy, the real and the mock pass, two samples at a time as
# the tasks and c1 nodes run them); BenchmarkPlainPython runs the same
# programs (prelude, reference, a loop printing solve(*input)) each with
# `python3 program.py`, two at a time: no sandbox, no spy, one pass.
#
#   bash bench/pyharness.sh          # the offline fixture, then more-itertools 11.2.1
#   bash bench/pyharness.sh --offline
#
# more-itertools' wheel is fetched with pip download (PyPI) and unpacked
# under /var/tmp (the sandbox keeps /tmp for itself).
set -euo pipefail
cd "$(dirname "$0")/.."
offline=0
for a in "$@"; do
  case "$a" in
    --offline) offline=1 ;;
    *) echo "usage: $0 [--offline]" >&2; exit 2 ;;
  esac
done
count=${LACUNA_BENCH_COUNT:-3}

bench() { # label
  local out
  out=$(go test ./novelapibench/pyharness -run '^$' -bench '^(BenchmarkRunAll|BenchmarkPlainPython)$' \
    -benchtime 5x -count "$count" -timeout 20m)
  echo "$out" | grep -E '^Benchmark'
  echo "$out" | awk -v label="$1" '
    /^BenchmarkRunAll/      { for (i = 1; i <= NF; i++) if ($(i+1) == "tasks/s") h[++nh] = $i }
    /^BenchmarkPlainPython/ { for (i = 1; i <= NF; i++) if ($(i+1) == "tasks/s") p[++np] = $i }
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((n + 1) / 2)]
    }
    END {
      mh = median(h, nh); mp = median(p, np)
      printf "%s: harness %.1f tasks/s, plain python %.1f tasks/s (medians of %d), plain/harness %.1fx\n", label, mh, mp, nh, mp / mh
    }'
}

echo "uptime before: $(uptime)"
echo "== fixture (fixpkg.scale, offline)"
bench fixture
if [ "$offline" = 0 ]; then
  dir=/var/tmp/lacuna-bench-more-itertools
  if [ ! -d "$dir/more_itertools" ]; then
    whl=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$whl" more-itertools==11.2.1
    mkdir -p "$dir"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl"/more_itertools-11.2.1-*.whl "$dir"
    rm -rf "$whl"
    chmod -R a+rX "$dir"
  fi
  echo "== more-itertools 11.2.1 (eight APIs)"
  LACUNA_BENCH_MORE_ITERTOOLS=$dir bench more-itertools
fi
echo "uptime after: $(uptime)"
