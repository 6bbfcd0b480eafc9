#!/usr/bin/env bash
# Issue 9's harness-validity baseline: runs the suites of correct and
# adversarial solutions (nodes/tasks/testdata/suites, plus variants
# generated from each task's reference) through the real solve node and
# prints false-accept / false-reject rates per class.
#
#   bash bench/harness_validity.sh            # the offline fixture (no network)
#   bash bench/harness_validity.sh --real     # also lo, zerolog, gonum (quickstart, network)
#
# LACUNA_VALIDITY_DIR keeps the quickstart's store between runs (default
# a directory under ${TMPDIR:-/tmp}); per-sample rows are written beside
# the report (bench/out/validity-*.tsv, or LACUNA_VALIDITY_OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
real=0
for a in "$@"; do
  case "$a" in
    --real) real=1 ;;
    *) echo "usage: $0 [--real]" >&2; exit 2 ;;
  esac
done
out=${LACUNA_VALIDITY_OUT:-$PWD/bench/out}
mkdir -p "$out"

run() { # mode
  local report rows
  report=$(mktemp)
  rows="$out/validity-$1.tsv"
  LACUNA_VALIDITY=$1 LACUNA_VALIDITY_REPORT=$report LACUNA_VALIDITY_ROWS=$rows \
    go test ./nodes/tasks -run '^TestHarnessValidityBaseline$' -count=1 -timeout 60m >/dev/null
  cat "$report"
  echo "per-sample rows: $rows"
  rm -f "$report"
}

echo "== fixture (example.com/shapes, offline)"
run fixture
if [ "$real" = 1 ]; then
  dir=${LACUNA_VALIDITY_DIR:-${TMPDIR:-/tmp}/lacuna-validity}
  mkdir -p "$dir"
  cp pipelines/quickstart.hcl "$dir/quickstart.hcl"
  echo
  echo "== real modules (quickstart: lo, zerolog, gonum; tasks kept by C1)"
  LACUNA_VALIDITY_DIR=$dir run real
fi
