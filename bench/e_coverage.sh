#!/usr/bin/env bash
# Issue 19, item 1: how many C1-kept tasks have an E that is not empty,
# per library, as generate renders E (novelapibench/cells.SelectExamples:
# the bundle's valid examples less the task's own source, at most
# max_examples within max_example_bytes). Reads a store the quickstart
# filled (make quickstart, or lacuna run pipelines/quickstart.hcl) and
# prints a Markdown table; with --tasks also every kept task whose E is
# empty.
#
#   bash bench/e_coverage.sh [--tasks] [--max N] [--bytes B] [STORE [PIPELINE]]
#
# STORE defaults to $LACUNA_STORE, else pipelines/.lacuna; PIPELINE to
# pipelines/quickstart.hcl (its libraries are read from the library blocks;
# the c1 and bundle nodes are node.c1.lib["LIB"] and node.bundle.lib["LIB"]).
# For the Python quickstart: PIPELINE=pipelines/examples/python_quickstart.hcl,
# whose nodes are named the same way; set LACUNA_PYTHON as the run did
# (/usr/bin/python3): the Python nodes' keys hold the interpreter, and
# without it cat finds them "not computed". LACUNA_BIN names a lacuna binary to
# read the store with (another revision's, for a store it computed);
# default: this tree's, built.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=()
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) flags+=(-tasks); shift ;;
    --max) flags+=(-max "$2"); shift 2 ;;
    --bytes) flags+=(-bytes "$2"); shift 2 ;;
    *) break ;;
  esac
done
store=${1:-${LACUNA_STORE:-pipelines/.lacuna}}
pipeline=${2:-pipelines/quickstart.hcl}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lacuna=${LACUNA_BIN:-$work/lacuna}
[ -n "${LACUNA_BIN:-}" ] || go build -o "$work/lacuna" ./cmd/lacuna
go build -o "$work/ecoverage" ./bench/ecoverage
args=()
for lib in $(sed -n 's/^library "\([^"]*\)".*/\1/p' "$pipeline"); do
  if "$lacuna" cat --store "$store" --format jsonl "$pipeline" "node.c1.lib[\"$lib\"]" > "$work/c1-$lib.jsonl" 2> "$work/err" &&
     "$lacuna" cat --store "$store" --format jsonl "$pipeline" "node.bundle.lib[\"$lib\"]" > "$work/bundle-$lib.jsonl" 2>> "$work/err"; then
    args+=("$lib" "$work/c1-$lib.jsonl" "$work/bundle-$lib.jsonl")
  else
    echo "$lib: no c1 or bundle rows in $store: $(head -c 300 "$work/err")" >&2
  fi
done
[ ${#args[@]} -gt 0 ] || { echo "no library's rows found in $store" >&2; exit 1; }
"$work/ecoverage" "${flags[@]}" "${args[@]}"
