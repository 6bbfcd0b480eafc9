#!/usr/bin/env bash
# Issue 12, item 6: lacuna's Python novel sets against an independent
# differ. Runs the surface_diff nodes of pipelines/examples/python_quickstart.hcl
# (a store of its own; cached after the first run), then
# bench/python_griffe_agreement.py with griffe (pinned, in the venv
# bench/out/griffevenv) on the same two environments of each library:
# griffe's static surfaces of both releases diffed by alias target against
# surface_diff's novel column. Prints both / only lacuna / only griffe and
# every disagreement. Needs PyPI (or PIP_INDEX_URL).
#
#   bash bench/python_griffe_agreement.sh [WORKDIR]   → bench/out/python_griffe_agreement.md
#
# WORKDIR (default /var/tmp/lacuna-pybench) must be reachable by uid
# 65534 when run as root (see bench/python_discovery.sh); LACUNA_PYTHON
# defaults to /usr/bin/python3. GRIFFE_VERSION (default 2.4.1) pins griffe.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 1 ] || { echo "usage: $0 [WORKDIR]" >&2; exit 2; }
work=${1:-/var/tmp/lacuna-pybench}
export LACUNA_PYTHON=${LACUNA_PYTHON:-/usr/bin/python3}
griffe=${GRIFFE_VERSION:-2.4.1}
pipe=pipelines/examples/python_quickstart.hcl
out=bench/out; mkdir -p "$out"
mkdir -p "$work"; chmod 755 "$work"
venv=$out/griffevenv
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('griffe') != '$griffe')" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "griffe==$griffe"
fi
go build -o "$work/lacuna" ./cmd/lacuna
store="$work/griffe"
"$work/lacuna" run --store "$store" --target node.surface_diff.lib "$pipe" > "$work/griffe-run.log"
libs=$(sed -n '/libraries = {/,/}/s/^ *\([a-z_]*\) *= library\..*/\1/p' "$pipe")
args=()
for lib in $libs; do
  "$work/lacuna" cat --store "$store" --format jsonl "$pipe" "node.surface_diff.lib[\"$lib\"]" > "$work/griffe-$lib.jsonl"
  args+=("$lib=$work/griffe-$lib.jsonl")
done
# griffe warns on stderr about annotations it cannot resolve (aliases to
# packages outside the distribution); those go to the log.
"$venv/bin/python" bench/python_griffe_agreement.py "$store" "${args[@]}" \
  > "$out/python_griffe_agreement.md" 2> "$work/griffe-warnings.log"
cat "$out/python_griffe_agreement.md"
